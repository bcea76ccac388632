"""The README's Python example and every command of the README and docs/ run exactly as written
and print what they say they print."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from edge_agentd.skills.demo import SysfsTree
from scripts.testbed.processes import free_port

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"


def test_the_ten_line_example_prints_its_promised_output() -> None:
    text = README.read_text(encoding="utf-8")
    example = re.search(r"## The agent loop in ten lines\n\n```python\n(.*?)```", text, re.S)
    assert example is not None, "the README lost its agent-loop example"
    code = example.group(1)
    promised = re.search(r"# (answered .*)$", code, re.M)
    assert promised is not None
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == promised.group(1).strip()


def test_the_exit_codes_the_readme_gives_bad_options_are_the_real_ones() -> None:
    # serve's 65 is a bad option (`--log-level debug` is taken: lower case is fine), and
    # ha-discovery's 65 is a bad option or no --print.
    def code(*args: str) -> int:
        done = subprocess.run(
            [sys.executable, "-m", "edge_agentd.cli", *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        return done.returncode

    assert code("serve", "--log-level", "loud") == 65
    assert code("serve", "--no-such-option") == 65
    assert code("ha-discovery") == 65
    assert code("ha-discovery", "--print") == 0
    text = README.read_text(encoding="utf-8")
    assert "ha-discovery --print` exits 0, 65 on a bad option\nor without `--print`" in text


def test_the_licence_file_is_the_one_pyproject_names() -> None:
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "Apache-2.0"
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert " ".join(text.split()[:4]) == "Apache License Version 2.0,"
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert "(`LICENSE`)" in README.read_text(encoding="utf-8")


def test_every_figure_has_its_benchmark_date_and_machine() -> None:
    """docs/performance.md is one table, a row per figure, each with the command that measures
    it (a benchmark that exists), a date and a machine; every benchmark has a row; and neither it
    nor the README's summary tells history (the repository's log does)."""
    text = (REPO / "docs" / "performance.md").read_text(encoding="utf-8")
    header = "| Figure | edge-agent | The alternative, same run | Ratio | Budget | Command | Date | Machine |"
    assert text.count(header) == 1
    rows = text.split(header, 1)[1].split("\n\n", 1)[0].strip().splitlines()[1:]
    assert len(rows) >= 10
    used = set()
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert len(cells) == 8, row
        command = re.fullmatch(r"`python -m scripts\.bench\.(bench_\w+)( [^`]*)?`", cells[5])
        assert command is not None, row
        assert (REPO / "scripts" / "bench" / f"{command.group(1)}.py").is_file(), row
        used.add(command.group(1))
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", cells[6]) and cells[7], row
    benchmarks = {p.stem for p in (REPO / "scripts" / "bench").glob("bench_*.py")}
    assert used == benchmarks
    readme = README.read_text(encoding="utf-8")
    summary = readme.split("\n## How it performs\n", 1)[1].split("\n## ", 1)[0]
    assert "(docs/performance.md)" in summary
    first_table = summary[summary.index("\n| ") :].split("\n\n", 1)[0]
    assert len([line for line in first_table.splitlines() if line.startswith("| ")]) == 1 + 5
    history = r"this round|rounds? ago|\bIssue \d+|before this|earlier this day|\bused to\b"
    assert not re.findall(history, text + readme, re.I)


def test_the_readme_lists_every_exit_code_and_where_the_client_is() -> None:
    from edge_agentd.cli import exits as cli

    text = README.read_text(encoding="utf-8")
    section = re.search(r"\n## Exit codes\n(.*?)\n## ", text, re.S)
    assert section is not None, "the README lost its exit-code section"
    serve, client = section.group(1).split("(the client)")
    listed = {int(code) for code in re.findall(r"^\| (\d+) \|", client, re.M)}
    constants = {
        value
        for name, value in vars(cli).items()
        if name.startswith("EXIT_") and name != "EXIT_CONFIG"
    }
    assert listed == constants
    # A script that fetches a run by id must know what a wrong id exits with: every error code
    # that means no answer (1) is named in that row.
    (no_answer,) = re.findall(r"^\| 1 \|(.*)$", client, re.M)
    for code, exit_code in cli.CODE_EXITS.items():
        if exit_code == cli.EXIT_NO_ANSWER:
            assert f"`{code}`" in no_answer, code
    assert {int(code) for code in re.findall(r"^\| (\d+) \|", serve, re.M)} == {0, 1, 65, 69, 78}
    # `edge-agent status` right after `make run` needs .venv/bin on PATH; the README says how.
    assert 'export PATH="$PWD/.venv/bin:$PATH"' in text


def test_the_readme_names_one_tested_route_per_home_assistant_install() -> None:
    # Home Assistant OS has no shell for our client: its owner must be sent to MQTT, not to a
    # same-Pi YAML that only a comment in it says needs Core. Each kind of install has one row
    # naming its route's YAML and the test that runs that YAML against a daemon.
    text = README.read_text(encoding="utf-8")
    section = text[text.index("\n## Home Assistant\n") :].split("\n## ", 2)[1]
    rows = [line for line in section.splitlines() if line.startswith("| **Home Assistant ")]
    kinds = [re.match(r"\| \*\*Home Assistant (\w+)\*\*", row).group(1) for row in rows]  # type: ignore[union-attr]
    assert kinds == ["OS", "Container", "Core"]
    for row in rows:
        yaml, test = re.findall(r"`([\w./-]+\.(?:yaml|py))`", row)[-2:]
        assert (REPO / "scripts" / "examples" / yaml).is_file(), row
        assert yaml in (REPO / test).read_text(encoding="utf-8"), row
    routes = dict(zip(kinds, rows, strict=True))
    assert "home-assistant-mqtt.yaml" in routes["OS"] and "home-assistant.yaml" in routes["Core"]


# -- every command of the README and docs/, run as written ---------------------------------------
#
# Each ```console block's `$ ` lines and each ```sh block's commands are run by bash in this
# checkout, from a fresh PATH (/usr/bin:/bin), after the README's own `export PATH=...` line, as a
# newcomer types them in a second terminal. A daemon is started for them where they need one (a
# `mock:` model, a fake sysfs, a real Mosquitto). A command the README shows output for must print
# that output: the same text where the mock makes it certain, the same labels, JSON keys or
# columns where it shows a real model's or a machine's figures. A command that cannot run here is
# in NOT_RUN (or starts as NOT_RUN_PREFIXES says) with the reason; a command in neither place
# fails test_every_command_is_run_or_excused.

DOCS = [README, *sorted((README.parent / "docs").glob("*.md"))]
BARE_PATH = "/usr/bin:/bin"

NOT_RUN = {
    "make test": "it is this test suite (ruff, mypy and pytest); CI and the lead run it",
    "sudo install -m 0644 ~/gemma-4-E2B-it-Q4_K_M.gguf /opt/edge-agent/models/": (
        "root, and the Gemma 4 E2B file (3 GB) is not here"
    ),
    "sudo scripts/deploy/install.sh --model /opt/edge-agent/models/gemma-4-E2B-it-Q4_K_M.gguf"
    ' --add-user "$(id -un)"': (
        "root, a booted systemd and the Gemma 4 E2B file; tests/package/test_install.py runs the"
        " installer's --dry-run and tests/package/test_systemd_unit.py the unit under a real systemd"
    ),
    "systemctl status edge-agent": "needs the installed service under a booted systemd",
    "journalctl -u edge-agent -f": "needs the installed service's journal, and never ends",
    "journalctl -p err -u edge-agent": (
        "needs the installed service's journal; tests/cli/test_logs.py checks the <N> priorities"
        " journald reads"
    ),
    "sha256sum gemma-4-E2B-it-Q4_K_M.gguf": "the Gemma 4 E2B file (3 GB) is not here",
    "sudo /opt/edge-agent/venv/bin/pip install 'paho-mqtt>=2.1'": (
        "root, the installed service's venv and the network"
    ),
}


class Block:
    """A ```console or ```sh block: its commands, and for a console block the output shown."""

    def __init__(self, doc: Path, line: int, lang: str, text: str) -> None:
        self.doc, self.line, self.lang = doc, line, lang
        self.commands: list[str] = []
        self.outputs: list[list[str]] = []
        # A line ending in a backslash goes on in the next one, as in the shell.
        lines = re.sub(r"\\\n\s*", "", textwrap.dedent(text)).splitlines()
        if lang == "console":
            for entry in lines:
                if entry.startswith("$ "):
                    self.commands.append(entry[2:])
                    self.outputs.append([])
                elif self.outputs:
                    self.outputs[-1].append(entry)
        elif any(re.match(r"(if|for|while|case)\b|\s", entry) for entry in lines):
            self.commands = ["\n".join(lines)]  # a script, not a list of commands
        else:
            self.commands = [e for e in lines if e.strip() and not e.lstrip().startswith("#")]

    @property
    def name(self) -> str:
        return f"{self.doc.name}:{self.line}"


def blocks() -> list[Block]:
    found = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for match in re.finditer(r"^([ \t]*)```(console|sh)\n(.*?)^\1```$", text, re.S | re.M):
            line = text.count("\n", 0, match.start()) + 1
            found.append(Block(doc, line, match.group(2), match.group(3)))
    return found


def _bare(command: str) -> str:
    """The command without its trailing comment, as NOT_RUN names it."""
    quote = ""
    for n, char in enumerate(command):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and n and command[n - 1].isspace():
            return command[:n].strip()
    return command.strip()


# Whatever starts so is not run either.
NOT_RUN_PREFIXES = {
    "sudo ": "runs as root and changes the machine (packages, users, units, /opt, /etc)",
    "sudoedit ": "edits a system file as root, in an editor",
}


def excused(command: str) -> bool:
    """In NOT_RUN: by the command, or where the same command runs elsewhere, with its comment;
    or by its start, in NOT_RUN_PREFIXES."""
    return (
        _bare(command) in NOT_RUN
        or " ".join(command.split()) in NOT_RUN
        or command.startswith(tuple(NOT_RUN_PREFIXES))
    )


def block_with(first: str, doc: str = "") -> Block:
    """The one block whose first command starts with ``first`` (in the doc named ``doc``)."""
    candidates = [b for b in blocks() if b.doc.name.startswith(doc)]
    matching = [b for b in candidates if _bare(b.commands[0]) == first] or [
        b for b in candidates if _bare(b.commands[0]).startswith(first)
    ]
    assert len(matching) == 1, f"no single block starts with {first!r}: {matching}"
    return matching[0]


def prelude() -> str:
    """The README's own line that puts the client on PATH."""
    line = block_with("export PATH=").commands[0]
    assert _bare(line) == 'export PATH="$PWD/.venv/bin:$PATH"'
    return line


