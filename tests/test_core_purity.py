"""The house rule (DESIGN §2, h11's rule made a test): policy cores do no I/O, so they import nothing
that touches sockets, clocks, processes or files, and call no ``open`` or ``print``. The scan is the
conformance kit's (``aviary policy check``'s purity, :mod:`aviary.launch.check.purity`): one
implementation for the project's cores and every plug-in's."""

from __future__ import annotations

from pathlib import Path

import pytest

from aviary.launch.check import cores_of
from aviary.launch.check.purity import core_modules, static_violations
from aviary.launch.policies.registry import BUILTIN, get_policy

ROOT = Path(__file__).resolve().parent.parent
CORES = [
    *sorted((ROOT / "central").glob("*.py")),
    *sorted((ROOT / "distributed").glob("*.py")),
    *(
        ROOT / "worker" / f"{m}.py"
        for m in ("node_monitor", "hybrid", "las", "queues", "stealing", "resource_node")
    ),
    *(ROOT / "common" / f"{m}.py" for m in ("core", "effects", "model", "resources", "params", "frontend")),
]


def module_name(path: Path) -> str:
    return ".".join(["aviary", *path.relative_to(ROOT).with_suffix("").parts])


@pytest.mark.parametrize("path", CORES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_core_imports_no_io_module(path):
    assert static_violations([module_name(path)]) == []


@pytest.mark.parametrize("policy", BUILTIN)
def test_every_builtin_policys_cores_are_what_the_kit_scans_and_pure(policy):
    """The kit finds a policy's modules from its declaration (the cores it builds and what they import
    inside the package): for every built-in, modules of the pure rooms only, none doing I/O."""
    modules = core_modules(cores_of(get_policy(policy)))
    assert modules and all(
        m.startswith(("aviary.central", "aviary.distributed", "aviary.worker", "aviary.common"))
        for m in modules
    )
    assert static_violations(modules) == []


def test_the_scan_names_a_forbidden_import_and_call(tmp_path, monkeypatch):
    (tmp_path / "impure_core.py").write_text(
        "import os\nfrom time import monotonic\n\n\ndef f():\n    print(open('x'))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    found = static_violations(["impure_core"])
    path = tmp_path / "impure_core.py"
    imports = [f"{path}:1: imports os", f"{path}:2: imports time", f"{path}:2: imports time.monotonic"]
    assert found == sorted([*imports, f"{path}:6: calls open()", f"{path}:6: calls print()"])
