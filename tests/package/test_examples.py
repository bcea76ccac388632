"""The home-automation examples in scripts/examples/, run for real against `mock:` daemons.

Each daemon is a real `edge-agent serve --model mock:FILE` process on an ipc socket in tmp; the
examples' fixed endpoint (the service's /run/edge-agent/agent.sock) is swapped for it.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jinja2
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edge_agentd.skills.demo import SysfsTree
from edge_agentd.skills.sysfs import SYSFS_ROOT_ENV

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "scripts" / "examples"
SHELL_EXAMPLE = EXAMPLES / "ask-and-act.sh"
SERVICE_ENDPOINT = "ipc:///run/edge-agent/agent.sock"
CLIENT = Path(sys.executable).with_name("edge-agent")
# Home Assistant's limits: a shell_command is killed after 60 s, a command_line sensor after its
# command_timeout (15 s by default; Home Assistant's UI allows at most 100).
HA_SHELL_COMMAND_LIMIT_S = 60
HA_COMMAND_LINE_DEFAULT_S = 15
HA_COMMAND_LINE_UI_MAX_S = 100
ANSWER = "I cannot tell how hot the CPU is."
"""An answer for any question: with no result it is the only one the loop lets through."""


def _final(text: str) -> str:
    return json.dumps({"final_answer": text})


class MockDaemon:
    """`edge-agent serve --model mock:FILE` on an ipc socket; stopped with SIGTERM."""

    def __init__(
        self,
        directory: Path,
        replies: list[Any],
        cpu_milli_c: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        directory.mkdir(parents=True)
        mock = directory / "replies.json"
        mock.write_text(json.dumps(replies))
        self.endpoint = f"ipc://{directory / 'agent.sock'}"
        self.log = directory / "daemon.log"
        environment = {**os.environ, **(env or {})}
        if cpu_milli_c is not None:
            # A CPU the built-in skill reads: an answer states what a result holds.
            SysfsTree(directory / "sys").thermal_zone(0, temp=cpu_milli_c)
            environment[SYSFS_ROOT_ENV] = str(directory / "sys")
        self.process = subprocess.Popen(
            [str(CLIENT), "serve", "--model", f"mock:{mock}", "--endpoint", self.endpoint],
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=self.log.open("wb"),
            stderr=subprocess.STDOUT,
        )
        self._wait_ready()

    def _wait_ready(self, timeout_s: float = 30.0) -> None:
        give_up = time.monotonic() + timeout_s
        while time.monotonic() < give_up:
            if self.process.poll() is not None:
                raise RuntimeError(f"daemon exited: {self.log.read_text()}")
            status = subprocess.run(
                [str(CLIENT), "status", "--json", "--timeout", "1", "--endpoint", self.endpoint],
                check=False,
                capture_output=True,
                text=True,
            )
            if status.returncode == 0 and json.loads(status.stdout).get("state") == "ready":
                return
            time.sleep(0.1)
        raise RuntimeError(f"daemon not ready: {self.log.read_text()}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture(scope="module")
def daemons(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, MockDaemon]]:
    base = tmp_path_factory.mktemp("daemons")
    started: dict[str, MockDaemon] = {}
    try:
        started["answers"] = MockDaemon(base / "answers", [_final(ANSWER)])
        says_yes = [json.dumps({"skill_name": "cpu_temperature"}), _final("Yes, it is at 81 °C.")]
        started["says_yes"] = MockDaemon(base / "yes", says_yes, cpu_milli_c="81000")
        # Never valid JSON: every step fails validation until the retries run out.
        started["never_answers"] = MockDaemon(base / "never", ["I would rather chat."] * 10)
        started["slow"] = MockDaemon(base / "slow", [{"text": _final(ANSWER), "delay_s": 30}])
        yield started
    finally:
        for daemon in started.values():
            daemon.stop()


# --- the plain shell script ---------------------------------------------------------------


def _run_shell_example(
    endpoint: str, question: str, timeout_s: str = "10"
) -> subprocess.CompletedProcess[str]:
    environment = dict(
        os.environ,
        EDGE_AGENT=str(CLIENT),
        EDGE_AGENT_ENDPOINT=endpoint,
        EDGE_AGENT_TIMEOUT=timeout_s,
    )
    return subprocess.run(
        ["bash", str(SHELL_EXAMPLE), question],
        check=False,
        capture_output=True,
        text=True,
        env=environment,
        timeout=60,
    )


def test_shell_example_acts_on_an_answer(daemons: dict[str, MockDaemon]) -> None:
    result = _run_shell_example(daemons["answers"].endpoint, "How hot is the CPU?")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"answered: {ANSWER}\n"

    hot = _run_shell_example(daemons["says_yes"].endpoint, "Is the CPU hotter than 70 °C?")
    assert hot.returncode == 0, hot.stderr
    assert hot.stdout.splitlines() == [
        "answered: Yes, it is at 81 °C.",
        "action: the CPU is hot, warning the household",
    ]


def test_shell_example_reports_a_daemon_that_is_not_there(tmp_path: Path) -> None:
    result = _run_shell_example(f"ipc://{tmp_path / 'nobody.sock'}", "Anyone there?")
    assert result.returncode == 69
    assert "daemon unavailable: is it running? systemctl status edge-agent" in result.stderr
    assert result.stdout == ""


def test_shell_example_finds_the_checkouts_client_off_path(
    daemons: dict[str, MockDaemon], tmp_path: Path
) -> None:
    # Right after `make run`, edge-agent is in .venv/bin and not on PATH (the README says so).
    bare = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    found = subprocess.run(
        ["bash", str(SHELL_EXAMPLE), "How hot is the CPU?"],
        check=False,
        capture_output=True,
        text=True,
        env={**bare, "EDGE_AGENT_ENDPOINT": daemons["answers"].endpoint},
        timeout=60,
    )
    if (REPO / ".venv" / "bin" / "edge-agent").exists():
        assert found.returncode == 0, found.stderr
        assert found.stdout == f"answered: {ANSWER}\n"
    # A copy outside any checkout says what to do instead of "unexpected exit code 127".
    copy = tmp_path / "ask-and-act.sh"
    copy.write_bytes(SHELL_EXAMPLE.read_bytes())
    lost = subprocess.run(
        ["bash", str(copy), "hi"], check=False, capture_output=True, text=True, env=bare, timeout=60
    )
    assert lost.returncode == 127 and "edge-agent not found: put it on PATH" in lost.stderr


def test_shell_example_reports_no_answer(daemons: dict[str, MockDaemon]) -> None:
    result = _run_shell_example(daemons["never_answers"].endpoint, "How hot is the CPU?")
    assert result.returncode == 1, result.stderr
    assert "no answer: the agent gave up" in result.stderr
    assert result.stdout == ""


def test_shell_example_reports_a_timeout(daemons: dict[str, MockDaemon]) -> None:
    result = _run_shell_example(daemons["slow"].endpoint, "How hot is the CPU?", timeout_s="1")
    assert result.returncode == 75, result.stderr
    assert "busy or timed out: try again later" in result.stderr


def test_shell_example_reports_bad_input(daemons: dict[str, MockDaemon]) -> None:
    result = _run_shell_example(daemons["answers"].endpoint, "   ")
    assert result.returncode == 65, result.stderr
    assert "bad input: the question was refused" in result.stderr


def test_shell_example_passes_questions_as_one_argument(
    daemons: dict[str, MockDaemon], tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    hostile = f'\'; touch {marker}; echo "$(touch {marker})" `touch {marker}`'
    result = _run_shell_example(daemons["answers"].endpoint, hostile)
    assert result.returncode == 0, result.stderr
    assert not marker.exists()


# --- Home Assistant -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def home_assistant() -> dict[str, Any]:
    config = yaml.safe_load((EXAMPLES / "home-assistant.yaml").read_text())
    assert isinstance(config, dict)
    return config


def _ask_timeout(command: str) -> float:
    match = re.search(r"edge-agent ask --json --timeout (\d+(?:\.\d+)?) ", command)
    assert match is not None, command
    return float(match.group(1))


def _ask_wait(command: str) -> float | None:
    match = re.search(r" --wait (\d+(?:\.\d+)?) ", command)
    return None if match is None else float(match.group(1))


def _projected_p90_s() -> float:
    """The slowest projected p90 of a question on a Pi 5 with Gemma 4 E2B, as
    docs/performance.md gives it (scripts/bench/bench_pi.py)."""
    text = (REPO / "docs" / "performance.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if "Gemma 4 E2B, **projected**" in line)
    p90s = [float(p90) for _, p90 in re.findall(r"`(?:plain|guided)`[^|]*?: ([\d.]+)/([\d.]+) s", row)]
    assert len(p90s) == 2, row
    return max(p90s)


def _pi_start_up_s() -> float:
    """The client's start-up on a Pi that the example's comment derives (scripts/bench/bench_cli_start.py
    figure, times 4), checked to be that product."""
    text = (EXAMPLES / "home-assistant.yaml").read_text(encoding="utf-8")
    match = re.search(r"start-up on a Pi: 4 x (\d+) ms = (\d+\.\d+) s", text)
    assert match is not None, "the example no longer says how its margins were derived"
    measured_ms, stated_s = int(match.group(1)), float(match.group(2))
    assert round(4 * measured_ms / 1000, 2) == stated_s
    return stated_s


def _longest_s(command: str) -> float:
    """The longest an ask can take: start-up, its wait (--wait, else --timeout and the run's
    grace), the watchdog's slack."""
    from edge_agentd.cli.exits import COMMAND_SLACK_S
    from edge_agentd.client.zmqclient import run_wait

    waited = run_wait(_ask_timeout(command), _ask_wait(command))
    return _pi_start_up_s() + waited + COMMAND_SLACK_S