class Shell:
    """Runs commands in one bash session in this checkout, each one's output kept apart."""

    def __init__(self, tmp_path: Path, env: dict[str, str] | None = None) -> None:
        self.dir = tmp_path / "shell"
        self.dir.mkdir()
        self.env = {"HOME": os.environ.get("HOME", str(tmp_path)), "PATH": BARE_PATH}
        self.env.update({"LANG": "C.UTF-8", "XDG_RUNTIME_DIR": str(tmp_path / "xdg")})
        self.env["XDG_STATE_HOME"] = str(tmp_path / "state")  # the daemons' run journal
        self.env.update(env or {})
        Path(self.env["XDG_RUNTIME_DIR"]).mkdir(exist_ok=True, mode=0o700)
        self.background: list[int] = []

    def run(self, commands: list[str], timeout: float = 120) -> list[tuple[int, str, str]]:
        """Each command's exit code, stdout and stderr; a command ending in `&` is left running
        (and stopped by close())."""
        d = self.dir
        script = ["set +e", f"cd {shlex.quote(str(REPO))}", prelude()]
        for n, command in enumerate(commands):
            bare = _bare(command)
            if bare.endswith("&"):
                # A simple command, so that $! is the daemon itself, not a subshell around it.
                script += [
                    f"{bare[:-1]} >{d}/out{n} 2>&1 &",
                    f"echo $! >{d}/pid{n}; echo 0 >{d}/rc{n}",
                ]
            else:
                script += ["{", command, f"}} >{d}/out{n} 2>{d}/err{n}", f"echo $? >{d}/rc{n}"]
        subprocess.run(
            ["bash", "-c", "\n".join(script)], env=self.env, timeout=timeout, check=False
        )
        results = []
        for n in range(len(commands)):
            if (d / f"pid{n}").exists():
                self.background.append(int((d / f"pid{n}").read_text()))
            err = d / f"err{n}"
            results.append(
                (
                    int((d / f"rc{n}").read_text()),
                    (d / f"out{n}").read_text(encoding="utf-8"),
                    err.read_text(encoding="utf-8") if err.exists() else "",
                )
            )
        return results

    def close(self) -> None:
        for pid in self.background:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        for pid in self.background:
            with contextlib.suppress(ChildProcessError, ProcessLookupError):
                until = time.monotonic() + 30
                while time.monotonic() < until:
                    os.kill(pid, 0)  # raises once the daemon is gone
                    time.sleep(0.05)
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def shell(tmp_path: Path) -> Iterator[Callable[..., Shell]]:
    opened: list[Shell] = []

    def open_shell(env: dict[str, str] | None = None) -> Shell:
        opened.append(Shell(tmp_path, env))
        return opened[-1]

    yield open_shell
    for session in opened:
        session.close()


