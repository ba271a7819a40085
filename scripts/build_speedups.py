"""Compile the simulator's hot cores with mypyc (aviary/speedups.py says which and how they are chosen).

    .venv/bin/python scripts/build_speedups.py          # build when a source changed (else ~0.1 s)
    .venv/bin/python scripts/build_speedups.py --force  # build anyway
    .venv/bin/python scripts/build_speedups.py --clean  # remove the compiled modules (pure Python)

A failed build (no gcc, no Python headers) is not retried for the same sources unless --force.

Run by scripts/setup.sh. The package maps to the repository's folder, so the build runs in
a temporary folder, where a link named aviary points back here (as scripts/lint.sh checks types; its
log: build/speedups.log); the
extension modules are copied next to their sources, then the manifest (_speedups.json) is written last,
so an interrupted build leaves the pure-Python path in use. Exits non-zero when the build fails.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("_aviary_speedups", ROOT / "speedups.py")
assert spec is not None and spec.loader is not None
speedups = importlib.util.module_from_spec(spec)
spec.loader.exec_module(speedups)

LOG = ROOT / "build" / "speedups.log"
FAILED = ROOT / "build" / "speedups.failed"  # what a failed build was for: not retried unless --force

SETUP = """
import sys
from setuptools import setup
from mypyc.build import mypycify

paths = sys.argv[1:]
sys.argv = sys.argv[:1]
setup(
    name="aviary-speedups",
    ext_modules=mypycify(paths, group_name="aviary._speedups", opt_level="3"),
    script_args=["build_ext", "--inplace", "--build-temp", "build/temp"],
)
"""


def compiled_files() -> list[Path]:
    """Every extension module in the package (for --clean and before a new build): the package ships
    none but the build's, so this also finds those of modules compiled by an older :data:`MODULES`
    (another checkout), which would otherwise shadow their sources."""
    suffixes = tuple(__import__("importlib.machinery").machinery.EXTENSION_SUFFIXES)
    folders, i = [ROOT], 0
    while i < len(folders):  # the package and its sub-packages, at any depth (launch/drivers/)
        folders += [d for d in folders[i].iterdir() if d.is_dir() and (d / "__init__.py").is_file()]
        i += 1
    return [p for d in folders for p in d.iterdir() if p.name.endswith(suffixes)]


def clean() -> None:
    speedups.MANIFEST.unlink(missing_ok=True)
    for p in compiled_files():
        p.unlink()


def up_to_date() -> bool:
    try:
        manifest = json.loads(speedups.MANIFEST.read_text())
    except (OSError, ValueError):
        return False
    return (
        manifest.get("interpreter") == speedups.interpreter_tag()
        and manifest.get("modules") == speedups.source_hashes()
        and {p.with_name(p.name.split(".")[0]) for p in compiled_files()}
        == {ROOT.joinpath(*m.split(".")) for m in speedups.MODULES} | {ROOT / "_speedups__mypyc"}
    )


HEAVY = ("bokeh", "selenium", "trio", "narwhals", "dask", "distributed", "matplotlib", "asyncssh")
"""Libraries only the launcher's other modules use: not followed (mypy would read their thousands of files
for the compiled modules' import graph, which reaches ``aviary.api``; Bokeh and Selenium once made the
build take 10 minutes instead of one)."""
MYPY_INI = "[mypy]\npython_version = 3.11\nignore_missing_imports = True\n" + "".join(
    f"[mypy-{name},{name}.*]\nfollow_imports = skip\n" for name in HEAVY
)


def build() -> None:
    hashes = speedups.source_hashes()  # what is compiled (a source edited meanwhile: stale, not wrong)
    clean()
    LOG.parent.mkdir(parents=True, exist_ok=True)
    # Outside the repository: mypy names modules by the folders holding __init__.py above them.
    with tempfile.TemporaryDirectory(prefix="aviary-speedups-") as stage:
        (Path(stage) / "aviary").symlink_to(ROOT, target_is_directory=True)
        (Path(stage) / "mypy.ini").write_text(MYPY_INI)
        (Path(stage) / "setup_speedups.py").write_text(SETUP)
        paths = ["aviary/" + m.replace(".", "/") + ".py" for m in speedups.MODULES]
        with open(LOG, "w") as out:
            done = subprocess.run(
                [sys.executable, "setup_speedups.py", *paths], cwd=stage, stdout=out, stderr=subprocess.STDOUT
            )
    manifest = {"interpreter": speedups.interpreter_tag(), "modules": hashes}
    if done.returncode != 0:
        clean()
        FAILED.write_text(json.dumps(manifest))
        last = (LOG.read_text().strip().splitlines() or [""])[-1]
        raise SystemExit(f"build_speedups: mypyc build failed (log: {LOG}): {last[:160]}")
    FAILED.unlink(missing_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=ROOT, delete=False, suffix=".tmp") as f:
        json.dump(manifest, f, indent=1)
    os.replace(f.name, speedups.MANIFEST)


def main(argv: list[str]) -> int:
    if "--clean" in argv:
        clean()
        print("build_speedups: removed the compiled modules (pure Python from now on)", file=sys.stderr)
        return 0
    if "--force" not in argv and up_to_date():
        return 0
    if "--force" not in argv and FAILED.exists():
        current = {"interpreter": speedups.interpreter_tag(), "modules": speedups.source_hashes()}
        if json.loads(FAILED.read_text() or "{}") == current:
            print(
                f"build_speedups: not retried: the build of these sources failed ({LOG}; --force)",
                file=sys.stderr,
            )
            return 1
    started = time.monotonic()
    build()
    print(
        f"build_speedups: compiled {len(speedups.MODULES)} modules with mypyc in "
        f"{time.monotonic() - started:.0f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