def test_home_assistant_timeouts_are_inside_its_limits(home_assistant: dict[str, Any]) -> None:
    for name, command in home_assistant["shell_command"].items():
        assert _longest_s(command) < HA_SHELL_COMMAND_LIMIT_S, name
    sensors = [entry["sensor"] for entry in home_assistant["command_line"]]
    assert sensors
    for sensor in sensors:
        limit = sensor.get("command_timeout", HA_COMMAND_LINE_DEFAULT_S)
        assert limit <= HA_COMMAND_LINE_UI_MAX_S
        assert _longest_s(sensor["command"]) < limit, sensor["name"]


def test_home_assistant_timeouts_fit_a_pis_projected_seconds(home_assistant: dict[str, Any]) -> None:
    """Sized from the projection with room to spare, and no answer lost to a kill: every ask is
    keyed, a run may take twice the p90, and the tries of one key outlast the run."""
    from edge_agentd.client.zmqclient import RUN_GRACE_S

    p90 = _projected_p90_s()
    text = (EXAMPLES / "home-assistant.yaml").read_text(encoding="utf-8")
    shell = home_assistant["shell_command"]["edge_agent_ask"]
    sensor = home_assistant["command_line"][0]["sensor"]
    for command in (shell, sensor["command"]):
        assert _ask_timeout(command) >= 2 * p90, command
        assert " --key " in command, command
    # The automation tries one key until the run must have ended.
    (automation,) = home_assistant["automation"]
    tries = [a for a in automation["actions"] if a.get("action") == "shell_command.edge_agent_ask"]
    assert len({json.dumps(t["data"], sort_keys=True) for t in tries}) == 1  # one key, one query
    assert set(tries[0]["data"]) == {"question", "key"}
    assert len(tries) * _longest_s(shell) >= _ask_timeout(shell) + RUN_GRACE_S
    assert tries[-1]["response_variable"] == "asked"
    # The sensor waits past the p90, and reads each key twice, the second after the run's end.
    assert _ask_wait(sensor["command"]) >= p90
    assert _slot_s(sensor["command"]) == 2 * sensor["scan_interval"]
    assert sensor["scan_interval"] >= _ask_timeout(sensor["command"]) + RUN_GRACE_S
    # The sums in the comments are these numbers.
    for command, limit in ((shell, HA_SHELL_COMMAND_LIMIT_S), (sensor["command"], 90)):
        wait = _ask_wait(command)
        stated = f"--wait {wait:g} ({_pi_start_up_s():g} + {wait:g} + 1 = {_longest_s(command):g} s)"
        assert stated in text, stated
        assert f"({limit - _longest_s(command):.2f} s" in text or f", {limit - _longest_s(command):.2f} s)" in text
    assert f"3 x {_longest_s(shell):g} = {3 * _longest_s(shell):.2f} s" in text
    assert f"2 x {p90} = {2 * p90:g} s" in text