def keys(value: Any) -> set[str]:
    """Every key of every map in ``value``."""
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in keys(v)}
    return set()


def shows(expected: list[str], printed: str, columns: int = 0) -> None:
    """``printed`` is what the doc shows: the same text, except where a real model or machine
    shows its own figures: a JSON line (the doc shortens them with `...`) has every key the doc
    shows, and the same values where the doc's line is whole JSON (but the model's usage and the
    timing); a `label:  value` line has the same label; with ``columns``, a table line has the
    same first ``columns`` columns (a node's name and status, but not its model)."""
    lines = printed.splitlines()
    assert len(lines) == len(expected), (expected, printed)
    for want, got in zip(expected, lines, strict=True):
        if want.startswith("{"):
            actual = json.loads(got)
            # A mock model reports no usage; the doc's usage figures are a real model's.
            shown = re.sub(r'"usage": \{[^}]*\}', '"usage": null', want)
            assert set(re.findall(r'"(\w+)":', shown)) <= keys(actual), (want, got)
            with contextlib.suppress(json.JSONDecodeError):
                whole = json.loads(want)
                for key in set(whole) - {"usage", "timing", "id"}:
                    assert actual[key] == whole[key], (key, want, got)
        elif columns and re.search(r"\S {2,}\S", want):
            assert got.split()[:columns] == want.split()[:columns], (want, got)
        elif re.match(r"[a-z]+:\s", want):
            assert got.split(":")[0] == want.split(":")[0], (want, got)
        else:
            assert got == want


