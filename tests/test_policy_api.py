"""The public policy API (:mod:`aviary.policy`) is a promise: its names and signatures are held in a snapshot
(``tests/golden/policy_api.txt``) that changes only with ``API_VERSION``. The signatures are read from the
sources (``ast``), so the compiled build and the pure-Python one give the same text.

After a deliberate change: bump ``API_VERSION`` in ``policy.py``, then
``AVIARY_UPDATE_API=1 python -m pytest tests/test_policy_api.py`` writes the snapshot anew.
"""

from __future__ import annotations

import ast
import importlib
import os
from pathlib import Path

import aviary.policy as api

ROOT = Path(api.__file__).resolve().parent
SNAPSHOT = Path(__file__).parent / "golden" / "policy_api.txt"


def _sources() -> dict[str, str]:
    """Each public name -> the module it is defined in (from ``policy.py``'s own imports)."""
    tree = ast.parse((ROOT / "policy.py").read_text())
    where = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            for alias in node.names:
                where[alias.asname or alias.name] = "aviary." + node.module
    return where


def _args(fn: ast.FunctionDef) -> str:
    text = f"({ast.unparse(fn.args)})"
    return text + (f" -> {ast.unparse(fn.returns)}" if fn.returns is not None else "")


def _class(node: ast.ClassDef) -> list[str]:
    bases = ", ".join(ast.unparse(b) for b in [*node.bases, *node.keywords])
    lines = [f"class {node.name}({bases})"]
    for item in node.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            default = "" if item.value is None else f" = {ast.unparse(item.value)}"
            lines.append(f"    {item.target.id}: {ast.unparse(item.annotation)}{default}")
        elif isinstance(item, ast.Assign) and all(isinstance(t, ast.Name) for t in item.targets):
            names = [t.id for t in item.targets if not t.id.startswith("_")]  # type: ignore[attr-defined]
            lines += [f"    {n} = {ast.unparse(item.value)}" for n in names]
        elif isinstance(item, ast.FunctionDef) and (item.name == "__init__" or not item.name.startswith("_")):
            marks = "".join(f"@{ast.unparse(d)} " for d in item.decorator_list)
            lines.append(f"    {marks}def {item.name}{_args(item)}")
    return lines


def _definition(name: str, module: str) -> list[str]:
    path = ROOT.joinpath(*module.split(".")[1:]).with_suffix(".py")
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return _class(node)
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return [f"def {name}{_args(node)}"]
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == name and node.value:
            return [f"{name}: {ast.unparse(node.annotation)} = {ast.unparse(node.value)}"]
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return [f"{name} = {ast.unparse(node.value)}"]
    raise AssertionError(f"{name} is not defined at the top of {path}")


def surface() -> str:
    """The public API as text: its version, then each name of ``__all__`` with its signature, from source."""
    where = _sources()
    lines = [f"API_VERSION = {api.API_VERSION!r}"]
    for name in sorted(api.__all__):
        if name == "API_VERSION":
            continue
        module = where.get(name, "aviary.policy")
        lines += [f"# {module}", *_definition(name, module), ""]
    return "\n".join(lines) + "\n"


def test_the_public_names_are_exactly_those_of_all_and_each_exists():
    assert len(set(api.__all__)) == len(api.__all__)
    for name in api.__all__:
        assert hasattr(api, name), name
    public = {n for n in vars(api) if not n.startswith("_") and n != "annotations"}
    assert public == set(api.__all__), public ^ set(api.__all__)


def test_the_api_changes_only_with_its_version():
    now = surface()
    if os.environ.get("AVIARY_UPDATE_API"):
        SNAPSHOT.write_text(now)
    held = SNAPSHOT.read_text()
    held_version, now_version = held.splitlines()[0], now.splitlines()[0]
    body_changed = held.split("\n", 1)[1] != now.split("\n", 1)[1]
    assert not (body_changed and held_version == now_version), (
        "aviary.policy's names or signatures changed without API_VERSION changing: bump it in policy.py, "
        "then AVIARY_UPDATE_API=1 python -m pytest tests/test_policy_api.py"
    )
    assert now == held, "API_VERSION changed: regenerate the snapshot (AVIARY_UPDATE_API=1, see this module)"


def test_the_snapshot_is_read_from_source_files():
    """The compiled modules' sources are what the snapshot reads, so both builds hold one promise: the
    snapshot names only modules that exist as source files."""
    for module in set(_sources().values()):
        assert ROOT.joinpath(*module.split(".")[1:]).with_suffix(".py").is_file(), module
        importlib.import_module(module)


def test_a_plugin_imports_nothing_of_aviary_but_the_public_module():
    """The example and every template of ``aviary policy new`` import from ``aviary.policy`` alone."""
    files = [
        *(ROOT / "examples").rglob("*.py"),
        *(ROOT / "launch" / "cli" / "templates").glob("*.py.tmpl"),
    ]
    assert len(files) >= 5
    for path in files:
        tree = ast.parse(path.read_text().replace("${package}", "pkg"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for module in names:
                assert not module.startswith("aviary.") or module == "aviary.policy", (
                    f"{path}: imports {module}"
                )
