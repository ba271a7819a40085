"""The live dashboard's data (issue 29), without a browser or sockets: the cores' gauges, what reaches the
page's figures from the frontend's records and the processes' ``Counters``, and the flags. The page in a
real browser is tests/test_browser.py's."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from aviary.central.carbyne import Carbyne
from aviary.central.packing import PackingCore
from aviary.central.tetrisched import TetriSched
from aviary.common.frontend import FrontendCore
from aviary.common.messages import Counters, SubmitJob, decode, encode
from aviary.common.model import JobSpec
from aviary.common.resources import Resources
from aviary.launch.cli.main import main
from aviary.launch.drivers.dashboard import Page, exposed, slo_so_far

pytest.importorskip("bokeh")


def submit(job_id: int, stages: list[tuple[int, float, tuple[float, float], tuple[int, ...]]]) -> SubmitJob:
    durations = [float(e) for tasks, e, _, _ in stages for _ in range(tasks)]
    wire = [[t, float(e), list(Resources.of(d)), list(p)] for t, e, d, p in stages]
    return SubmitJob(job_id, durations, sum(durations) / len(durations), wire)


def test_a_packing_core_reports_what_it_holds_pending_and_running():
    core = PackingCore("central", [("n", Resources(2, 8), {})], Carbyne())
    assert core.gauges() == {"jobs_pending": 0, "stages_pending": 0, "tasks_pending": 0, "tasks_running": 0}
    # Job 1: 3 one-core tasks, then a child stage; job 2: one task. Two cores: two tasks run at once.
    core.on_message(0.0, "fe", submit(1, [(3, 1.0, (1, 1), ()), (2, 1.0, (1, 1), (0,))]))
    core.on_message(0.0, "fe", submit(2, [(1, 1.0, (1, 1), ())]))
    g = core.gauges()
    assert g["tasks_running"] == 2
    assert g["tasks_pending"] == 2  # 4 runnable tasks, 2 placed; the child stage is not runnable yet
    assert g["stages_pending"] == len([s for j in core.state.active.values() for s in j.runnable])
    assert 1 <= g["jobs_pending"] <= 2


def test_tetrisched_reports_its_last_solved_cycle_not_one_under_way():
    core = PackingCore("central", [(f"n{i}", Resources(1, 8), {}) for i in range(2)], TetriSched())
    assert core.gauges()["tasks_running"] == 0 and "solver_ms" not in core.gauges()
    core.on_message(0.0, "fe", SubmitJob(1, [2.0, 2.0], 2.0, [], None, "be", True, "", 1.0))
    core.on_timer(0.0, "cycle")
    solved = core.gauges()
    assert solved["solver_ms"] > 0 and solved["milp_columns"] > 0
    record = core.policy.records[-1]
    core.policy.records.append(type(record)(1.0, 0, 0))  # a cycle that has not solved yet
    assert core.gauges()["solver_ms"] == solved["solver_ms"]


def test_counters_carry_gauges_and_an_older_counters_frame_still_decodes():
    msg = Counters({"tasks_placed": 3}, {"PlaceTask": 3}, {"jobs_pending": 2.0})
    assert decode(encode(msg)) == msg
    old = Counters({"tasks_placed": 3}, {"PlaceTask": 3})  # a sender without gauges
    assert decode(encode(old)).gauges == {}


def flat(job_id: int, submit: float, slo: str | None = None, deadline: float | None = None) -> JobSpec:
    return JobSpec(job_id, submit, [1.0], 1.0, False, slo=slo, deadline=deadline)


def board_of(core: FrontendCore, policy: str, nodes: int = 4, now: float = 10.0) -> Any:
    slots = {f"node-{i}": 2 for i in range(nodes)}
    return SimpleNamespace(
        core=core,
        clock=lambda: now,
        slots=slots,
        policy=policy,
        began=0.0,
        poll=None,
        exited=set,
        capacity=None,
    )


def test_slo_attainment_so_far_counts_a_job_once_it_finished_or_its_deadline_passed():
    jobs = [flat(0, 0.0, "accepted", 5.0), flat(1, 0.0, "noreserve", 5.0), flat(2, 0.0, "accepted", 50.0)]
    jobs += [flat(3, 0.0, "be", 1.0), flat(4, 0.0)]  # best effort: never counted
    core = FrontendCore("fe", jobs, lambda job: "central")
    for j in range(5):
        core.times[j].submit = 0.0
    core.times[0].finish = 4.0  # met
    # job 1 unfinished, its deadline passed at 10 s: missed; job 2 unfinished, deadline ahead: undecided
    assert slo_so_far(core, 10.0) == (1, 2)
    core.times[1].finish = 6.0  # finished late: still missed
    assert slo_so_far(core, 10.0) == (1, 2)
    assert slo_so_far(core, 60.0) == (1, 3)


def test_the_page_draws_counters_gauges_and_marks_dead_and_rejoined_nodes():
    from bokeh.document import Document

    jobs = [flat(0, 0.0, "accepted", 5.0), flat(1, 0.0, "accepted", 5.0)]
    roles = {"central": "central", **{f"node-{i}": "node" for i in range(4)}}
    core = FrontendCore("fe", jobs, lambda job: "central", roles=roles)
    core.t0 = 0.0
    for j in range(2):
        core.times[j].submit = 0.0
    core.times[0].finish = 1.0
    core.dead["node-1"] = 3.0
    core.rejoined.add("node-2")
    core.reported["central"] = Counters(
        {"tasks_placed": 8, "tasks_preempted": 2, "carbyne_leftover_placements": 2}, {}, {"jobs_pending": 5.0}
    )
    core.reported["node-0"] = Counters({"tasks_launched": 3, "tasks_finished": 1, "preemptions": 1}, {})
    core.reported["node-1"] = Counters({"tasks_launched": 2, "tasks_finished": 0}, {}, {"jobs_pending": 9.0})
    core.reported["node-0"].gauges.update({"used_cores": 2.0, "used_disk": 6.0})
    board = board_of(core, "tetrisched")
    board.capacity = Resources(8, 32, 4, 4)
    page = Page(board, Document())
    assert page.busy.data["disk"] == [150.0] and page.busy.data["cores"] == [25.0]  # disk over-allocated
    texts = {f.title.text for f in page.figures if hasattr(f, "title")}
    assert {"central scheduler: what it holds", "TetriSched: SLO attainment"} <= texts
    assert "TetriSched: HiGHS time of the last solved cycle" in texts
    data = page.signals.data
    assert data["jobs_pending"][-1] == 5.0  # a dead process's gauges left out
    assert data["preempted"][-1] == 3  # the central's kills and the nodes' LAS preemptions
    assert data["slo"][-1] == pytest.approx(50.0)  # job 0 met; job 1's deadline (5 s) passed at 10 s
    grid = page.grid.data
    assert grid["busy"] == [2, 2, 0, 0]
    assert grid["color"][1] == "#d62728" and grid["line"][2] == "#ff7f0e"
    assert grid["line"][0] is None and grid["color"][0] != "#d62728"
    assert "replay clock 10.0 s" in page.status.text and "dead: node-1" in page.status.text


def test_aviary_up_s_page_shows_the_nodes_tasks_and_carbyne_its_leftover_share():
    from bokeh.document import Document

    core = FrontendCore("control", [], lambda job: "central", roles={"central": "central", "node-0": "node"})
    core.reported["node-0"] = Counters({"tasks_launched": 5, "tasks_finished": 3, "tasks_failed": 1}, {})
    core.reported["central"] = Counters(
        {
            "tasks_placed": 4,
            "carbyne_leftover_placements": 1,
            "carbyne_plans": 4,
            "carbyne_plan_fallbacks": 2,
        },
        {},
    )
    page = Page(board_of(core, "carbyne", nodes=1), Document())
    assert page.jobs.data["submitted"] == [5] and page.jobs.data["finished"] == [4]
    assert page.jobs.data["in_system"] == [1]
    assert "tasks launched 5, finished 4" in page.status.text
    assert page.signals.data["leftover"] == [25.0] and page.signals.data["fallback"] == [50.0]
    assert all(getattr(f, "title", None) is None or "CDF" not in f.title.text for f in page.figures)


def status(argv: list[str]) -> int:
    """``aviary ARGV``'s exit status (a flag's type error exits through argparse)."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def test_a_dashboard_beyond_loopback_warns_and_bad_dashboard_flags_are_one_line(capsys):
    assert exposed("127.0.0.1", 8789) is None
    assert "plain HTTP" in (exposed("0.0.0.0", 8789) or "")
    cases = [
        (["replay", "--dashboard-address", "127.0.0.1"], "--dashboard-address: only with --dashboard"),
        (["replay", "--runtime", "sim", "--dashboard"], "--dashboard: only for --runtime real"),
        (["up", "--dashboard", "0", "--dashboard-address", "192.0.2.1"], "cannot listen on '192.0.2.1'"),
    ]
    for argv, said in cases:
        assert status(argv) == 2
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) <= 2  # argparse adds its usage line


def test_a_headless_page_updates_every_second_and_asks_for_counters_as_an_open_one_does():
    """What ``aviary bench --dashboard`` measures: the server computing a page every second, no browser."""
    import asyncio
    import time

    from aviary.common.frontend import COUNTERS_EVERY
    from aviary.launch.drivers.dashboard import Dashboard

    core = FrontendCore("fe", [flat(0, 0.0)], lambda job: "central", roles={"node-0": "node"})

    async def scenario() -> tuple[int, int, int]:
        board = Dashboard(core, time.monotonic, {"node-0": 1}, port=0)
        page = board.headless()
        asked = core.counters_every
        await asyncio.sleep(2.3)
        board.stop()
        return asked, len(page.jobs.data["t"]), board.pages

    asked, updates, pages = asyncio.run(scenario())
    assert asked == 2 and COUNTERS_EVERY > 2  # counters every second while a page is open
    assert updates == 3  # at its opening, then at 1 s and 2 s
    assert pages == 1
