"""Link faults (common/netfaults.py): the grammar of ``--fail``'s link items and which messages they hit."""

from __future__ import annotations

import math

import pytest

from aviary.common.netfaults import REORDER_HOLD, FaultPlan, LinkFault, is_link_fault, parse_link_fault

ROLES = {
    **{f"node-{i}": "node" for i in range(30)},
    "sched-0": "scheduler",
    "sched-1": "scheduler",
    "central": "central",
    "frontend": "frontend",
}


def test_the_grammar_reads_every_kind_link_and_window():
    f = parse_link_fault("{node}<>sched-0:drop=1%")
    assert (f.src, f.dst, f.both, f.kind, f.share, f.start, f.end) == (
        "{node}",
        "sched-0",
        True,
        "drop",
        0.01,
        0,
        math.inf,
    )
    f = parse_link_fault("*>*:delay=100ms..2s/10%@30s")
    assert (f.both, f.kind, f.low, f.high, f.share, f.start, f.end) == (
        False,
        "delay",
        0.1,
        2.0,
        0.1,
        30.0,
        math.inf,
    )
    f = parse_link_fault("node-[0-9]<>{scheduler}:cut@30s+10s")
    assert (f.kind, f.share, f.start, f.end) == ("cut", 1.0, 30.0, 40.0)
    assert (
        parse_link_fault("central<>frontend:delay=2s").low
        == parse_link_fault("central<>frontend:delay=2s").high
        == 2.0
    )
    assert parse_link_fault("a>b:dup=0.5%").share == 0.005
    assert is_link_fault("sched-0>node-1:drop=5%") and not is_link_fault("node-3@30s+2s")


@pytest.mark.parametrize(
    ("item", "says"),
    [
        ("node-1-sched-0:drop=1%", "the link is FROM>TO or A<>B"),
        ("a>b:lose=1%", "'lose' is not a fault"),
        ("a>b:drop=0%", "not a share such as 1%"),
        ("a>b:drop=150%", "not a share such as 1%"),
        ("a>b:drop", "drop needs a value"),
        ("a>b:cut=1%", "cut takes no value"),
        ("a>b:delay=2s..1s", "LOW..HIGH"),
        ("a>b:delay=fast", "'fast' is not a duration"),
        ("a>b:cut@10s+0s", "the span must be longer than 0 s"),
        ("{nodes}>b:cut", "{nodes} is not a role"),
        (">b:cut", "a link needs a process"),
    ],
)
def test_a_bad_item_is_one_line_naming_it(item, says):
    with pytest.raises(ValueError) as info:
        parse_link_fault(item)
    text = str(info.value)
    assert text.startswith(f"{item!r}: ") and says in text and "\n" not in text


def test_links_match_names_globs_and_roles_in_their_direction():
    one_way = parse_link_fault("sched-0>node-[0-9]:cut")
    assert one_way.covers("sched-0", "node-3", ROLES) and not one_way.covers("node-3", "sched-0", ROLES)
    assert not one_way.covers("sched-0", "node-13", ROLES)  # [0-9] is one character
    both = parse_link_fault("{node}<>{central}:cut")
    assert both.covers("node-13", "central", ROLES) and both.covers("central", "node-13", ROLES)
    assert not both.covers("sched-0", "central", ROLES)
    with pytest.raises(ValueError, match="matches no process"):
        FaultPlan([parse_link_fault("rack-2<>central:cut")], ROLES)


def test_shares_windows_and_what_each_kind_does():
    plan = FaultPlan(
        [
            parse_link_fault("sched-0>{node}:drop=5%"),
            parse_link_fault("sched-1>{node}:dup=10%"),
            parse_link_fault("central>{node}:delay=100ms..2s/10%"),
            parse_link_fault("{node}>central:reorder=20%"),
            parse_link_fault("frontend<>central:cut@30s+10s"),
        ],
        ROLES,
        seed=4,
    )
    n = 20_000
    lost = sum(plan.fate("sched-0", f"node-{k % 30}", 1.0) == [] for k in range(n))
    assert abs(lost / n - 0.05) < 0.01
    dups = [plan.fate("sched-1", "node-2", 1.0) for _ in range(n)]
    assert (
        all(d in ([0.0], [0.0, 0.0]) for d in dups) and abs(sum(len(d) == 2 for d in dups) / n - 0.10) < 0.01
    )
    delays = [plan.fate("central", "node-5", 1.0)[0] for _ in range(n)]
    held = [d for d in delays if d > 0]
    assert abs(len(held) / n - 0.10) < 0.01 and min(held) >= 0.1 and max(held) <= 2.0
    assert abs(sum(held) / len(held) - 1.05) < 0.05  # uniform over [0.1, 2]
    back = [plan.fate("node-7", "central", 1.0)[0] for _ in range(n)]
    assert all(d == 0.0 or REORDER_HOLD / 2 <= d <= REORDER_HOLD for d in back)
    assert plan.fate("frontend", "central", 29.9) == [0.0] and plan.fate("central", "frontend", 30.0) == []
    assert plan.fate("frontend", "central", 39.99) == [] and plan.fate("frontend", "central", 40.0) == [0.0]
    assert plan.fate("sched-0", "central", 1.0) == [0.0]  # no fault on that link
    assert plan.hit["cut"] == 2


