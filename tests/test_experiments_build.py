"""Experiments and benchmarks run in the build a user gets: the compiled cores when scripts/setup.sh built
them (as in CI), and in pure Python. TetriSched's benchmark once crashed only compiled (a deepcopy of a
core)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


@pytest.mark.parametrize("pure", [False, True], ids=["default-build", "pure-python"])
def test_bench_tetrisched_runs_both_cycles_at_a_tiny_size(pure):
    env = {k: v for k, v in os.environ.items() if k != "AVIARY_PURE_PYTHON"}
    if pure:
        env["AVIARY_PURE_PYTHON"] = "1"
    cmd = [sys.executable, "-m", "aviary.benchmarks.central_policies", "tetrisched", "--pending", "6"]
    cmd += ["--nodes", "20"]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = [line.split("|")[1:-1] for line in done.stdout.splitlines() if line.startswith("| 20 |")]
    assert [r[3].strip() for r in rows] == ["1", "2"]  # both cycles, each solved three ways
    for row in rows:  # cold / greedy start / default: three solves, each with a plan of positive value
        objectives = [float(x.replace(",", "")) for x in row[9].split("/")]
        assert len(objectives) == 3 and min(objectives) > 0


def test_bench_codec_times_both_codecs_on_every_kind_with_the_same_values():
    """The earlier revision's codec is loaded from git beside today's; each kind round-trips in both
    (the module asserts it), and the frames of the same values are as long. Kinds added since (the
    central scheduler's recovery, the links) are timed with today's codec alone."""
    from aviary.benchmarks.wire.codec import table
    from aviary.common.messages import MESSAGE_TYPES

    rows = [line.split("|")[1:-1] for line in table(number=20).splitlines()[2:]]
    kinds = [r[0].strip().removesuffix(" (new)") for r in rows[:-1]]
    assert kinds == [cls.__name__ for cls in MESSAGE_TYPES]
    new = [r for r in rows[:-1] if r[0].strip().endswith("(new)")]
    assert [r[0].strip() for r in new] == [
        "TaskRecords (new)",
        "Recover (new)",
        "GetHolding (new)",
        "Holding (new)",
        "Link (new)",
        "LinkFaults (new)",
    ]
    for row in new:
        assert row[1].strip() == "—" and float(row[3].replace(",", "")) > 0
    # The same size: protocol 1 has its version inside the array, 2 before it; Register gained a field
    # (``recovering``, issue 26), Counters one (``gauges``, issue 29) and Hello one (``tasks``, the task
    # table), one byte each.
    for row in [r for r in rows[:-1] if r not in new]:
        before, after = int(row[2]), int(row[4])
        after -= row[0].strip() in ("Register", "Counters", "Hello")
        assert after == before and float(row[1].replace(",", "")) > 0 and float(row[3].replace(",", "")) > 0


def test_every_experiments_module_imports_in_the_default_build():
    """Each script of ``experiments/`` and each module of ``benchmarks/`` (but a ``__main__``, which runs
    its command) imports in the build a user gets (the compiled cores where built), in one process, and
    says which one failed."""
    from pathlib import Path

    root = Path(__file__).parent.parent
    names = sorted(f"experiments.{p.stem}" for p in (root / "experiments").glob("*.py"))
    assert len(names) > 15
    modules = [p.relative_to(root).with_suffix("") for p in (root / "benchmarks").rglob("*.py")]
    benchmarks = sorted(".".join(m.parts).removesuffix(".__init__") for m in modules if m.name != "__main__")
    assert len(benchmarks) > 20 and "benchmarks.wire.codec" in benchmarks
    names += benchmarks
    code = (
        "import importlib, sys\n"
        "from aviary import speedups\n"
        "for name in sys.argv[1:]:\n"
        "    importlib.import_module(f'aviary.{name}')\n"
        "print(speedups.ACTIVE)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "AVIARY_PURE_PYTHON"}
    done = subprocess.run(
        [sys.executable, "-c", code, *names], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() in ("compiled", "pure")