def run_block(
    session: Shell,
    block: Block,
    columns: int = 0,
    printed: dict[str, str] | None = None,
    **replace: str,
) -> None:
    """Run the block's commands (but those in NOT_RUN) with ``replace``'s substitutions; each must
    exit 0 and print what the doc shows, with ``printed``'s substitutions in what it shows (a
    path the doc's machine has where the test's tree stands)."""
    shown = block.outputs or [[] for _ in block.commands]
    for old, new in (printed or {}).items():
        shown = [[line.replace(old, new) for line in lines] for lines in shown]
    todo = [(c, out) for c, out in zip(block.commands, shown, strict=True) if not excused(c)]
    commands = [c for c, _ in todo]
    for old, new in replace.items():
        commands = [c.replace(old, new) for c in commands]
    results = session.run(commands)
    for command, (_, expected), (code, out, err) in zip(commands, todo, results, strict=True):
        assert code == 0, f"{block.name}: `{command}` exited {code}: {err}"
        if expected:
            shows(expected, out, columns)


def test_every_command_is_run_or_excused() -> None:
    found = blocks()
    assert len(found) >= 10, "the docs lost their command blocks, or this parser broke"
    commands = {form for b in found for c in b.commands for form in (_bare(c), " ".join(c.split()))}
    stale = set(NOT_RUN) - commands
    assert not stale, f"NOT_RUN names commands no doc has any more: {stale}"
    run = set()
    for block in found:
        key = (block.doc.name, _bare(block.commands[0]))
        skipped = all(excused(c) for c in block.commands)
        assert (key in RUNNERS) != skipped, f"{block.name}: {key} must be run or excused, not both"
        run.add(key)
    assert set(RUNNERS) <= run, f"RUNNERS names blocks no doc has any more: {set(RUNNERS) - run}"
    for test in RUNNERS.values():
        assert callable(globals().get(test)), test


