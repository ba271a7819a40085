"""Integration: the real runtime and the simulator agree on the same scaled Google sample (Sparrow,
20 nodes): short-job p50 within 15 % and p90 within 25 % of each other (issue: Simulator)."""

from __future__ import annotations

import pytest

from aviary.experiments.agreement import class_percentiles, run

pytestmark = pytest.mark.integration


def test_real_and_simulated_sparrow_agree_on_short_jobs(tmp_path):
    runs = run(tmp_path, load=0.8)
    real, sim = runs["real"]["short"], runs["sim"]["short"]
    assert real["p50"] == pytest.approx(sim["p50"], rel=0.15), (real, sim)
    assert real["p90"] == pytest.approx(sim["p90"], rel=0.25), (real, sim)
    # Both wrote the same kind of results for the same jobs.
    assert class_percentiles(tmp_path / "load0.8-real").keys() == {"short", "long"}
