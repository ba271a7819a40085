"""``aviary policy list`` (built-in and installed policies, with where each comes from) and ``aviary policy
new NAME --kind central|distributed|node`` (an installable plug-in package: a working minimal policy of
that kind, its unit tests against the public API :mod:`aviary.policy`, a README), from the templates
beside this module."""

from __future__ import annotations

import re
import shutil
import textwrap
from pathlib import Path
from string import Template

from ...common.declaration import Policy
from ..flags.spec import UsageError
from ..policies.registry import BUILTIN, NAME, POLICIES, installed

TEMPLATES = Path(__file__).parent / "templates"
KINDS = {
    "central": (
        "central",
        "test_placing",
        "least loaded: each task to the node with the fewest unfinished tasks",
    ),
    "distributed": ("scheduler", "test_placing", "random placement: each task to a random node"),
    "node": ("node", "test_node", "Sparrow's probes, served shortest estimate first on each node"),
}
"""Each kind's role (the core the template writes), its test template and what the template does."""


def roles(policy: Policy) -> str:
    """What a policy schedules with: ``distributed``, ``central`` or ``hybrid`` (both), ``+node`` when it
    has a node monitor of its own."""
    kind = {(True, False): "distributed", (False, True): "central"}.get(
        (policy.scheduler is not None, policy.central is not None), "hybrid"
    )
    return kind + "+node" * (policy.node is not None)


def policy_list(*, width: int = 100) -> tuple[str, list[str]]:
    """The table of every policy (built-ins first), and one line per installed plug-in that fails to load."""
    _, errors = installed()
    rows = [(p.name, roles(p), p.origin, p.summary) for p in POLICIES.values()]
    w = [max(len(r[i]) for r in [("policy", "kind", "from", ""), *rows]) for i in range(3)]
    head = f"{'policy':<{w[0]}}  {'kind':<{w[1]}}  {'from':<{w[2]}}  what it is"
    lines = [head]
    indent = sum(w) + 6
    for name, role, origin, summary in rows:
        text = textwrap.wrap(summary, max(30, width - indent)) or [""]
        lines.append(f"{name:<{w[0]}}  {role:<{w[1]}}  {origin:<{w[2]}}  {text[0]}")
        lines += [" " * indent + more for more in text[1:]]
    plugins = len(rows) - len(BUILTIN)
    lines.append(
        f"\n{len(BUILTIN)} built-in, {plugins} installed plug-in{'s' * (plugins != 1)}; "
        "a plug-in not installed runs as --policy module:attribute or path/to/file.py:attribute"
    )
    return "\n".join(lines), errors


def package_name(name: str) -> str:
    """The Python package a policy name gets: lower case, ``_`` for what an identifier cannot hold."""
    package = re.sub(r"\W", "_", name.lower())
    return package if package[0].isalpha() else "policy_" + package


def new_policy(name: str, kind: str, parent: Path) -> Path:
    """Write the plug-in package ``parent/name`` of a ``kind`` policy; one-line ``UsageError`` when the
    name is not a policy name, is taken by a built-in, or the folder exists and is not empty."""
    if not NAME.fullmatch(name):
        raise UsageError(
            f"policy name {name!r}: letters, digits and . _ + - (up to 64), a letter or digit first"
        )
    if name in BUILTIN:
        raise UsageError(f"policy name {name!r} is a built-in policy's: choose another")
    folder = parent / name
    if folder.exists() and any(folder.iterdir()):
        raise UsageError(f"{folder}: exists and is not empty")
    role, test, summary = KINDS[kind]
    package = package_name(name)
    values = {
        "name": name,
        "kind": kind,
        "role": role,
        "package": package,
        "dist": f"aviary-{package.replace('_', '-')}",
        "summary": summary,
        "folder": str(folder) if parent != Path(".") else name,
    }

    def write(template: str, target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(Template((TEMPLATES / template).read_text()).substitute(values))

    try:
        write(f"{kind}.py.tmpl", folder / package / "__init__.py")
        write(f"{test}.py.tmpl", folder / "tests" / f"test_{package}.py")
        write("pyproject.toml.tmpl", folder / "pyproject.toml")
        write("README.md.tmpl", folder / "README.md")
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder
