"""experiments/kairos_sim reuses hawk_eagle_sim's baseline runs only when their settings match."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aviary.experiments.kairos_sim import cells as kairos_sim
from aviary.launch.flags.parser import build_parser
from aviary.launch.replay.resolve import setup_replay


def saved_summary(folder: Path, flags: list[str], **changes: object) -> None:
    setup = setup_replay(build_parser().parse_args(flags))
    extra = {**setup.extra, "task_scale": None, **changes}  # hawk_eagle_sim passes no --task-scale
    folder.mkdir(parents=True)
    summary = {"jobs": len(setup.jobs), "nodes": len(setup.cluster.nodes), "extra": extra}
    (folder / "summary.json").write_text(json.dumps(summary))


CASES = [({}, True), ({"schedulers": 2}, False), ({"seed": 1}, False)]


@pytest.mark.parametrize(("changes", "reused"), CASES)
def test_baseline_is_reused_only_with_the_same_settings(tmp_path, monkeypatch, changes, reused):
    monkeypatch.setattr(kairos_sim, "HAWK_EAGLE", tmp_path)
    flags = kairos_sim.flags_for("eagle", 50, tmp_path / "out", kairos_sim.BASELINE_FLAGS, 0, None)
    saved_summary(tmp_path / "eagle-50", flags, **changes)
    assert (kairos_sim.reusable("eagle", 50, flags) is not None) is reused
    assert kairos_sim.reusable("eagle", 60, flags) is None  # no such run