def test_the_path_line_puts_this_checkouts_client_first(shell: Callable[..., Shell]) -> None:
    session = shell()
    before, after = session.run(["command -v edge-agent", "command -v edge-agent"])
    assert after == (0, f"{REPO}/.venv/bin/edge-agent\n", "")
    # Without the line (the session runs it first, so take it out here) the client is not found.
    bare = subprocess.run(
        ["bash", "-c", "command -v edge-agent"],
        env={"PATH": BARE_PATH},
        capture_output=True,
        text=True,
        check=False,
    )
    assert bare.returncode != 0 and before == after


def test_mock_daemon_block(shell: Callable[..., Shell], tmp_path: Path) -> None:
    # As written, but in this test's own directory instead of /tmp and on a free port instead of
    # 5599, so that it runs beside anything else; the `&` daemon is stopped at the end.
    block = block_with("echo '[")
    port = str(free_port())
    run_block(shell(), block, **{"/tmp/": f"{tmp_path}/", "5599": port})


def test_the_journal_block(shell: Callable[..., Shell], tmp_path: Path) -> None:
    # As written, with the mock of the block before it, in this test's own directory and on a
    # free port; two keyed asks and one plain one are two runs in the journal, not three.
    block = block_with(
        "edge-agent serve --model mock:/tmp/mock.json --endpoint tcp://127.0.0.1:5598"
    )
    # The block before it writes this script (an answer with no result can only decline).
    said = "I cannot tell: no skill reads the room."
    (tmp_path / "mock.json").write_text(json.dumps([json.dumps({"final_answer": said})]))
    port = str(free_port())
    session = shell()
    run_block(session, block, **{"/tmp/": f"{tmp_path}/", "5598": port})
    ((code, listed, _),) = session.run(
        [f"edge-agent runs --json --endpoint tcp://127.0.0.1:{port}"]
    )
    assert code == 0 and len(json.loads(listed)) == 2


def test_the_services_status_line(
    shell: Callable[..., Shell], tmp_path: Path, daemon_process: Callable[..., Any]
) -> None:
    # The service's socket needs root and the installed service: a daemon on a socket in this
    # test's directory stands in for it, named by EDGE_AGENT_ENDPOINT. That the client finds
    # /run/edge-agent/agent.sock by itself is tests/service/test_server_process.py::
    # test_a_client_finds_its_own_daemon_else_the_service.
    block = block_with("systemctl status edge-agent")
    mock = tmp_path / "mock.json"
    mock.write_text(json.dumps([json.dumps({"final_answer": "I cannot tell."})]), encoding="utf-8")
    endpoint = f"ipc://{tmp_path}/run-edge-agent/agent.sock"
    with daemon_process(["--model", f"mock:{mock}"], endpoint):
        run_block(shell({"EDGE_AGENT_ENDPOINT": endpoint}), block)


def test_the_protocols_shell_client(
    shell: Callable[..., Shell], tmp_path: Path, daemon_process: Callable[..., Any]
) -> None:
    block = block_with("if reply=$(edge-agent ask")
    mock = tmp_path / "mock.json"
    said = "I cannot tell: no skill reads the garage door."  # no result: the only answer
    mock.write_text(json.dumps([json.dumps({"final_answer": said})]), encoding="utf-8")
    endpoint = f"ipc://{tmp_path}/agent.sock"
    with daemon_process(["--model", f"mock:{mock}"], endpoint):
        session = shell({"EDGE_AGENT_ENDPOINT": endpoint})
        [(code, out, err)] = session.run(block.commands)
    assert (code, out) == (0, f"{said}\n"), err
    # And each branch of its `case` is an exit code the client really has.
    from edge_agentd.cli import exits as cli

    branches = {int(n) for n in re.findall(r"^\s+(\d+)\)", block.commands[0], re.M)}
    assert branches <= {v for k, v in vars(cli).items() if k.startswith("EXIT_")}


