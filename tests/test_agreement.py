"""Integration: the real runtime and the simulator agree on the same scaled Google sample (Sparrow,
20 nodes, load 0.8), within bounds derived from the measured run-to-run spread (issue 28).

Measured real / simulated short-job percentiles over four real runs (2026-11-23; two on 2026-11-26 with
another experiment on the second core; one in a fresh-clone CI run, alone): p50 1.080, 1.051, 1.039,
1.130; p90 0.990, 0.996, 0.983, 1.010. The real runtime is slower at the median (several hand-outs per
task, each ~1 ms instead of the simulator's 0.5 ms per message), by an amount that varies from run to
run, while the simulator's own p50 moves by only 1.3 % between 0.5 and 5 ms per message. Bounds: the
measured range widened by its own width on each side: p50 in [0.95, 1.22], p90 in [0.95, 1.05]."""

from __future__ import annotations

import pytest

from aviary.benchmarks.agreement import class_percentiles, run

pytestmark = pytest.mark.integration


def test_real_and_simulated_sparrow_agree_on_short_jobs(tmp_path):
    runs = run(tmp_path, load=0.8)
    real, sim = runs["real"]["short"], runs["sim"]["short"]
    assert 0.95 <= real["p50"] / sim["p50"] <= 1.22, (real, sim)
    assert 0.95 <= real["p90"] / sim["p90"] <= 1.05, (real, sim)
    # Both wrote the same kind of results for the same jobs.
    assert class_percentiles(tmp_path / "load0.8-real").keys() == {"short", "long"}