def test_a_message_meets_the_same_fate_given_the_seed_link_and_its_number():
    faults = [parse_link_fault("*>*:drop=30%"), parse_link_fault("*>*:delay=1ms..1s/50%")]
    a, b = FaultPlan(faults, ROLES, seed=9), FaultPlan(faults, ROLES, seed=9)
    seq_a = [a.fate("sched-0", "node-1", 0.0) for _ in range(500)]
    b.fate("sched-1", "node-2", 0.0)  # another link's traffic does not shift this one's draws
    seq_b = [b.fate("sched-0", "node-1", 0.0) for _ in range(500)]
    assert seq_a == seq_b
    other = FaultPlan(faults, ROLES, seed=10)
    assert [other.fate("sched-0", "node-1", 0.0) for _ in range(500)] != seq_a


def test_faults_on_one_link_apply_in_order_to_what_the_last_let_through():
    plan = FaultPlan(
        [LinkFault("a", "b", False, "dup", 1.0), LinkFault("a", "b", False, "delay", 1.0, 0.5, 0.5)],
        {"a": "node", "b": "node"},
    )
    assert plan.fate("a", "b", 0.0) == [0.5, 0.5]  # both copies delayed


# --- on the simulator ---------------------------------------------------------------------------------


def replay(tmp_path, name, fail, *extra):
    import json

    from aviary.launch.cli.main import main

    out = tmp_path / name
    flags = ["--runtime", "sim", "--policy", "sparrow", "--jobs", "60", "--nodes", "12", "--quiet", *extra]
    code = main(["replay", *flags, "--fail", fail, "--out", str(out)])
    return code, json.loads((out / "summary.json").read_text()), out


def test_the_simulator_delays_messages_as_told_and_a_run_is_the_same_each_time(tmp_path):
    """A tenth of every link's messages held 0.1-2 s: every job still finishes (delays lose nothing),
    later than without, and the same fates fall the same way in a second run."""
    code, summary, out = replay(tmp_path, "a", "*>*:delay=100ms..2s/10%")
    assert code == 0 and summary["finished"] == 60
    extra = summary["extra"]
    assert abs(extra["link_faults_hit"]["delay"] / extra["links"]["segments"] - 0.10) < 0.02
    _, _, out2 = replay(tmp_path, "b", "*>*:delay=100ms..2s/10%")
    assert (out / "jobs.csv").read_bytes() == (out2 / "jobs.csv").read_bytes()
    _, plain, _ = replay(tmp_path, "c", "node-0@100000s")  # a failure after the end: no fault at all
    assert summary["jct"]["all"]["mean"] > plain["jct"]["all"]["mean"]


def test_a_cut_holds_up_exactly_the_messages_of_its_window_and_link(tmp_path):
    """Every SubmitJob sent while the frontend is cut off from the schedulers is lost on the wire and
    sent again until it gets through: those jobs finish only after the cut, those done before it are
    untouched, and every job finishes (common/links.py)."""
    import csv

    flags = ["--time-scale", "1000"]
    code, summary, out = replay(tmp_path, "cut", "frontend>{scheduler}:cut@2s+3s", *flags)
    assert code == 0 and summary["finished"] == 60 and summary["extra"]["link_faults_hit"]["cut"] > 0
    _, _, plain = replay(tmp_path, "plain", "node-0@100000s", *flags)
    rows = {r["job_id"]: r for r in csv.DictReader((out / "jobs.csv").open())}
    base = {r["job_id"]: r for r in csv.DictReader((plain / "jobs.csv").open())}
    held = [j for j, r in rows.items() if 2 <= float(r["submit_replay_s"]) < 5]
    assert held and all(float(rows[j]["finish_replay_s"]) >= 5 for j in held)
    before = [j for j, r in rows.items() if float(r["finish_replay_s"]) < 2]
    assert before and all(rows[j]["finish_replay_s"] == base[j]["finish_replay_s"] for j in before)