def _shell_command(command: str, endpoint: str, **data: str) -> subprocess.CompletedProcess[str]:
    """A shell_command as Home Assistant runs it: the template rendered in everything after the
    first space, split with shlex, run without a shell, killed at 60 s."""
    program, arguments = command.replace(SERVICE_ENDPOINT, endpoint).split(" ", 1)
    assert program == "/opt/edge-agent/venv/bin/edge-agent"
    argv = [str(CLIENT), *shlex.split(jinja2.Template(arguments).render(**data))]
    return subprocess.run(
        argv, check=False, capture_output=True, text=True, timeout=HA_SHELL_COMMAND_LIMIT_S
    )


def test_home_assistant_shell_command_runs_as_home_assistant_runs_it(
    home_assistant: dict[str, Any], daemons: dict[str, MockDaemon]
) -> None:
    command = home_assistant["shell_command"]["edge_agent_ask"]
    question = "Is the CPU hot; rm -rf / ?"
    key = f"kitchen-hot-{time.time()}"
    result = _shell_command(command, daemons["answers"].endpoint, question=question, key=key)
    assert result.returncode == 0, result.stderr
    reply = json.loads(result.stdout)
    assert reply["answer"] == ANSWER
    assert reply["query"] == "Is the CPU hot; rm -rf / ?"


