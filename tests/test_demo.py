"""Integration: ``aviary demo``, the README's first command, on real processes (~50 s). Where
``AVIARY_DEMO_RESULTS`` names the folder a demo of this checkout just wrote (``.ci/run`` runs the README's
first command, then the suite), the test checks that demo instead of running a second one."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest

from aviary.launch.cli.main import main

pytestmark = pytest.mark.integration


def test_demo_replays_both_policies_and_compares_them(tmp_path, no_leftover_children):
    given = os.environ.get("AVIARY_DEMO_RESULTS")
    if given:
        tmp_path = Path(given)
    else:
        assert main(["demo", "--out", str(tmp_path)]) == 0
    runs = {p: json.loads((tmp_path / p / "summary.json").read_text()) for p in ("sparrow", "eagle")}
    for policy, summary in runs.items():
        assert summary["policy"] == policy and summary["runtime"] == "real"
        assert summary["finished"] == summary["jobs"] == 300 and summary["unfinished"] == []
        # the command that makes it again (demo_command), not "not recorded"
        argv = shlex.split(summary["extra"]["command"])
        assert argv[:4] == ["aviary", "replay", "--policy", policy] and argv[-2] == "--out"
        assert Path(argv[-1]).resolve() == (tmp_path / policy).resolve()
    assert (tmp_path / "compare.png").stat().st_size > 0
    # What the demo shows: short jobs no longer wait behind long tasks under Eagle (p90 ~0.006 of Sparrow's),
    # at the utilization asked for (--load 0.8: 78 %).
    assert runs["eagle"]["jct"]["short"]["p90"] < 0.1 * runs["sparrow"]["jct"]["short"]["p90"]
    assert all(summary["utilization"] > 0.7 for summary in runs.values())