def test_a_link_fault_that_names_no_process_is_one_line(tmp_path, capsys):
    from aviary.launch.cli.main import main

    out = str(tmp_path / "r")
    assert main(["replay", "--runtime", "sim", "--fail", "rack-9<>{central}:cut", "--out", out]) == 2
    assert "rack-9 matches no process of this testbed" in capsys.readouterr().err


def test_a_partition_from_the_frontend_alone_is_silence():
    """The failure detector is the frontend: a cut of its link with a process, longer than the liveness
    limit, declares that process dead that long after the cut starts, and it answers again at its end;
    a shorter cut, or one between other processes, declares nobody."""
    plan = FaultPlan(
        [
            parse_link_fault("node-[0-1]<>frontend:cut@10s+5s"),
            parse_link_fault("central>frontend:cut@20s+2s"),
            parse_link_fault("{node}<>sched-0:cut@30s+60s"),
            parse_link_fault("frontend>sched-1:cut@40s+10s"),
        ],
        ROLES,
    )
    assert sorted(plan.silences("frontend", 3.0)) == [
        ("node-0", 13.0, 15.0),
        ("node-1", 13.0, 15.0),
        ("sched-1", 43.0, 50.0),
    ]


def test_nodes_declared_dead_behind_a_partition_run_on_and_their_results_count_once(tmp_path):
    """A third of the nodes cut off from the frontend for 6 s: declared dead after 3 s, their tasks run
    again elsewhere while they finish them behind the partition, and they rejoin. Every job finishes,
    and each task that ran to its end twice counts once (its second result is a late one). Sparrow lost
    16 of 200 jobs so before a GetTask from a node declared dead got its NoTask (distributed/sparrow.py)."""
    import csv
    from collections import Counter

    code, summary, out = replay(tmp_path, "p", "node-[0-3]<>frontend:cut@2s+6s", "--time-scale", "1000")
    counters = summary["counters"]
    assert code == 0 and summary["finished"] == 60
    assert counters["processes_declared_dead"] == counters["processes_rejoined"] == 4
    rows = list(csv.DictReader((out / "tasks.csv").open()))
    runs = Counter((r["job_id"], r["task"]) for r in rows)
    finished = Counter((r["job_id"], r["task"]) for r in rows if r["outcome"] == "finished")
    twice = sum(1 for n in finished.values() if n > 1)
    assert twice > 0 and twice == counters["late_results_ignored"]
    assert max(runs.values()) == 2


def test_a_reservation_a_dead_node_stole_is_probed_again_when_it_asks(tmp_path):
    """Hawk's idle nodes steal reservations from others, which their scheduler does not know of: when the
    thief is declared dead behind a partition from the frontend, its GetTask for a stolen one gets
    NoTask and the reservation is probed again (distributed/sparrow.py, unknown_reservation_lost).
    Without it, 5 of these 100 jobs waited for ever."""
    flags = ["--policy", "hawk", "--jobs", "100", "--nodes", "10", "--time-scale", "2000", "--seed", "0"]
    code, summary, _ = replay(tmp_path, "h", "node-[0-2]<>frontend:cut@10s+10s", *flags)
    counters = summary["counters"]
    assert code == 0 and summary["finished"] == 100 and counters["processes_declared_dead"] == 3
    assert counters["stolen_probes_lost"] > 0


def test_the_committed_table_of_every_family_under_faults_is_its_runs():
    """experiments/results/network_faults.md, which docs/failures.md sums up, regenerates from the
    committed runs byte for byte."""
    from aviary.experiments.network_faults import POLICIES, REPORT, report

    assert report(POLICIES, [0, 1, 2]) == REPORT.read_text()


def test_the_default_run_writes_the_whole_table(tmp_path, monkeypatch, capsys):
    """Run without --policies (TetriSched left out), the experiment still writes the whole table: the
    rows of TetriSched's saved runs, or "not run"."""
    from aviary.experiments import network_faults

    committed = network_faults.REPORT.read_text()
    monkeypatch.setattr(network_faults, "REPORT", tmp_path / "table.md")
    network_faults.main(["--report-only"])
    assert (tmp_path / "table.md").read_text() == committed
    assert "| tetrisched |" in capsys.readouterr().out


def test_the_committed_side_by_side_table_is_its_runs_and_every_job_finished():
    """experiments/results/network_faults_side.md (real and simulated, docs/failures.md) regenerates from
    the committed runs byte for byte, and in every run of both runtimes every job finished."""
    import json

    from aviary.experiments.network_faults import SIDE_OUT, SIDE_POLICIES, SIDE_REPORT, side_report

    assert side_report(SIDE_POLICIES, 0) == SIDE_REPORT.read_text()
    runs = [json.loads(p.read_text()) for p in SIDE_OUT.glob("*.json")]
    assert len(runs) > 150 and all(r["finished"] == r["jobs"] for r in runs)