def _status(endpoint: str) -> dict[str, Any]:
    shown = subprocess.run(
        [str(CLIENT), "status", "--json", "--endpoint", endpoint],
        check=True, capture_output=True, text=True, timeout=30,
    )
    status: dict[str, Any] = json.loads(shown.stdout)
    return status


@pytest.fixture
def slow_daemon(tmp_path: Path) -> Iterator[MockDaemon]:
    """A daemon whose one run takes 4 s, with a run journal of its own (keys are the journal's)."""
    daemon = MockDaemon(
        tmp_path / "slow", [{"text": _final(ANSWER), "delay_s": 4}],
        env={"XDG_STATE_HOME": str(tmp_path / "state")},
    )
    try:
        yield daemon
    finally:
        daemon.stop()


def test_the_automations_tries_of_one_key_get_the_answer_of_one_run(
    home_assistant: dict[str, Any], slow_daemon: MockDaemon
) -> None:
    """A run that outlasts a try's wait is not lost: the next try, with the same key and question,
    gets its answer, and the model runs once. (The waits are scaled down: 1 s against a 4 s run.)"""
    (automation,) = home_assistant["automation"]
    tries = [a for a in automation["actions"] if a.get("action") == "shell_command.edge_agent_ask"]
    variables = {
        "question": automation["variables"]["question"],
        "key": jinja2.Template(automation["variables"]["key"]).render(now=datetime.datetime.now),
    }
    data = {
        name: jinja2.Template(value).render(**variables)
        for name, value in tries[0]["data"].items()
    }
    command = home_assistant["shell_command"]["edge_agent_ask"]
    short = command.replace("--wait 50", "--wait 1")
    responses = [_shell_command(short, slow_daemon.endpoint, **data)]
    responses += [_shell_command(command, slow_daemon.endpoint, **data) for _ in tries[1:]]
    first, *later = responses
    assert first.returncode == 75, first.stderr
    assert json.loads(first.stdout)["error"]["code"] == "timeout"
    for response in later:
        assert response.returncode == 0, response.stderr
        assert json.loads(response.stdout)["answer"] == ANSWER
    counters = _status(slow_daemon.endpoint)["counters"]
    assert (counters["runs_accepted"], counters["runs_finished"]) == (1, 1)
    asked = {"returncode": later[-1].returncode, "stdout": later[-1].stdout}
    branch = automation["actions"][-1]
    assert jinja2.Template(branch["if"][0]["value_template"]).render(asked=asked) == "True"
    env = jinja2.Environment()
    env.filters["from_json"] = json.loads
    message = env.from_string(branch["then"][0]["data"]["message"]).render(asked=asked)
    assert message == ANSWER


def test_the_sensors_second_read_of_a_key_gets_the_answer_the_first_left(
    home_assistant: dict[str, Any], slow_daemon: MockDaemon
) -> None:
    sensor = home_assistant["command_line"][0]["sensor"]
    command = sensor["command"].replace(SERVICE_ENDPOINT, slow_daemon.endpoint)
    command = command.replace("/opt/edge-agent/venv/bin/edge-agent", shlex.quote(str(CLIENT)))
    slot = _slot_s(command)
    if slot - time.time() % slot < 60:  # both reads in one key's slot, as 300 s apart they are
        time.sleep(slot - time.time() % slot + 1)

    def read(text: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            text, shell=True, check=False, capture_output=True, text=True,  # as HA runs it
            timeout=sensor["command_timeout"],
        )

    stopped = read(command.replace("--wait 85", "--wait 1"))  # scaled down: a 4 s run
    assert stopped.returncode == 75, stopped.stderr
    again = read(command)
    assert again.returncode == 0, again.stderr
    state = jinja2.Template(sensor["value_template"]).render(value_json=json.loads(again.stdout))
    assert state == ANSWER
    counters = _status(slow_daemon.endpoint)["counters"]
    assert (counters["runs_accepted"], counters["runs_finished"]) == (1, 1)


def _slot_s(command: str) -> int:
    """How often the sensor's key changes: the divisor of its `$(( $(date +%s) / N ))`."""
    match = re.search(r"\$\(date \+%s\) / (\d+) \)\)", command)
    assert match is not None, command
    return int(match.group(1))


