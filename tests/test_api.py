"""The Python API (``from aviary import replay, compare``) and its documented example, run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parent.parent / "docs" / "api.md"


def test_the_documented_example_runs_as_written(tmp_path, monkeypatch, capsys):
    (code,) = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(DOC), "exec"), {})
    out = capsys.readouterr().out
    assert re.search(r"Tetris' mean JCT is 0\.\d\d of DRF's", out), out
    assert (tmp_path / "results" / "api-drf" / "summary.json").is_file()
    assert "mean_jct" in out and "utilization disk" in out


def test_a_run_is_what_its_folder_holds_and_a_bad_parameter_is_one_clear_error(tmp_path):
    from aviary import ReplaySpec, Run, replay
    from aviary.common.results import read_jobs, read_summary
    from aviary.launch.flags.spec import UsageError

    run = replay(
        ReplaySpec(policy="sparrow", runtime="sim", jobs=30, nodes=4, out=tmp_path / "s", force=True)
    )
    assert run.summary == read_summary(tmp_path / "s") and run.jobs == read_jobs(tmp_path / "s")
    assert Run.load(tmp_path / "s").summary == run.summary
    assert run.metrics["makespan"] == run.summary["makespan"] and "utilization" in run.metrics
    with pytest.raises(TypeError, match="unknown parameter 'polcy'; did you mean 'policy'"):
        replay(polcy="drf")
    with pytest.raises(UsageError, match="runtime must be one of"):
        replay(runtime="fast")
    with pytest.raises(TypeError, match="not both"):
        replay(ReplaySpec(), jobs=3)


def test_importing_aviary_does_not_load_the_launcher():
    import subprocess
    import sys

    script = "import sys, aviary; print('aviary.launch.replay.run' in sys.modules, 'rich' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
