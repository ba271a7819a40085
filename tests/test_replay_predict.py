"""Know before you wait: a real replay is predicted on the simulator; the prediction picks the time scale
(``--duration``, or a one-minute default), refuses a run above ``--max-wall`` with one line naming what
would fit (exit 2), and says why the utilization falls short of ``--load``."""

from __future__ import annotations

import io
import json
import re
from dataclasses import replace

import pytest
from rich.console import Console

from aviary.launch.cli.main import main
from aviary.launch.flags.parser import build_parser
from aviary.launch.flags.spec import ReplaySpec, UsageError
from aviary.launch.replay.jobs import DEFAULT_REAL_JOBS, TAIL_SHARE, arrival_span, longest_task
from aviary.launch.replay.progress import ProgressBar, _EtaColumn
from aviary.launch.replay.resolve import DEFAULT_BUDGET, setup_replay

LONG = ["replay", "--jobs", "300", "--start", "1629", "--time-scale", "1000", "--quiet"]
"""A real replay the simulator predicts at 11 minutes (10 nodes, the default task scale)."""


def test_a_replay_predicted_above_the_limit_is_refused_in_one_line_naming_what_fits(tmp_path, capsys):
    assert main([*LONG, "--max-wall", "5m", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.match(r"aviary replay: error: predicted \d+\.\d min of replay", err[0])
    assert "above --max-wall 5m" in err[0] and "--yes runs anyway" in err[0]
    assert not (tmp_path / "r").exists()  # nothing started
    # Each suggestion, applied, fits (checked on the simulator: the refusal is what it computed).
    scale = float(re.search(r"--time-scale (\S+)", err[0]).group(1))
    jobs, start = map(int, re.search(r"--jobs (\d+) --start (\d+)", err[0]).groups())
    base = ReplaySpec.from_args(build_parser().parse_args(LONG))
    for spec in (replace(base, time_scale=scale), replace(base, jobs=jobs, start=start)):
        setup = setup_replay(spec, quiet=True)
        assert setup.prediction is not None and setup.prediction.wall <= 300
    # --yes goes on anyway (the prediction is kept), a higher --max-wall too.
    spec = replace(base, yes=True)
    assert setup_replay(spec, quiet=True).prediction.wall > 300  # type: ignore[union-attr]
    assert setup_replay(replace(base, max_wall=900.0), quiet=True).extra["predicted"]["wall_seconds"] > 300


def test_the_default_real_replay_is_short_and_offers_the_load_it_asks_for():
    setup = setup_replay(ReplaySpec(), quiet=True)
    prediction = setup.prediction
    assert prediction is not None and prediction.complete
    assert len(setup.jobs) == DEFAULT_REAL_JOBS
    # The time scale is the one the one-minute budget needs (at least the real default of 1000).
    assert setup.extra["time_scale"] >= 1000
    assert 0.9 * DEFAULT_BUDGET <= prediction.wall <= 1.1 * DEFAULT_BUDGET
    # The task scale is raised from 10/10000 until no merged task outlasts a quarter of the arrivals.
    assert setup.extra["task_scale"] > 10 / 10000
    assert longest_task(setup.jobs) <= TAIL_SHARE * arrival_span(setup.jobs)
    assert prediction.utilization is not None and prediction.utilization > 0.6  # --load 0.8
    assert prediction.notes == []


def test_a_load_the_task_merging_cannot_offer_gets_a_note_naming_the_task_scale_that_can():
    spec = ReplaySpec(jobs=300, seed=0, task_scale=0.001, time_scale=1000.0, max_wall=None)
    prediction = setup_replay(spec, quiet=True).prediction
    assert prediction is not None and prediction.utilization is not None and prediction.utilization < 0.4
    assert len(prediction.notes) == 1
    note = prediction.notes[0]
    assert re.match(r"predicted utilization \d+%, not the --load 0.8 asked: task merging", note)
    fix = float(re.search(r"--task-scale (\S+) splits them", note).group(1))
    fixed = setup_replay(replace(spec, task_scale=fix), quiet=True).prediction
    assert fixed is not None and fixed.utilization is not None and fixed.utilization > 0.6
    assert fixed.notes == []


def test_duration_and_wall_time_flags_are_checked(tmp_path, capsys):
    args = build_parser().parse_args(["replay", "--duration", "2m", "--max-wall", "1.5h"])
    assert (args.duration, args.max_wall) == (120.0, 5400.0)
    assert build_parser().parse_args(["replay", "--duration", "45"]).duration == 45.0
    for bad in ("--duration=soon", "--duration=0s", "--max-wall=-1m"):
        with pytest.raises(SystemExit) as exit_:
            build_parser().parse_args(["replay", bad])
        assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].endswith("argument --duration: expected seconds or a time such as 90s, 2m, 1h: soon")
    assert err[1].endswith("argument --duration: must be a time greater than 0, got 0s")
    out = str(tmp_path / "x")
    assert main(["replay", "--runtime", "sim", "--duration", "1m", "--jobs", "5", "--out", out]) == 2
    assert main(["replay", "--duration", "1m", "--time-scale", "100", "--jobs", "5", "--out", out]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "aviary replay: error: --duration: only for --runtime real (the simulator runs as fast as it can)",
        "aviary replay: error: --duration picks the time scale: give --duration or --time-scale, not both",
    ]
    with pytest.raises(UsageError, match="duration must be greater than 0"):
        ReplaySpec(duration=0.0)


def test_the_duration_picks_the_time_scale_of_the_prediction():
    for budget in (10.0, 40.0):
        setup = setup_replay(ReplaySpec(jobs=100, nodes=4, slots=2, duration=budget), quiet=True)
        assert setup.prediction is not None and setup.extra["duration"] == budget
        assert setup.prediction.wall == pytest.approx(budget, rel=0.03)


def test_the_progress_bar_shows_the_clock_against_the_predicted_end_and_the_time_left():
    bar = ProgressBar(10, "sparrow", False, end=20.0)
    assert bar.clock_text(None) == ("", None)
    assert bar.clock_text(5.0) == ("5.0/20.0 s", 15.0)
    assert bar.clock_text(25.0) == ("25.0/20.0 s", None)  # past it: rich's estimate
    sim = ProgressBar(10, "sparrow", False, virtual=True, last_arrival=4176.4)
    assert sim.clock_text(1234.5) == ("virtual 1,234 of 4,176 s", None)
    assert sim.clock_text(9717.0) == ("virtual 9,717 s, all arrived", None)  # never "9,717 of 4,176"
    eta = _EtaColumn()
    bar.progress.update(bar.task, eta=3725.4)
    assert str(eta.render(bar.progress.tasks[0])) == "ETA 1:02:05"


class _Frontend:
    """What the bar reads of a frontend core."""

    def __init__(self, finished: int, submitted: int, ready: bool = True) -> None:
        self.finished, self.submitted, self.ready, self.waiting = finished, submitted, ready, {"node-1"}


def test_on_a_terminal_of_80_columns_the_bar_fits_on_one_line_with_its_counts_and_eta():
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=True, color_system=None)
    bar = ProgressBar(100_000, "tetrisched-nh (real, 100 nodes)", True, end=8000.0, console=console)
    bar.update(_Frontend(12_345, 23_456), 1234.5)  # type: ignore[arg-type]
    with console.capture() as capture:
        console.print(bar.progress.get_renderable())
    rendered = [r for r in capture.get().splitlines() if r.strip()]
    assert len(rendered) == 1 and len(rendered[0]) <= 80, rendered
    assert rendered[0].startswith("tetrisched-nh (…") and "12345/100000 jobs" in rendered[0]
    assert "1,234.5/8,000.0 s" in rendered[0] and "ETA 1:52:46" in rendered[0]