def test_home_assistant_sensor_reads_the_answer(
    home_assistant: dict[str, Any], daemons: dict[str, MockDaemon]
) -> None:
    sensor = home_assistant["command_line"][0]["sensor"]
    command = sensor["command"].replace(SERVICE_ENDPOINT, daemons["answers"].endpoint)
    command = command.replace("/opt/edge-agent/venv/bin/edge-agent", shlex.quote(str(CLIENT)))
    # command_line runs its command in a shell and kills it at command_timeout.
    output = subprocess.run(
        command,
        shell=True,  # exactly as Home Assistant runs it
        check=True,
        capture_output=True,
        text=True,
        timeout=sensor["command_timeout"],
    ).stdout
    value_json = json.loads(output)
    state = jinja2.Template(sensor["value_template"]).render(value_json=value_json)
    assert state == ANSWER
    assert set(sensor["json_attributes"]) <= set(value_json)


# --- Node-RED -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def flow() -> dict[str, dict[str, Any]]:
    nodes = json.loads((EXAMPLES / "node-red-flow.json").read_text())
    return {node["id"]: node for node in nodes}


def _node_of_type(flow: dict[str, dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [node for node in flow.values() if node["type"] == kind]
    assert len(found) == 1, kind
    return found[0]


def test_node_red_flow_is_wired_and_times_out_after_the_client(
    flow: dict[str, dict[str, Any]],
) -> None:
    for node in flow.values():
        for output in node.get("wires", []):
            for target in output:
                assert target in flow, f"{node['id']} wires to missing {target}"
    execute = _node_of_type(flow, "exec")
    assert execute["useSpawn"] == "false" and execute["addpay"] == "payload"
    # The command ends by itself (answered, or 75 at its deadline) before the exec node kills it.
    assert _longest_s(execute["command"] + " ") < float(execute["timer"])
    assert _ask_timeout(execute["command"] + " ") >= 2 * _projected_p90_s()


def _shell_quote_like_the_flow(question: str) -> str:
    return "'" + question.replace("'", "'\\''") + "'"


def _route(switch: dict[str, Any], code: int) -> str:
    """Where Node-RED's switch node sends msg.rc.code (first matching rule, checkall false)."""
    assert switch["property"] == "rc.code" and switch["checkall"] == "false"
    for index, rule in enumerate(switch["rules"]):
        if rule["t"] == "else" or (rule["t"] == "eq" and float(rule["v"]) == code):
            targets: list[str] = switch["wires"][index]
            assert len(targets) == 1
            return targets[0]
    raise AssertionError(f"code {code} goes nowhere")


@pytest.mark.parametrize(
    "case",
    [
        ("answers", 0, "ea_parse"),
        ("never_answers", 1, "ea_no_answer"),
        (None, 69, "ea_unavailable"),
    ],
    ids=["answered", "no-answer", "unavailable"],
)
def test_node_red_exec_command_runs_and_routes_by_exit_code(
    flow: dict[str, dict[str, Any]],
    daemons: dict[str, MockDaemon],
    tmp_path: Path,
    case: tuple[str | None, int, str],
) -> None:
    daemon, expected_code, expected_node = case
    quote = flow["ea_quote"]
    assert """replace(/'/g, "'\\\\''")""" in quote["func"]
    execute = _node_of_type(flow, "exec")
    endpoint = daemons[daemon].endpoint if daemon else f"ipc://{tmp_path / 'absent.sock'}"
    command = execute["command"].replace(SERVICE_ENDPOINT, endpoint)
    command = command.replace("/opt/edge-agent/venv/bin/edge-agent", shlex.quote(str(CLIENT)))
    marker = tmp_path / "pwned"
    question = f"it's hot; touch {marker}"
    # Exec mode: the command and the appended payload run in a shell.
    result = subprocess.run(
        f"{command} {_shell_quote_like_the_flow(question)}",
        shell=True,  # exactly as the exec node runs it
        check=False,
        capture_output=True,
        text=True,
        timeout=float(execute["timer"]),
    )
    assert result.returncode == expected_code, result.stderr
    assert not marker.exists()
    assert _route(flow["ea_by_exit_code"], result.returncode) == expected_node
    if expected_code == 0:
        assert json.loads(result.stdout)["answer"] == ANSWER


_QUESTION = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=120,
)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(question=_QUESTION)
def test_shell_example_takes_any_question_as_data(
    daemons: dict[str, MockDaemon], tmp_path: Path, question: str
) -> None:
    marker = tmp_path / "pwned"
    hostile = question + f"$(touch {marker})`touch {marker}`"
    result = _run_shell_example(daemons["answers"].endpoint, hostile)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"answered: {ANSWER}\n"
    assert not marker.exists()
