"""The fixtures the test files share: a registry factory, a scripted daemon and a fake sysfs.

- ``make_registry``: a Registry holding the skills named or passed, ready for an Agent.
- ``scripted_daemon``: a real Server in a thread whose model replays a script (daemon_harness).
- ``daemon_process``: ``edge-agent serve`` as a process, stopped and checked when the block ends.
- ``sysfs``: an empty sysfs-shaped tree under the test's tmp_path, written by the demo device's
  own writer (edge_agentd.skills.demo).
- ``context``: a ZeroMQ context for a test's own sockets, destroyed without lingering.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import hypothesis
import pytest
import zmq

from edge_agentd import Registry
from edge_agentd.skills import register_builtins
from edge_agentd.skills.demo import SysfsTree

if TYPE_CHECKING:
    # The daemon's harness is imported only where a test starts a daemon, so the tests of the
    # framework and the skills still run while the service is being changed.
    from edge_agentd.service.server import Server


_SESSION_STATE = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """Write the tests' files as an installer would (umask 022). The daemon refuses a config or
    plugin that its group may write (docs/skills.md, "Where plugins may live"), and a developer's
    umask of 002 would make every file the tests write so."""
    os.umask(0o022)
    # The run journal (docs/protocol.md) goes to $XDG_STATE_HOME: never the developer's own.
    os.environ.pop("STATE_DIRECTORY", None)
    # Each test gets its own below (`_own_state_directory`); this one holds what daemons started
    # outside a test (a module's fixtures) write, and goes with the session.
    config.stash[_SESSION_STATE] = tempfile.mkdtemp(prefix="edge-agent-test-state-")
    os.environ["XDG_STATE_HOME"] = config.stash[_SESSION_STATE]
    # A shell that starts a command in the background (`make test &`, `nohup ... &`) leaves
    # SIGINT ignored in it, and an ignored signal stays ignored in every process it starts: the
    # tests' Ctrl-C to `edge-agent ask` or `watch` would then wait for ever. A handled one is
    # the default again in each child.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # Hypothesis fails an example that takes over 200 ms by default: a timing assert, which a
    # loaded 2-core machine trips at random. No test here bounds how long an example takes.
    hypothesis.settings.register_profile("loaded-machine", deadline=None)
    hypothesis.settings.load_profile("loaded-machine")


def pytest_unconfigure(config: pytest.Config) -> None:
    """The session's state directory is the tests' own: nothing of it stays in /tmp."""
    state = config.stash.get(_SESSION_STATE, None)
    if state is not None:
        shutil.rmtree(state, ignore_errors=True)
        if os.path.exists(state):  # a daemon still writing there as the session ends
            print(f"the tests' state directory {state} could not be removed", file=sys.stderr)


@pytest.fixture(autouse=True)
def _own_state_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's daemons keep their run journal in the test's own directory."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


# -- one registry factory ---------------------------------------------------------------------


def cpu_temperature() -> float:
    """The CPU temperature in degrees Celsius."""
    return 48.5


def read_sensor(name: str, precise: bool = False) -> dict[str, Any]:
    """One sensor's current value."""
    return {"name": name, "celsius": 21.5, "precise": precise}


def explode() -> None:
    """Always fails."""
    raise RuntimeError("the sensor bus is on fire")


def fail(reason: str) -> None:
    """Always raises."""
    raise ValueError(reason)


SHARED_SKILLS: dict[str, Callable[..., Any]] = {
    skill.__name__: skill for skill in (cpu_temperature, read_sensor, explode, fail)
}
# What ``make_registry()`` holds when it is given nothing: a small house with one broken sensor.
HOME = ("cpu_temperature", "read_sensor", "explode")

RegistryFactory = Callable[..., Registry]


def registry_of(*skills: str | Callable[..., Any], builtins: bool = False) -> Registry:
    """A fresh Registry: the on-device skills when ``builtins``, then each skill given.

    A skill is a plain function, registered under its own name, or the name of one of the shared
    skills above. With no skills and no builtins it holds HOME.
    """
    registry = Registry()
    if builtins:
        register_builtins(registry)
    elif not skills:
        skills = HOME
    for skill in skills:
        registry.skill(SHARED_SKILLS[skill] if isinstance(skill, str) else skill)
    return registry


@pytest.fixture(scope="session")
def make_registry() -> RegistryFactory:
    """The registry factory; session-scoped, so hypothesis tests may use it too."""
    return registry_of


# -- one scripted-daemon harness --------------------------------------------------------------

ScriptedDaemon = Callable[..., "tuple[Server, str]"]


@pytest.fixture
def scripted_daemon() -> Iterator[ScriptedDaemon]:
    """Start Servers whose MockModel replays the given replies; each is stopped after the test.

    ``scripted_daemon(replies, config=..., registry=...)`` takes ``running_server``'s arguments and
    returns ``(server, endpoint)``.
    """
    with contextlib.ExitStack() as started:

        def start(
            replies: list[str | dict[str, Any]] | None = None, **options: Any
        ) -> tuple[Server, str]:
            from daemon_harness import running_server

            return started.enter_context(running_server(replies, **options))

        yield start


DaemonProcess = Callable[..., contextlib.AbstractContextManager[str]]


@contextlib.contextmanager
def serving(
    args: list[str], endpoint: str, *, env: dict[str, str] | None = None, clean_exit: bool = False
) -> Iterator[str]:
    """``edge-agent serve ARGS --endpoint ENDPOINT``, ready; stopped with SIGTERM on exit.

    With ``clean_exit`` the daemon must also exit with 0 when it is stopped.
    """
    from daemon_harness import start_daemon, stop_daemon, wait_ready

    process = start_daemon([*args, "--endpoint", endpoint], env=env)
    try:
        wait_ready(endpoint, process)
        yield endpoint
    finally:
        output = stop_daemon(process)
        if clean_exit:
            assert process.returncode == 0, output


@pytest.fixture(scope="session")
def daemon_process() -> DaemonProcess:
    """The process form of the scripted daemon (``--model mock:FILE``), for any fixture scope."""
    return serving


# -- one fake sysfs ---------------------------------------------------------------------------


@pytest.fixture
def sysfs(tmp_path: Path) -> SysfsTree:
    """An empty sysfs tree at ``tmp_path / "sys"``; the test adds the zones and devices it needs."""
    return SysfsTree(tmp_path / "sys")


@pytest.fixture
def context() -> Iterator[zmq.Context[Any]]:
    ctx: zmq.Context[Any] = zmq.Context()
    yield ctx
    ctx.destroy(linger=0)


# -- the package as pip ships it ----------------------------------------------------------------


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """edge-agentd's wheel built from this tree, beside the wheels it needs (wheel_harness);
    built once a session, for the tests that install the daemon as a user would."""
    from wheel_harness import build_wheelhouse

    directory = tmp_path_factory.mktemp("wheelhouse") / "wheels"
    build_wheelhouse(directory)
    return directory
