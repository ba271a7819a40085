"""The compiled build of the simulator's hot cores (issue 12, "simulator speed"): which modules mypyc
compiles, and which build Python imports.

``bash scripts/setup.sh`` runs ``scripts/build_speedups.py``, which compiles :data:`MODULES` with mypyc
(shipped with mypy, a development dependency) into C extension modules next to their sources (one
shared library ``_speedups__mypyc*.so`` at the top of the package and a small ``<module>*.so`` beside
each ``.py``), and writes :data:`MANIFEST` with the SHA-256 of every compiled source. The sources stay
the reference: the compiled modules are the same code, and results are byte-identical either way.

Which one is imported is decided once, when ``aviary`` is imported (:func:`choose`):

- the compiled modules, when the manifest exists, was built for this interpreter and every source
  still hashes as it did when compiled;
- else the pure-Python sources: ``AVIARY_PURE_PYTHON=1`` forces this; a source edited since the build
  (or a build for another interpreter) falls back to it by itself, all modules at once, since the
  compiled modules call each other directly. ``bash scripts/setup.sh`` rebuilds.

:data:`ACTIVE` says which build runs (``"compiled"`` or ``"pure"``) and :data:`REASON` why.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

__all__ = ["ACTIVE", "MANIFEST", "MODULES", "REASON", "choose", "source_hashes"]

ROOT = Path(__file__).resolve().parent
"""The folder that is the ``aviary`` package."""

MODULES = (
    "common.draws",
    "common.effects",
    "common.core",
    "worker.queues",
    "worker.stealing",
    "worker.hybrid",
    "worker.node_monitor",
    "worker.holdings",
    "distributed.sparrow",
    "distributed.hawk",
    "distributed.eagle",
    "launch.drivers.sim",
    "central.state",
    "central.lwl",
    "common.tasktable",
    "common.usage",
)
"""The compiled modules, relative to the package (what ``aviary replay --runtime sim`` spends its time
in for Sparrow, Hawk and Eagle: the simulator, the nodes and their record of centrally placed tasks,
the distributed schedulers and the central LWL of Hawk and Eagle), the task table's recorder that
watches every node, and the multi-resource usage metrics the summary of a DAG replay computes over
every task."""

MANIFEST = ROOT / "_speedups.json"
"""Written by the build: the interpreter it was built for and the hash of every compiled source."""

ENV_PURE = "AVIARY_PURE_PYTHON"

ACTIVE = "pure"
REASON = "not chosen yet"


def source_hashes(modules: Sequence[str] = MODULES) -> dict[str, str]:
    """SHA-256 of each module's source file, by module name."""
    out = {}
    for m in modules:
        path = ROOT.joinpath(*m.split(".")).with_suffix(".py")
        out[m] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def interpreter_tag() -> str:
    """What a build must match: the extension suffix (implementation, version, ABI, platform)."""
    return importlib.machinery.EXTENSION_SUFFIXES[0]


class _PureFinder:  # a meta path finder needs only find_spec (importlib.abc costs ~20 ms to import)
    """Finds the compiled modules' ``.py`` sources before the path finder finds their ``.so``."""

    def __init__(self, names: dict[str, Path]) -> None:
        self.names = names

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        source = self.names.get(fullname)
        if source is None:
            return None
        return importlib.util.spec_from_file_location(fullname, source)


def _compiled_ok() -> str | None:
    """None when the compiled build matches the sources and this interpreter, else why not."""
    if os.environ.get(ENV_PURE, "") not in ("", "0"):
        return f"{ENV_PURE} is set"
    try:
        manifest = json.loads(MANIFEST.read_text())
    except FileNotFoundError:
        return "not built (bash scripts/setup.sh builds it)"
    except (OSError, ValueError) as exc:
        return f"unreadable {MANIFEST.name}: {exc}"
    if manifest.get("interpreter") != interpreter_tag():
        return f"built for another interpreter ({manifest.get('interpreter')})"
    if manifest.get("modules") != source_hashes():
        return "sources changed since the build (bash scripts/setup.sh rebuilds it)"
    return None


def choose(package: str = "aviary") -> str:
    """Decide which build the modules of :data:`MODULES` are imported from (once per process)."""
    global ACTIVE, REASON
    if any(isinstance(f, _PureFinder) for f in sys.meta_path):
        return ACTIVE
    why = _compiled_ok()
    if why is None:
        ACTIVE, REASON = "compiled", f"mypyc build of {len(MODULES)} modules"
        return ACTIVE
    ACTIVE, REASON = "pure", why
    names = {f"{package}.{m}": ROOT.joinpath(*m.split(".")).with_suffix(".py") for m in MODULES}
    sys.meta_path.insert(0, _PureFinder(names))
    return ACTIVE
