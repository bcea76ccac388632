"""llama.cpp's C functions (``llama_cpp.llama_cpp``) without llama-cpp-python's high-level API.

``import llama_cpp`` runs the package's ``__init__``, which loads its ``Llama`` class and with it
jinja2, the chat formats and the rest: memory the daemon never uses. When nothing
has imported the package yet, it is registered here as a bare package (its path, not its
``__init__``), so importing the bindings loads only them. The first public attribute asked of the
bare package that it lacks runs the real ``__init__`` into it, so other code in the same process
that does ``import llama_cpp; llama_cpp.Llama(...)`` still works.

Import submodules by their full name (``import llama_cpp.x``); ``from llama_cpp import x`` asks
the package for ``x`` first and so loads the whole of it.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any


def _register_bare_package() -> None:
    if "llama_cpp" in sys.modules:
        return
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        return
    package = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def complete(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        # Run the real __init__ once, into this same module object, then answer from it.
        del package.__dict__["__getattr__"]
        loader.exec_module(package)
        return getattr(package, name)

    package.__dict__["__getattr__"] = complete
    sys.modules["llama_cpp"] = package


_register_bare_package()
llama_cpp: types.ModuleType = importlib.import_module("llama_cpp.llama_cpp")
"""The ctypes bindings: every ``llama_*`` function, struct and constant."""
_package = sys.modules["llama_cpp"]
if "__getattr__" in _package.__dict__:
    # What the real __init__'s ``from .llama_cpp import *`` gives the package, which the
    # package's own modules (its log hook) read from it.
    _package.__dict__.update(
        {name: value for name, value in vars(llama_cpp).items() if not name.startswith("_")}
    )
logger: types.ModuleType = importlib.import_module("llama_cpp._logger")
"""llama-cpp-python's log hook (installed by its import); ``set_verbose`` turns it on or off."""

__all__ = ["llama_cpp", "logger"]