def test_off_a_terminal_a_plain_line_every_n_seconds_and_one_at_the_end(monkeypatch):
    out = io.StringIO()
    console = Console(file=out, width=80)  # a file: not a terminal
    clock = [100.0]
    monkeypatch.setattr("aviary.launch.replay.progress.time.monotonic", lambda: clock[0])
    with ProgressBar(300, "carbyne (sim, 100 nodes)", True, virtual=True, last_arrival=900.0, every=10.0,
                     console=console) as bar:  # fmt: skip
        bar.update(_Frontend(0, 0, ready=False), None)  # type: ignore[arg-type]
        for t, done in ((105.0, 10), (111.0, 30), (115.0, 40), (121.0, 60)):
            clock[0] = t
            bar.update(_Frontend(done, done + 5), t * 2)  # type: ignore[arg-type]
        clock[0] = 122.0
        bar.update(_Frontend(300, 300), 950.0)  # type: ignore[arg-type]
    lines = out.getvalue().splitlines()
    assert lines == [
        "carbyne (sim, 100 nodes): 30/300 jobs finished, 35 submitted, virtual 222 of 900 s, ETA 0:01:39 "
        "(elapsed 0:00:11)",
        "carbyne (sim, 100 nodes): 60/300 jobs finished, 65 submitted, virtual 242 of 900 s, ETA 0:01:24 "
        "(elapsed 0:00:21)",
        "carbyne (sim, 100 nodes): 300/300 jobs finished, 300 submitted, virtual 950 s, all arrived "
        "(elapsed 0:00:22)",
    ]


