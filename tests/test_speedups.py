"""The compiled build of the hot cores (aviary/speedups.py): chosen only when it matches the sources,
forced off by AVIARY_PURE_PYTHON, and a simulated replay gives byte-identical results either way."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from aviary import speedups

ROOT = Path(speedups.__file__).parent
WHICH = "import aviary.speedups as s, aviary.worker.queues as q; print(s.ACTIVE, q.__file__)"


def run_python(code: str, **env: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def test_pure_python_is_forced_by_the_environment() -> None:
    active, where = run_python(WHICH, AVIARY_PURE_PYTHON="1").split()
    assert active == "pure"
    assert where.endswith("queues.py")


def test_a_build_that_does_not_match_the_sources_is_not_used(tmp_path: Path, monkeypatch) -> None:
    manifest = tmp_path / "_speedups.json"
    monkeypatch.setattr(speedups, "MANIFEST", manifest)
    monkeypatch.delenv(speedups.ENV_PURE, raising=False)
    assert "not built" in (speedups._compiled_ok() or "")
    hashes = speedups.source_hashes()
    manifest.write_text(json.dumps({"interpreter": speedups.interpreter_tag(), "modules": hashes}))
    assert speedups._compiled_ok() is None
    edited = {**hashes, "worker.queues": "0" * 64}
    manifest.write_text(json.dumps({"interpreter": speedups.interpreter_tag(), "modules": edited}))
    assert "sources changed" in (speedups._compiled_ok() or "")
    manifest.write_text(json.dumps({"interpreter": ".cpython-39-other.so", "modules": hashes}))
    assert "another interpreter" in (speedups._compiled_ok() or "")
    monkeypatch.setenv(speedups.ENV_PURE, "1")
    manifest.write_text(json.dumps({"interpreter": speedups.interpreter_tag(), "modules": hashes}))
    assert speedups._compiled_ok() == f"{speedups.ENV_PURE} is set"


@pytest.fixture
def compiled_build() -> None:
    """Skip without a compiled build in use; fail instead in CI (.ci/run sets AVIARY_REQUIRE_BUILD=1), where
    scripts/setup.sh must have built it (it only warns when mypyc fails)."""
    if speedups.ACTIVE != "compiled":
        reason = f"no compiled build in use ({speedups.REASON})"
        if os.environ.get("AVIARY_REQUIRE_BUILD") == "1":
            pytest.fail(f"AVIARY_REQUIRE_BUILD=1 but {reason}")
        pytest.skip(reason)


needs_build = pytest.mark.usefixtures("compiled_build")


@needs_build
def test_the_compiled_modules_are_the_ones_imported() -> None:
    active, where = run_python(WHICH, AVIARY_PURE_PYTHON="0").split()
    assert active == "compiled"
    assert where.endswith(".so")


@needs_build
@pytest.mark.parametrize("policy", ["sparrow", "hawk", "eagle"])
def test_compiled_and_pure_replays_write_the_same_jobs_and_tasks(policy: str, tmp_path: Path) -> None:
    aviary = [sys.executable, "-m", "aviary.launch.cli"]
    args = ["replay", "--runtime", "sim", "--nodes", "200", "--jobs", "400", "--policy", policy, "--quiet"]
    for build in ("compiled", "pure"):
        env = {**os.environ, speedups.ENV_PURE: "1" if build == "pure" else "0"}
        subprocess.run(
            [*aviary, *args, "--out", str(tmp_path / build)], env=env, check=True, capture_output=True
        )
    compiled = (tmp_path / "compiled" / "jobs.csv").read_bytes()
    assert compiled.count(b"\n") > 400
    assert compiled == (tmp_path / "pure" / "jobs.csv").read_bytes()
    tasks = (tmp_path / "compiled" / "tasks.csv").read_bytes()
    assert tasks.count(b"\n") > 400 and tasks == (tmp_path / "pure" / "tasks.csv").read_bytes()


def test_randbelow_draws_what_randrange_draws() -> None:
    from aviary.common.draws import randbelow

    ours, theirs = random.Random(7), random.Random(7)
    for n in [1, 2, 3, 7, 8, 100, 5000, 12500, 2**40 + 3] * 50:
        assert randbelow(ours, n) == theirs.randrange(n)
    assert ours.getstate() == theirs.getstate()


def test_sample_draws_what_random_sample_draws() -> None:
    """Both of random.py's ways (a pool for small populations, a set of taken indexes for large ones)."""
    from aviary.common.draws import sample

    ours, theirs = random.Random(11), random.Random(11)
    for n in [1, 5, 21, 22, 40, 200, 5000, 12500]:
        population = [f"n{i}" for i in range(n)]
        for k in sorted({k for k in (0, 1, 2, 5, 6, n // 3, n // 2, n) if k <= n}):
            for _ in range(20):
                assert sample(ours, population, k) == theirs.sample(population, k), (n, k)
    assert ours.getstate() == theirs.getstate()
    with pytest.raises(ValueError):
        sample(ours, ["a"], 2)


def test_a_module_compiled_by_an_older_build_is_found_and_makes_the_build_stale(
    tmp_path: Path, monkeypatch
) -> None:
    """An extension module left by a build whose MODULES listed more (another checkout) would shadow its
    source: the set-up's build must find it (to remove it) and build again."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_build_speedups", ROOT / "scripts" / "build_speedups.py")
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    so = speedups.interpreter_tag()
    find = build.compiled_files

    if speedups.ACTIVE == "compiled":
        assert build.up_to_date()
        current = find()
        monkeypatch.setattr(build, "compiled_files", lambda: [*current, ROOT / "common" / f"messages{so}"])
        assert not build.up_to_date()

    (tmp_path / "common").mkdir()
    (tmp_path / ".venv").mkdir()
    ours = [
        tmp_path / f"_speedups__mypyc{so}",
        tmp_path / "common" / f"queues{so}",
        tmp_path / "common" / f"old{so}",
    ]
    for f in [*ours, tmp_path / "common" / "__init__.py", tmp_path / ".venv" / f"other{so}"]:
        f.write_text("")
    monkeypatch.setattr(build, "ROOT", tmp_path)
    assert sorted(find()) == sorted(ours)


def test_compiled_and_pure_dag_replays_write_the_same_summary(tmp_path: Path) -> None:
    """The usage metrics (common/usage.py, compiled) over every task of a DAG replay: the same floats."""
    aviary = [sys.executable, "-m", "aviary.launch.cli"]
    args = ["replay", "--runtime", "sim", "--policy", "drf", "--workload", "tpch", "--jobs", "30", "--quiet"]
    summaries = []
    for build in ("compiled", "pure"):
        env = {**os.environ, speedups.ENV_PURE: "1" if build == "pure" else "0"}
        subprocess.run(
            [*aviary, *args, "--nodes", "10", "--out", str(tmp_path / build)],
            env=env,
            check=True,
            capture_output=True,
        )
        summary = json.loads((tmp_path / build / "summary.json").read_text())
        summaries.append({k: v for k, v in summary.items() if k not in ("wall_seconds", "extra")})
    assert summaries[0]["fairness"]["windows"] > 0 and summaries[0] == summaries[1]
