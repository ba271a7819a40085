"""The house rule (DESIGN §2, h11's rule made a test): policy cores do no I/O, so they import nothing
that touches sockets, clocks, processes or files."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
IO_MODULES = {"socket", "zmq", "asyncio", "uvloop", "time", "os", "subprocess", "psutil", "docker"}
IO_MODULES |= {"pathlib", "threading", "signal", "shutil", "tempfile", "io", "select", "selectors"}
CORES = [
    *sorted((ROOT / "central").glob("*.py")),
    *sorted((ROOT / "distributed").glob("*.py")),
    *(
        ROOT / "worker" / f"{m}.py"
        for m in ("node_monitor", "hybrid", "las", "queues", "stealing", "resource_node")
    ),
    *(ROOT / "common" / f"{m}.py" for m in ("core", "effects", "model", "resources", "params", "frontend")),
]


@pytest.mark.parametrize("path", CORES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_core_imports_no_io_module(path):
    imported = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported.add(node.module.split(".")[0])
    assert not imported & IO_MODULES, f"{path.name} imports {sorted(imported & IO_MODULES)}"
    assert "open(" not in path.read_text(), f"{path.name} opens a file"