@pytest.mark.integration
def test_a_real_replay_given_a_duration_ends_within_a_quarter_of_it(tmp_path, no_leftover_children, capsys):
    out = tmp_path / "run"
    flags = ["--jobs", "100", "--nodes", "4", "--slots", "2", "--duration", "10s", "--quiet"]
    assert main(["replay", *flags, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "predicted on the simulator in" in err and "10.0 s of replay for 100 jobs" in err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["finished"] == 100 and summary["extra"]["duration"] == 10.0
    assert 0.75 * 10 <= summary["wall_seconds"] <= 1.25 * 10, summary["wall_seconds"]
    assert summary["extra"]["predicted"]["wall_seconds"] == pytest.approx(10, rel=0.03)


def test_a_real_replay_waits_for_a_job_as_long_as_its_prediction_went_without_one_finishing():
    from aviary.common.model import JobSpec
    from aviary.launch.replay.resolve import longest_quiet

    jobs = [JobSpec(i, submit, [1.0], 1.0, False) for i, submit in enumerate((0.0, 5.0, 10.0))]
    assert longest_quiet(jobs, [4.0, 12.0, 62.0]) == 50.0  # from 12 to 62; 4 came before the last submit
    assert longest_quiet(jobs, [None, 40.0, None]) == 30.0
    assert longest_quiet(jobs, [None, None, None]) == 0.0


def test_a_batch_s_span_is_the_busiest_resource_s_work_over_its_capacity():
    from aviary.common.model import JobSpec, Stage
    from aviary.common.resources import Resources
    from aviary.launch.policies.registry import policy_cluster
    from aviary.launch.replay.run import work_bound

    cluster = policy_cluster("drf", nodes=2, capacity=Resources(4, 16, 1, 1), bind_ports=False)
    # 2 tasks of 10 s using 1 core and 1 disk each, then 1 of 4 s on 4 cores: disk 20/2, cores 36/8
    job = JobSpec(0, 0.0, [10.0, 10.0, 4.0], 8.0, False)
    job.stages = [Stage(2, 10.0, Resources(1, 1, 1, 0)), Stage(1, 4.0, Resources(4, 1, 0, 0), (0,))]
    assert work_bound(cluster, [job]) == 10.0
    flat = policy_cluster("sparrow", nodes=3, slots=2, bind_ports=False)  # 6 one-core slots
    assert work_bound(flat, [JobSpec(1, 0.0, [3.0] * 4, 3.0, False)]) == 2.0


def test_a_simulated_replay_estimates_its_wall_time_after_its_first_seconds_and_flags_a_long_one():
    from aviary.launch.replay.run import CALIBRATION, share_done, time_left, wall_estimate

    class Fe:
        finished, total = 10, 100

    # The share done: the tasks launched where known, else the jobs finished or the virtual time
    assert share_done(Fe(), 500.0, 1000.0, launched=300, tasks=1000) == 0.3
    assert share_done(Fe(), 500.0, 1000.0) == 0.5 and share_done(Fe(), 0.0, 0.0) == 0.1
    steady = [(t, t / 40) for t in (2.0, 5.0, 8.0, 10.0)]  # 2.5 % a second: 40 s in all
    assert wall_estimate(steady[:3]) is None  # still calibrating
    assert wall_estimate(steady) == "estimate: about 40.0 s of wall time in all (after 10.0 s, 25% done)"
    # Dearer tasks once queues build up: the rate of the second half, not the average since the start
    slowing = [(2.0, 0.10), (5.0, 0.20), (8.0, 0.23), (10.0, 0.25)]  # 1 %/s since 5 s: 75 s more
    assert wall_estimate(slowing) == "estimate: about 85.0 s of wall time in all (after 10.0 s, 25% done)"
    long = wall_estimate([(15.0, 0.025), (30.0, 0.05)])  # 5 % done after 30 s: 10 min
    assert long is not None and "about 10.0 min" in long and "a long simulation" in long
    assert wall_estimate([(CALIBRATION + 1, 0.0)]) is None  # nothing done yet: no estimate
    # The progress bar's ETA is the same reckoning, without the set-up and the results
    assert (
        time_left(steady) == 30.0
        and time_left(slowing) == pytest.approx(75.0)
        and time_left(steady[:3]) is None
    )


def test_the_prediction_of_a_docker_replay_holds_each_task_to_a_container_start():
    """With --executor docker a task takes at least its container's start (~0.3 s, counted as running
    time): the prediction runs every shorter task that long, and says so (predicted 20.4 s, ran 34.1 s
    before)."""
    from aviary.launch.replay.predict import CONTAINER_START, prediction_notes, started_tasks

    spec = ReplaySpec(policy="sparrow", jobs=60, nodes=4, slots=2, time_scale=2000.0)
    timer, docker = (setup_replay(replace(spec, executor=e), quiet=True) for e in ("timer", "docker"))
    assert started_tasks(timer) is timer.jobs
    short = sum(d < CONTAINER_START for j in docker.jobs for d in j.durations)
    assert short > 0 and all(d >= CONTAINER_START for j in started_tasks(docker) for d in j.durations)
    assert timer.prediction is not None and docker.prediction is not None
    assert docker.prediction.wall > timer.prediction.wall
    notes = prediction_notes(replace(spec, executor="docker"), docker, docker.prediction)
    assert any(f"{short} of " in n and "shorter than a container's start" in n for n in notes)


def test_the_set_up_resolves_the_spec_once_into_the_policy_cluster_and_jobs(tmp_path, monkeypatch):
    """One pass (launch/replay/resolve.py): a simulated replay, and a real one at a given time scale, are
    resolved once; the set-up carries the registry's entry of the policy that runs. A real replay fitted
    to ``--duration`` resolves again at each time scale it tries, and only then."""
    from aviary.launch.replay import resolve as module

    calls: list[ReplaySpec] = []
    real_resolve = module.resolve

    def counted(spec: ReplaySpec):  # type: ignore[no-untyped-def]
        calls.append(spec)
        return real_resolve(spec)

    monkeypatch.setattr(module, "resolve", counted)
    setup = setup_replay(ReplaySpec(runtime="sim", policy="eagle", nodes=20, jobs=20, out=tmp_path / "s"))
    assert len(calls) == 1 and setup.policy.name == "eagle" and setup.cluster.policy == "eagle"
    assert len(setup.jobs) == 20
    calls.clear()
    spec = ReplaySpec(
        runtime="real", policy="sparrow", nodes=10, jobs=20, time_scale=1000, out=tmp_path / "r"
    )
    setup = setup_replay(spec, quiet=True)
    assert len(calls) == 1 and setup.policy.name == "sparrow" and setup.prediction is not None
    calls.clear()
    setup_replay(replace(spec, time_scale=None, duration=20.0, out=tmp_path / "d"), quiet=True)
    assert len(calls) >= 2 and len({c.time_scale for c in calls}) == len(calls)  # one per time scale tried