def test_the_protocols_python_client(tmp_path: Path, daemon_process: Callable[..., Any]) -> None:
    """docs/protocol.md's pyzmq + msgpack sketch, run as written against a daemon: only the
    socket path changes. It streams the run's events, then prints the outcome and answer."""
    text = (REPO / "docs" / "protocol.md").read_text(encoding="utf-8")
    found = re.search(r"### Python \(pyzmq \+ msgpack.*?\n```python\n(.*?)```", text, re.S)
    assert found is not None, "the protocol page lost its Python client"
    code = found.group(1)
    assert code.count("ipc:///run/edge-agent/agent.sock") == 1
    mock = tmp_path / "mock.json"
    # The clock says nothing of how warm it is: the script's answer cannot tell (grounding).
    replies = [{"skill_name": "now", "arguments": {}}, {"final_answer": "I cannot tell how warm."}]
    mock.write_text(json.dumps([json.dumps(reply) for reply in replies]), encoding="utf-8")
    endpoint = f"ipc://{tmp_path}/agent.sock"
    with daemon_process(["--model", f"mock:{mock}"], endpoint):
        done = subprocess.run(
            [sys.executable, "-c", code.replace("ipc:///run/edge-agent/agent.sock", endpoint)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "answered I cannot tell how warm."
    assert lines[0] == "event: CallSkillAction"
    assert "event: FinalAnswerAction" in lines


@contextlib.contextmanager
def served_by_make(session: Shell, command: str) -> Iterator[subprocess.Popen[str]]:
    """``make run`` or ``make demo`` for real (the embedded Gemma 3 270M, in the foreground), in
    ``session``'s environment, until it is ready; stopped with Ctrl-C (SIGINT to its process
    group) on exit, its output kept in the process's ``output`` attribute."""
    # `make run` would first reinstall the venv if pyproject.toml changed since: `make test` does.
    target = _bare(command).rsplit(maxsplit=1)[-1]
    plan = subprocess.run(
        ["make", "-n", target], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert "pip install" not in plan.stdout, "the venv is older than pyproject.toml: make test"
    make = subprocess.Popen(
        ["bash", "-c", f"cd {shlex.quote(str(REPO))} && {command}"],
        env=session.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        ready = False
        until = time.monotonic() + 240
        while not ready and make.poll() is None and time.monotonic() < until:
            [(code, out, _)] = session.run(["edge-agent status --json --timeout 2"])
            ready = code == 0 and json.loads(out)["state"] == "ready"
            time.sleep(0.5)
        if not ready:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(make.pid, signal.SIGINT)
            output, _ = make.communicate(timeout=60)
            pytest.fail(f"`{command}` did not become ready:\n{output}")
        yield make
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(make.pid, signal.SIGINT)
        output, _ = make.communicate(timeout=60)
        make.output = output  # type: ignore[attr-defined]


def test_make_run_serves_where_the_client_looks(
    shell: Callable[..., Shell], tmp_path: Path
) -> None:
    # `make run` for real, on a machine where it finds no sensors (an empty sysfs tree stands in
    # for a VM's), asked the README's first questions in a second terminal: the real model's
    # answers, as the README shows them.
    block = block_with("make run")
    assert [_bare(c) for c in block.commands] == ["make run"]
    first = block_with('edge-agent ask "How hot is the CPU?"')
    assert first.doc == README and first.lang == "console"
    # A short path: the skill's reason names it, and a reason is said only while it is short.
    empty = Path(tempfile.mkdtemp(prefix="ea-sys-"))
    try:
        session = shell({"EDGE_AGENT_SYSFS_ROOT": str(empty)})
        with served_by_make(session, block.commands[0]) as make:
            [(code, out, err)] = session.run(["edge-agent status"])
            assert code == 0, err
            assert "state:     ready" in out and "model:     Gemma 3 270m" in out, out
            # The doc's machine looks in /sys; this one in its empty tree, which the skill names.
            # The run's default 60 s deadline is the product's, not a bound of this test: beside
            # another model process on two cores, the first run has gone past it.
            slow = {"edge-agent ask": "edge-agent ask --timeout 600"}
            run_block(session, first, printed={" /sys/": f" {empty}/"}, **slow)
    finally:
        shutil.rmtree(empty, ignore_errors=True)
    assert "edge-agent stopped" in make.output  # type: ignore[attr-defined]


def test_make_demo_answers_from_the_demo_device(
    shell: Callable[..., Shell], tmp_path: Path
) -> None:
    # `make demo` for real, asked the README's demo questions: the simulated Pi's readings.
    block = block_with("make demo")
    assert [_bare(c) for c in block.commands] == ["make demo"]
    asked = block_with('edge-agent ask "What is the humidity?"')
    assert asked.doc == README and asked.lang == "console"
    session = shell()
    with served_by_make(session, block.commands[0]) as make:
        run_block(session, asked)
    assert "demo device: the sensor skills read a simulated Raspberry Pi" in make.output  # type: ignore[attr-defined]


def test_the_model_check_block_reads_a_gguf_header(
    shell: Callable[..., Shell], tmp_path: Path
) -> None:
    # The README's check of the downloaded model, run as written on a tiny gemma4 GGUF that
    # stands in for the 3 GB file: it prints the architecture first, as the comment promises.
    from tiny_gguf import build_gemma4_gguf

    block = block_with(".venv/bin/python -c 'import sys; from edge_agentd.model.gguf")
    assert "# must print: gemma4 15" in block.commands[0]
    model = build_gemma4_gguf(tmp_path / "gemma-4-E2B-it-Q4_K_M.gguf")
    command = block.commands[0].replace("gemma-4-E2B-it-Q4_K_M.gguf", str(model))
    [(code, out, err)] = shell().run([f"cd {shlex.quote(str(REPO))} && {command}"])
    assert code == 0, err
    assert out.split()[0] == "gemma4", out


def cpu_at(root: Path, answer: str) -> Path:
    """A sysfs tree whose CPU reads the temperature ``answer`` states ("48.3 °C")."""

    match = re.search(r"(-?\d+(?:\.\d+)?) °C", answer)
    assert match, answer
    SysfsTree(root).thermal_zone(0, temp=str(round(float(match.group(1)) * 1000)))
    return root


def test_mqtt_fleet_blocks(shell: Callable[..., Shell], tmp_path: Path) -> None:
    # A real Mosquitto on a free port stands in for broker.lan; two mock nodes, named as the
    # docs name them, answer as the docs show.
    from mqtt_harness import final, node

    from scripts.testbed.mosquitto import broker

    fleet = block_with("edge-agent nodes --mqtt broker.lan", "mqtt.md")  # with its output
    readme = [block_with("edge-agent nodes --mqtt broker.lan", "README")]
    answer = fleet.outputs[1][0]
    with (
        broker(tmp_path / "broker") as mosquitto,
        node(tmp_path / "garage", port=mosquitto.port, node="garage-pi") as garage,
        node(
            tmp_path / "kitchen",
            port=mosquitto.port,
            node="kitchen-pi",
            # The docs' answer is the CPU's reading, so the node reads a CPU at that temperature.
            replies=[json.dumps({"skill_name": "cpu_temperature"}), final(answer)],
            extra=f'[skills]\nsysfs_root = "{cpu_at(tmp_path / "sys", answer)}"\n',
        ) as kitchen,
    ):
        garage.wait_link("connected")
        kitchen.wait_link("connected")
        where = f"127.0.0.1:{mosquitto.port}"
        session = shell()
        for block in (fleet, *readme):
            run_block(session, block, columns=2, **{"broker.lan": where})


# The test that runs each block, by its doc and its first command.
RUNNERS = {
    ("README.md", "make run"): "test_make_run_serves_where_the_client_looks",
    ("README.md", 'export PATH="$PWD/.venv/bin:$PATH"'): (
        "test_the_path_line_puts_this_checkouts_client_first"
    ),
    ("README.md", 'edge-agent ask "How hot is the CPU?"'): (
        "test_make_run_serves_where_the_client_looks"
    ),
    ("README.md", "make demo"): "test_make_demo_answers_from_the_demo_device",
    ("README.md", _bare(block_with(".venv/bin/python -c 'import sys;").commands[0])): (
        "test_the_model_check_block_reads_a_gguf_header"
    ),
    ("README.md", 'edge-agent ask "What is the humidity?"'): (
        "test_make_demo_answers_from_the_demo_device"
    ),
    (
        "README.md",
        'echo \'["{\\"final_answer\\": \\"I cannot tell: no skill reads the room.\\"}"]\''
        " > /tmp/mock.json",
    ): (
        "test_mock_daemon_block"
    ),
    ("README.md", "edge-agent nodes --mqtt broker.lan"): "test_mqtt_fleet_blocks",
    ("mqtt.md", "edge-agent nodes --mqtt broker.lan"): "test_mqtt_fleet_blocks",
    ("README.md", "systemctl status edge-agent"): "test_the_services_status_line",
    (
        "README.md",
        "edge-agent serve --model mock:/tmp/mock.json --endpoint tcp://127.0.0.1:5598 &",
    ): ("test_the_journal_block"),
    ("protocol.md", _bare(block_with("if reply=$(edge-agent ask").commands[0])): (
        "test_the_protocols_shell_client"
    ),
}
