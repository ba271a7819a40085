"""Purity: a policy's cores do no I/O (DESIGN §2). Statically, their modules import no socket, clock, file,
process or thread module and call no ``open``/``print``/``input``; at run time, a replay under a guard
records any call of such a function made from their code.

Which modules are a policy's: the modules of the classes of the cores its builders make (and of their
base classes), and what those modules import inside their own top-level package, transitively: Aviary's
own modules for a built-in, the plug-in's package for a plug-in (``aviary.policy`` is Aviary's, not the
plug-in's)."""

from __future__ import annotations

import ast
import builtins
import contextlib
import importlib.util
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ...common.core import Core

IO_MODULES = frozenset(
    {"socket", "zmq", "asyncio", "uvloop", "time", "os", "subprocess", "psutil", "docker", "pathlib"}
    | {"threading", "signal", "shutil", "tempfile", "io", "select", "selectors", "multiprocessing"}
    | {"datetime", "urllib", "http", "requests", "sqlite3", "concurrent"}
)
"""Modules a core may not import: sockets, clocks, files, processes, threads."""
IO_CALLS = frozenset({"open", "print", "input", "breakpoint"})
"""Built-in functions a core may not call."""


def module_file(name: str) -> Path | None:
    """The source file of the module ``name`` (None: not a module, or one without a Python source). A
    compiled module (the mypyc build) is read from its source beside it, found through its package."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):  # a name imported from a module, not a module
        return None
    if spec is None or spec.origin is None:
        return None
    if spec.origin.endswith(".py"):
        return Path(spec.origin)
    parent, _, last = name.rpartition(".")
    folders = list(getattr(sys.modules.get(parent), "__path__", [])) or [str(Path(spec.origin).parent)]
    for folder in folders:
        candidate = Path(folder) / f"{last}.py"
        if candidate.is_file():
            return candidate
    return None


def _imports(tree: ast.AST, module: str) -> list[tuple[str, int]]:
    """``(imported module, line)`` of every import in ``tree`` (relative ones resolved against ``module``)."""
    out = []
    package = module.rsplit(".", 1)[0] if "." in module else module
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                name = ".".join([*base, *([node.module] if node.module else [])])
            else:
                name = node.module or ""
            out.append((name, node.lineno))
            out += [(f"{name}.{a.name}", node.lineno) for a in node.names]  # a submodule imported by name
    return out


def core_modules(cores: list[Core]) -> list[str]:
    """The modules of ``cores``' classes and bases, and what they import inside their own top-level
    package, transitively (in the order found)."""
    seen: list[str] = []
    todo = [k.__module__ for core in cores for k in type(core).__mro__ if k not in (Core, object)]
    while todo:
        name = todo.pop(0)
        if name in seen or name == "aviary.policy" or name.startswith("aviary.launch"):
            continue
        path = module_file(name)
        if path is None:
            continue
        seen.append(name)
        top = name.split(".")[0]
        for imported, _ in _imports(ast.parse(path.read_text()), name):
            if imported.split(".")[0] == top and module_file(imported) is not None:
                todo.append(imported)
    return seen


def static_violations(modules: list[str]) -> list[str]:
    """One line per forbidden import or call in the modules' sources: ``file:line: what``."""
    out = []
    for name in modules:
        path = module_file(name)
        assert path is not None
        tree = ast.parse(path.read_text())
        for imported, line in _imports(tree, name):
            if imported.split(".")[0] in IO_MODULES:
                out.append(f"{path}:{line}: imports {imported}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in IO_CALLS:
                out.append(f"{path}:{node.lineno}: calls {node.func.id}()")
    return sorted(set(out))


GUARDED: list[tuple[Any, str]] = [
    (time, "time"),
    (time, "monotonic"),
    (time, "perf_counter"),
    (time, "sleep"),
    (time, "time_ns"),
    (time, "monotonic_ns"),
    (builtins, "open"),
    (builtins, "print"),
    (builtins, "input"),
    (socket, "socket"),
    (socket, "create_connection"),
    (subprocess, "Popen"),
    (subprocess, "run"),
    (threading.Thread, "start"),
]
"""The functions the run-time guard watches: a call of one of them from a core's module is recorded."""


@contextlib.contextmanager
def guard(modules: list[str]) -> Iterator[list[str]]:
    """While inside, record (``file:line: calls module.function``) every call of a :data:`GUARDED`
    function made directly from code of ``modules``; the calls still happen (the driver's own use of the
    clock and the files is not theirs)."""
    wanted = set(modules)
    calls: list[str] = []
    saved = []

    def watch(owner: Any, attr: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def watched(*args: Any, **kwargs: Any) -> Any:
            frame = sys._getframe(1)
            if frame.f_globals.get("__name__") in wanted:
                where = f"{frame.f_code.co_filename}:{frame.f_lineno}"
                calls.append(f"{where}: calls {getattr(owner, '__name__', owner)}.{attr}()")
            return original(*args, **kwargs)

        return watched

    for owner, attr in GUARDED:
        original = getattr(owner, attr)
        saved.append((owner, attr, original))
        setattr(owner, attr, watch(owner, attr, original))
    try:
        yield calls
    finally:
        for owner, attr, original in saved:
            setattr(owner, attr, original)
