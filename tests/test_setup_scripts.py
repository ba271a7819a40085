"""The set-up and test scripts: any lint failure (ruff check, ruff format, import contracts, mypy, the
documentation site) fails the test command before pytest runs, and requirements.lock pins what
pyproject.toml asks for (~10 s).

scripts/test.sh and scripts/lint.sh run, unchanged, in a tiny copy of the repository (one module, a
one-page site) whose set-up scripts are stubs and whose .venv/bin holds the real ruff, mypy and mkdocs,
a fake `python` that only records that pytest would have run, and a stub `lint-imports` (the contracts
name the real package's rooms: `test_the_import_contracts_are_kept` runs the real one) that fails when
the source says so."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent


def tool(name: str) -> str:
    """The tool of the environment running the tests (.venv/bin), else the one on PATH."""
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    assert found, f"{name} is missing: bash scripts/setup.sh installs it into .venv"
    return found


def tree_with(tmp_path: Path, source: str, page: str = "# A page\n") -> Path:
    tree = tmp_path / "repo"
    (tree / "scripts").mkdir(parents=True)
    for script in ("test.sh", "lint.sh"):
        shutil.copy(ROOT / "scripts" / script, tree / "scripts" / script)
    for stub in ("setup.sh", "setup-docker.sh", "setup-browser.sh"):
        (tree / "scripts" / stub).write_text("exit 0\n")
    shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
    (tree / "__init__.py").write_text('"""A package."""\n')
    (tree / "mod.py").write_text(source)
    (tree / "mkdocs.yml").write_text("site_name: A site\n")
    (tree / "docs").mkdir()
    (tree / "docs" / "index.md").write_text(page)
    bin_dir = tree / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("ruff", "mypy", "mkdocs"):
        (bin_dir / name).symlink_to(tool(name))
    fake = bin_dir / "python"
    fake.write_text('#!/bin/sh\necho "$@" > "$(dirname "$0")/../../pytest-ran"\n')
    fake.chmod(0o755)
    stub = bin_dir / "lint-imports"
    stub.write_text('#!/bin/sh\n! grep -q "# broken contract" "$(dirname "$0")/../../mod.py" || '
                    '{ echo "Contracts: 2 kept, 1 broken."; exit 1; }\n')  # fmt: skip
    stub.chmod(0o755)
    return tree


def run_tests(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(tree / "scripts" / "test.sh"), "-k", "something"],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("import os\n", "F401"),  # ruff check: unused import
        ("x = 'a'\n", "reformat"),  # ruff format --check: quotes
        ('x: int = "a"\n', "Incompatible types"),  # mypy
        ("x = 1  # broken contract\n", "1 broken"),  # lint-imports
    ],
    ids=["ruff-check", "ruff-format", "mypy", "import-contracts"],
)
def test_a_lint_failure_fails_the_test_command(tmp_path, source, says):
    tree = tree_with(tmp_path, source)
    done = run_tests(tree)
    assert done.returncode != 0, done.stdout + done.stderr
    assert says.lower() in (done.stdout + done.stderr).lower()
    assert not (tree / "pytest-ran").exists()  # stopped at the lint, before pytest


def test_a_broken_link_in_the_docs_fails_the_test_command(tmp_path):
    tree = tree_with(tmp_path, "x: int = 1\n", page="# A page\n\nSee [the other page](other.md).\n")
    done = run_tests(tree)
    assert done.returncode != 0, done.stdout + done.stderr
    assert "other.md" in done.stderr
    assert not (tree / "pytest-ran").exists()


def test_a_clean_tree_goes_on_to_pytest_with_the_arguments(tmp_path):
    tree = tree_with(tmp_path, "x: int = 1\n")
    done = run_tests(tree)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tree / "pytest-ran").read_text().split() == ["-m", "pytest", "-q", "-k", "something"]


def locked() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"requirements.lock: not an exact pin: {line}"
            pins[canonicalize_name(name)] = version.strip()
    return pins


def test_the_lock_pins_every_dependency_and_dev_tool_within_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = locked()
    for spec in [*project["dependencies"], *project["optional-dependencies"]["dev"]]:
        req = Requirement(spec)
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is not in requirements.lock: bash scripts/setup.sh --update-lock"
        assert req.specifier.contains(pins[name], prereleases=True), f"locked {name}=={pins[name]} but {spec}"


@pytest.mark.skipif(
    Path(sys.prefix).resolve() != (ROOT / ".venv").resolve(), reason="not running in the project's .venv"
)
def test_the_project_environment_has_the_locked_versions():
    wrong = {}
    for name, version in locked().items():
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            have = "missing"
        if have != version:
            wrong[name] = (version, have)
    assert not wrong, f"(locked, installed): {wrong}; bash scripts/setup.sh"
    assert os.access(ROOT / ".venv" / "bin" / "aviary", os.X_OK)


def test_the_import_contracts_are_kept():
    """Layers, no import cycle, pure cores, faults outside the cores (pyproject.toml's [tool.importlinter],
    docs/architecture.md)."""
    done = subprocess.run([tool("lint-imports"), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 5 kept, 0 broken." in done.stdout


def test_set_up_writes_the_package_s_bytecode():
    """Where ``PYTHONDONTWRITEBYTECODE`` is set (CI machines) no import writes a ``.pyc``: ``setup.sh`` writes
    the package's, or every process would compile each module it imports from its source at its start."""
    import importlib.util

    import aviary.common.runtime
    import aviary.launch.drivers.process

    for module in (aviary.common.runtime, aviary.launch.drivers.process):
        assert Path(importlib.util.cache_from_source(module.__file__)).exists(), module.__name__
