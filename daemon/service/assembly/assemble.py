"""What ``edge-agent serve`` assembles before it answers: settings, skills, model and Server.

:func:`assemble` is the whole of it; the CLI only parses its arguments and runs the result.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import logging
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from edge_agentd.agent.protocol import ModelHandle
from edge_agentd.agent.registry import Registry, get_registry
from edge_agentd.agent.workflow import Workflow
from edge_agentd.model.scripted import MockModel, ScriptFileError
from edge_agentd.protocol.endpoints import default_endpoint
from edge_agentd.service.assembly.plugins import load_plugins
from edge_agentd.service.config.settings import ConfigError, Settings, load_settings
from edge_agentd.service.config.strategy import drives_loop
from edge_agentd.service.config.triggers import check_triggers
from edge_agentd.service.options import ServerOptions
from edge_agentd.service.server import Server
from edge_agentd.skills import BUILTIN_NAMES, register_builtins
from edge_agentd.skills.demo import write_demo_device

log = logging.getLogger(__name__)

MOCK_PREFIX = "mock:"


def model_factory(spec: str, settings: Settings) -> Callable[[], ModelHandle]:
    """A loader for ``spec`` (``default``, a GGUF path, or ``mock:FILE``), run on the loading
    thread.

    A ``mock:`` file is read here, at once, so a bad script stops the daemon before it binds; so
    is a GGUF file's header (missing, unreadable, not GGUF, truncated), and for ``default`` the
    embedded model's packages: a ConfigError that says how to fix it, never a "listening" daemon
    that then dies.
    """
    if spec == "default":
        check_embedded_model()
    elif spec.startswith(MOCK_PREFIX):
        try:
            script = MockModel.from_file(spec[len(MOCK_PREFIX) :])
        except ScriptFileError as exc:
            raise ConfigError(str(exc)) from None
        return lambda: script
    else:
        from edge_agentd.model.gguf import ModelLoadError, read_gguf  # noqa: PLC0415

        try:
            read_gguf(spec)
        except ModelLoadError as exc:
            raise ConfigError(f"the model cannot be loaded: {exc}") from None

    def load() -> ModelHandle:
        from edge_agentd.model import load_model  # noqa: PLC0415 - llama.cpp loads only here

        path = None if spec == "default" else spec
        # A guided model's calls are the engine's, written in the seed's JSON actions; the
        # embedded model is guided, and its template has no tool format.
        own_tools = (
            path is not None
            and settings.model.tool_format == "native"
            and drives_loop(settings.model.strategy, Path(path).stat().st_size)
        )
        return load_model(
            path, n_ctx=settings.model.n_ctx, state_dir=prefix_state_dir(), tool_calls=own_tools
        )

    return load


def prefix_state_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """Where the warmed-up preamble's KV state is kept across restarts: systemd's
    CacheDirectory= (its first entry) under systemd, else ``$XDG_CACHE_HOME/edge-agent``
    (``~/.cache/edge-agent``), where the embedded model is too. None without a home to put it in
    (the daemon then warms up from scratch at every start)."""
    from edge_agentd.model.embedded import cache_dir  # noqa: PLC0415 - beside the model

    try:
        return cache_dir(environ)
    except RuntimeError:  # no $HOME and no passwd entry: Path.home() cannot say
        log.warning("no cache directory (no $HOME): the prefix state is not kept across restarts")
        return None


def check_embedded_model() -> None:
    """ConfigError unless the ``default-model`` extra is installed, every chunk package and file.

    Only the packages are looked at (no hashing, no joining): the loading thread assembles and
    checks the model itself while the daemon already answers ``loading``.
    """
    from edge_agentd.model.embedded import EXTRA_HINT, PACKAGE  # noqa: PLC0415

    problem = "model 'default': the embedded Gemma 3 270M model is not installed"
    try:
        package = importlib.import_module(PACKAGE)
        chunks = [Path(chunk) for chunk in package.chunk_paths()]
    except ImportError as exc:
        raise ConfigError(f"{problem} (no module {exc.name or PACKAGE}); {EXTRA_HINT}") from None
    missing = [str(chunk) for chunk in chunks if not chunk.is_file()]
    if missing:
        raise ConfigError(f"{problem} whole ({', '.join(missing)} missing); {EXTRA_HINT}")


def load_skills(
    registry: Registry, settings: Settings, demo_device: Path | None = None
) -> list[dict[str, str]]:
    """Register the built-in skills and the plugins, then apply ``[skills.timeouts]``.

    With ``demo_device`` (the tree :func:`~edge_agentd.skills.demo.write_demo_device` wrote), the
    sensor skills read it instead of ``[skills] sysfs_root``, and say so in every result.
    A problem registering is logged and returned, never raised (a broken plugin must not stop
    the daemon); a timeout naming no registered skill is a ConfigError (a typo must not go
    unnoticed, nor leave a skill on its default).
    """
    problems: list[dict[str, str]] = []
    options = settings.skills
    if options.builtins:
        try:
            register_builtins(
                registry,
                sysfs_root=options.sysfs_root if demo_device is None else demo_device,
                weather=options.weather,
                demo=demo_device is not None,
            )
        except Exception as exc:
            log.exception("the built-in skills failed to register")
            problems.append({"source": "edge_agentd.skills", "error": f"{exc!r}"})
    if options.directories or options.entry_points:
        # load_plugins logs each problem itself.
        for problem in load_plugins(
            registry,
            list(options.directories),
            entry_points=options.entry_points,
            timeout_s=options.plugin_timeout_s,
        ):
            problems.append({"source": str(problem.source), "error": str(problem.error)})
    apply_timeouts(settings, registry, problems)
    return problems


def apply_timeouts(
    settings: Settings, registry: Registry, problems: Sequence[Mapping[str, str]] = ()
) -> None:
    """Set each ``[skills.timeouts]`` entry on its skill, built-in or plugin; they are applied
    only now, once every skill is registered, so a plugin's skills get theirs too (and the
    config's value wins over the one the plugin chose).

    Raises the ConfigError that names the file, the line and the closest registered name for a
    timeout that names no skill.
    """
    for name, seconds in settings.skills.timeouts.items():
        if name in registry:
            registry.set_timeout(name, seconds)
            continue
        close = difflib.get_close_matches(name, registry.names(), n=1, cutoff=0.6)
        if close:
            hint = f"did you mean `{close[0]}`?"
        else:
            hint = f"the skills are: {', '.join(registry.names()) or 'none'}"
        if name in BUILTIN_NAMES:
            hint = "a built-in skill this config leaves out ([skills] builtins or weather)"
        elif problems:
            skipped = ", ".join(problem["source"] for problem in problems)
            hint += f"; skipped, so not counted: {skipped}"
        raise settings.problem(("skills", "timeouts", name), f"no skill named `{name}` ({hint})")


def check_workflows(settings: Settings, registry: Registry, workflows: dict[str, Workflow]) -> None:
    """A workflow that names a skill nobody registered is a config error."""
    for name, workflow in workflows.items():
        for skill_name in workflow.skills or ():
            if skill_name not in registry:
                raise settings.problem(
                    ("workflows", name, "skills"),
                    f"there is no skill named {skill_name!r} "
                    f"(known: {', '.join(registry.names()) or 'none'})",
                )


@contextlib.contextmanager
def demo_device() -> Iterator[Path]:
    """The demo device's sysfs tree (``serve --demo``), in a directory of its own that is gone
    with the daemon (but for SIGKILL, or the rare exit that cannot wait for its threads)."""
    with tempfile.TemporaryDirectory(prefix="edge-agent-demo-") as place:
        tree = write_demo_device(Path(place) / "sys")
        log.warning(
            "demo device: the sensor skills read a simulated Raspberry Pi under %s, not this "
            "machine's sensors; every sensor result says so",
            tree,
        )
        yield tree


def assemble(
    config: str | Path | None,
    *,
    model: str | None = None,
    endpoints: list[str] | None = None,
    demo_device: Path | None = None,
) -> Server:
    """The daemon, ready to bind: ``model`` and ``endpoints`` override the config's, and
    ``demo_device`` (``serve --demo``) its sensors.

    Raises ConfigError for anything wrong in the config, the model spec or the workflows.
    """
    settings = load_settings(config)
    spec = model or settings.model.path
    load_model = model_factory(spec, settings)  # first: a model that cannot load stops it all
    registry = get_registry()
    problems = load_skills(registry, settings, demo_device)
    workflows = settings.make_workflows()
    check_workflows(settings, registry, workflows)
    check_triggers(settings.triggers, registry, workflows, settings.problem)
    options = ServerOptions(
        endpoints=endpoints or list(settings.daemon.endpoints) or [default_endpoint()],
        load_model=load_model,
        model_spec=spec,
        registry=registry,
        soul=settings.make_soul(),
        workflows=workflows,
        skill_problems=problems,
        demo=demo_device is not None,
    )
    return Server(settings, options)


__all__ = [
    "apply_timeouts",
    "assemble",
    "check_embedded_model",
    "check_workflows",
    "demo_device",
    "load_skills",
    "model_factory",
    "prefix_state_dir",
]
