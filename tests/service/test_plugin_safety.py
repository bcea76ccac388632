"""Code and config are loaded only from safe places (issue 11, defect 4; docs/skills.md).

A plugin file, a skills directory and the config file, with every directory above them, must be
owned by root or the daemon's user and not be writable by group or others, as sshd asks of
``authorized_keys``. The mode tests run as any user; the ownership tests need root to give a
file away (``os.chown`` to an unused uid).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import py_compile
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from daemon_harness import edge_agent_command

from edge_agentd.agent.registry import Registry
from edge_agentd.service.assembly.plugins import load_plugins
from edge_agentd.service.config.safepaths import UnsafePath, check_safe
from edge_agentd.service.config.settings import ConfigError, load_settings

GARDEN = """
def register(registry):
    @registry.skill
    def soil_moisture() -> float:
        \"\"\"Soil moisture of the tomato bed, in percent.\"\"\"
        return 41.5
"""

PUMP = """
def register(registry):
    @registry.skill
    def pump_status() -> str:
        \"\"\"Whether the pump runs.\"\"\"
        return "off"
"""

NOBODY = 65534  # an unused uid: nobody
needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="giving a file to another user (os.chown) needs root"
)


def plugin_dir(path: Path, mode: int = 0o755, **files: str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        file = path / f"{name}.py"
        file.write_text(textwrap.dedent(text))
        file.chmod(0o644)
    path.chmod(mode)
    return path


def load(directory: Path) -> tuple[Registry, dict[str, str]]:
    registry = Registry()
    problems = load_plugins(registry, [directory], entry_points=False)
    return registry, {p.source: p.error for p in problems}


@pytest.fixture
def safe_root(tmp_path: Path) -> Path:
    """A directory whose own chain is safe (pytest's tmp dirs are 0700, under a sticky /tmp)."""
    root = tmp_path / "safe"
    root.mkdir(mode=0o755)
    root.chmod(0o755)
    check_safe(root)
    return root


@pytest.mark.parametrize(
    ("mode", "who"),
    [
        (0o777, "its group and others"),
        (0o1777, "its group and others"),  # sticky or not, the directory itself must be closed
        (0o775, "its group"),
        (0o757, "others"),
    ],
)
def test_a_skills_directory_others_can_write_is_refused(
    safe_root: Path, mode: int, who: str, caplog: pytest.LogCaptureFixture
) -> None:
    directory = plugin_dir(safe_root / "skills.d", mode, garden=GARDEN)
    with caplog.at_level(logging.WARNING, logger="edge_agentd.service.assembly.plugins"):
        registry, problems = load(directory)
    assert registry.names() == []
    error = problems[str(directory)]
    assert error.startswith("refused the directory: ")
    assert f"{directory} is writable by {who} (mode {mode:04o})" in error
    assert f"chmod go-w {directory}" in error
    assert f"skipped plugin {directory}: refused the directory" in caplog.text


@pytest.mark.parametrize("mode", [0o666, 0o646, 0o664, 0o622])
def test_a_plugin_file_others_can_write_is_refused_and_the_rest_load(
    safe_root: Path, mode: int
) -> None:
    directory = plugin_dir(safe_root / "skills.d", garden=GARDEN, pump=PUMP)
    (directory / "pump.py").chmod(mode)
    registry, problems = load(directory)
    assert registry.names() == ["soil_moisture"]
    error = problems[str(directory / "pump.py")]
    assert error.startswith(f"refused the file: {directory / 'pump.py'} is writable by ")
    assert f"(mode {mode:04o})" in error


def test_a_directory_above_that_others_can_write_is_refused(safe_root: Path) -> None:
    above = safe_root / "opt"
    directory = plugin_dir(above / "skills.d", garden=GARDEN)
    above.chmod(0o777)
    registry, problems = load(directory)
    assert registry.names() == []
    assert f"{above} is writable by its group and others (mode 0777)" in problems[str(directory)]


def test_a_sticky_directory_above_is_accepted_like_tmp(safe_root: Path) -> None:
    # Under a sticky directory nobody but an entry's owner can rename or remove it.
    above = safe_root / "shared"
    directory = plugin_dir(above / "skills.d", garden=GARDEN)
    above.chmod(0o1777)
    registry, problems = load(directory)
    assert (registry.names(), problems) == (["soil_moisture"], {})


def test_a_symlink_is_judged_by_where_it_leads(safe_root: Path, tmp_path: Path) -> None:
    open_dir = plugin_dir(safe_root / "open", 0o777, pump=PUMP)
    directory = plugin_dir(safe_root / "skills.d", garden=GARDEN)
    (directory / "pump.py").symlink_to(open_dir / "pump.py")
    registry, problems = load(directory)
    assert registry.names() == ["soil_moisture"]
    error = problems[str(directory / "pump.py")]
    assert f"{directory / 'pump.py'} leads to {open_dir / 'pump.py'}: {open_dir} is writable" in (
        error
    )


def test_a_planted_bytecode_cache_is_never_run(safe_root: Path, tmp_path: Path) -> None:
    """The import system would run a matching ``__pycache__/*.pyc`` instead of the source; a
    plugin is compiled from its (checked) source, and no cache is read or written."""
    directory = plugin_dir(safe_root / "skills.d", garden=GARDEN)
    source = directory / "garden.py"
    evil = tmp_path / "evil.py"
    evil_text = "def register(registry):\n    raise RuntimeError('the planted cache ran')\n"
    evil.write_text(evil_text.ljust(len(source.read_text()) - 1) + "\n")
    assert evil.stat().st_size == source.stat().st_size
    stat = source.stat()
    os.utime(evil, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    cache = Path(importlib.util.cache_from_source(str(source)))
    py_compile.compile(str(evil), cfile=str(cache), doraise=True)
    cache.parent.chmod(0o777)  # a cache directory someone else could write
    registry, problems = load(directory)
    assert (registry.names(), problems) == (["soil_moisture"], {})
    assert sorted(p.name for p in cache.parent.iterdir()) == [cache.name]  # nothing written


@needs_root
def test_a_skills_directory_owned_by_another_user_is_refused(safe_root: Path) -> None:
    directory = plugin_dir(safe_root / "skills.d", garden=GARDEN)
    os.chown(directory, NOBODY, -1)
    registry, problems = load(directory)
    assert registry.names() == []
    assert f"{directory} is owned by " in problems[str(directory)]
    assert f"uid {NOBODY}), not by root or the daemon's user" in problems[str(directory)]


@needs_root
def test_a_plugin_file_owned_by_another_user_is_refused(safe_root: Path) -> None:
    directory = plugin_dir(safe_root / "skills.d", garden=GARDEN, pump=PUMP)
    os.chown(directory / "pump.py", NOBODY, -1)
    registry, problems = load(directory)
    assert registry.names() == ["soil_moisture"]
    assert f"uid {NOBODY}), not by root" in problems[str(directory / "pump.py")]


# -- the config file ------------------------------------------------------------------------


def config_file(directory: Path, mode: int = 0o644) -> Path:
    path = directory / "edge.toml"
    path.write_text("[daemon]\nqueue_limit = 3\n", encoding="utf-8")
    path.chmod(mode)
    return path


def test_a_safe_config_loads(safe_root: Path) -> None:
    assert load_settings(config_file(safe_root)).daemon.queue_limit == 3


@pytest.mark.parametrize("mode", [0o666, 0o664, 0o646])
def test_a_config_others_can_write_is_a_config_error(safe_root: Path, mode: int) -> None:
    path = config_file(safe_root, mode)
    with pytest.raises(ConfigError, match="refused the config") as raised:
        load_settings(path)
    assert f"{path} is writable by" in str(raised.value)
    assert f"(mode {mode:04o}), so others could change what the daemon runs" in str(raised.value)


def test_a_config_in_a_directory_others_can_write_is_a_config_error(safe_root: Path) -> None:
    above = safe_root / "etc"
    above.mkdir()
    path = config_file(above)
    above.chmod(0o777)
    with pytest.raises(ConfigError, match=f"{above} is writable by its group and others"):
        load_settings(path)


@needs_root
def test_a_config_owned_by_another_user_is_a_config_error(safe_root: Path) -> None:
    path = config_file(safe_root)
    os.chown(path, NOBODY, -1)
    with pytest.raises(ConfigError, match=f"uid {NOBODY}\\), not by root or the daemon's user"):
        load_settings(path)


def test_serve_exits_78_on_an_unsafe_config(
    safe_root: Path, run_serve: Callable[..., tuple[int, str]]
) -> None:
    path = config_file(safe_root, 0o666)
    code, output = run_serve("--config", str(path))
    assert code == 78, output
    assert f"config error: {path}: refused the config: {path} is writable by" in output


@pytest.fixture
def run_serve() -> Callable[..., tuple[int, str]]:
    def run(*args: str) -> tuple[int, str]:
        done = subprocess.run(
            edge_agent_command("serve", *args, "--model", "mock:/nonexistent.json"),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        return done.returncode, done.stdout + done.stderr

    return run


def test_check_safe_raises_for_a_missing_path(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        check_safe(tmp_path / "absent")
    with pytest.raises(UnsafePath):
        check_safe(config_file(tmp_path, 0o666))
