"""The reports of :mod:`aviary.experiments.thesis_regime` from its cells: ``thesis_regime.md`` (the
thesis' claims, setting by setting) and ``kairos_regime.md`` (Kairos' controls), each ratio taken
within a seed and shown as its median over the seeds [min, max]."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aviary.experiments.google_sample import busy_load
from aviary.experiments.runs import sim_wall
from aviary.experiments.tables import (
    Judge,
    below,
    both_sides,
    claim_verdict,
    disagreement,
    in_range,
    median,
    num,
    over_seeds,
    ratio,
    seeds_cell,
)
from aviary.experiments.thesis_regime import cells
from aviary.experiments.thesis_regime.cells import (
    HERE,
    KAIROS_CONTROLS,
    LOADS,
    MAIN,
    OUT,
    PCT,
    SEEDS,
    TRACE,
    VARIANTS,
    Cell,
    arr_load,
    cell_name,
    load_cell,
    load_derived,
)


def arrivals_label(nodes: int, arr: str) -> str:
    load = arr_load(arr)
    if load is None:
        return f"trace, {nodes:,} nodes (busy-part load {busy_load(nodes):.2f})"
    order = ", jobs shuffled" if arr.startswith("shuffled") else ""
    return f"Poisson, load {load:.2f}{order}, {nodes:,} nodes"


def short_where(nodes: int, arr: str) -> str:
    load = arr_load(arr)
    if load is None:
        return f"trace {nodes / 1000:g}k"
    return f"{'shuffled' if arr.startswith('shuffled') else 'Poisson'} {load:.2f}"


def settings() -> list[tuple[int, str]]:
    trace = [(n, "trace") for n in cells.TRACE_NODES]
    poisson = [(cells.POISSON_NODES, f"load{rho:.2f}") for rho in sorted(LOADS, reverse=True)]
    shuffled = [(cells.POISSON_NODES, f"shuffled{rho:.2f}") for rho in sorted(LOADS, reverse=True)]
    return [*trace, *poisson, *shuffled]


def seed_runs(label: str, nodes: int, arr: str, seeds: Sequence[int]) -> list[tuple[int, dict[str, Any]]]:
    """The seeds (of ``seeds``) with a summary of the cell, and those summaries."""
    return [(seed, s) for seed in seeds if (s := load_cell(label, nodes, arr, seed)) is not None]


def ratios(
    top: str, den: str, nodes: int, arr: str, seeds: Sequence[int]
) -> tuple[list[int], dict[str, list[float | None]]] | None:
    """``top`` over ``den`` in a setting, each ratio taken within a seed (both cells with the same seed):
    the seeds (of ``seeds``) with both cells, and per percentile (``short p50``, ...) their ratios, in
    the seeds' order; None when no seed has both."""
    got: list[int] = []
    each: dict[str, list[float | None]] = {f"{c} {q}": [] for c in ("short", "long") for q in PCT}
    for seed in seeds:
        a, b = load_cell(top, nodes, arr, seed), load_cell(den, nodes, arr, seed)
        if a is None or b is None:
            continue
        got.append(seed)
        for c in ("short", "long"):
            for q in PCT:
                each[f"{c} {q}"].append(ratio(a["jct"][c][q], b["jct"][c][q]))
    return (got, each) if got else None


def ratio_table(top: str, den: str, seeds: Sequence[int]) -> list[str]:
    """``top`` over ``den`` per setting: each ratio within a seed, its median over ``seeds`` [min, max]
    (the peak load too: Poisson arrivals are drawn by the seed)."""
    head = "| arrivals | peak 10,000 s load | " + " | ".join(f"short {q}" for q in PCT) + " | "
    lines = [head + " | ".join(f"long {q}" for q in PCT) + " | seeds |", "|" + "---|" * 9]
    split = []
    for nodes, arr in settings():
        r = ratios(top, den, nodes, arr, seeds)
        if r is None:
            continue
        got, each = r
        peaks = [d["peak_window_load"] for s in got if (d := load_derived(top, nodes, arr, s)) is not None]
        for key, values in each.items():
            if (sides := both_sides(values)) is not None:
                split.append(f"{short_where(nodes, arr)} {key} {sides}")
        lines.append(
            f"| {arrivals_label(nodes, arr)} | {over_seeds(peaks)} | "
            + " | ".join(over_seeds(v) for v in each.values())
            + f" | {seeds_cell(got, seeds)} |"
        )
    if len(lines) == 2:
        return ["(not measured yet)", ""]
    if len(seeds) > 1:
        lines += ["", disagreement(split)]
    return [*lines, ""]


def jct_cells(summary: dict[str, Any]) -> str:
    """A run's short and long completion times, p50 / p90 / p99 each, as two table cells."""
    return " | ".join(" / ".join(num(summary["jct"][c][q]) for q in PCT) for c in ("short", "long"))


def raw_table(labels: tuple[str, ...], seeds: Sequence[int]) -> list[str]:
    lines = ["| arrivals | policy | seed | short p50 / p90 / p99 (s) | long p50 / p90 / p99 (s) "
             "| short: wait until first task started, p50 / p90 / p99 (s) | utilization | messages "
             "| sim wall (s) |", "|" + "---|" * 9]  # fmt: skip
    for nodes, arr in settings():
        for lab in labels:
            for seed, s in seed_runs(lab, nodes, arr, seeds):
                d = load_derived(lab, nodes, arr, seed)
                w = " / ".join(num(d["short"]["wait"][q]) for q in PCT) if d else "n/a"
                lines.append(
                    f"| {arrivals_label(nodes, arr)} | {lab} | {seed} | {jct_cells(s)} | {w} "
                    f"| {s['utilization']:.1%} | {s['messages']['total']:,} | {num(sim_wall(s))} |"
                )
    return [*lines, ""]


@functools.cache
def short_tasks() -> int:
    """Tasks of the sample's short jobs (the trace's reference cutoff, 1129.532 s)."""
    from aviary.common.trace import read_trace

    return sum(j.tasks for j in read_trace(TRACE) if j.mean < 1129.532)


COUNTERS = (
    "probes",
    "probes_behind_long",
    "short_ran_behind_long",
    "probes_rejected",
    "probes_leftover_cancelled",
    "probes_leftover_kept",
)


def counters_table(seeds: Sequence[int]) -> list[str]:
    """Table 3.2's counters per setting and policy: each the median over ``seeds`` [min, max]; the
    shares (of the probes, of the short tasks) are the medians'."""
    lines = [
        "| arrivals | policy | probes | probes behind long | short tasks ran behind long "
        "| re-scheduled probes (Hawk: stolen, Eagle: SSS) | probes rejected | leftover probes cancelled "
        "| leftover probes kept | seeds |",
        "|" + "---|" * 10,
    ]
    for nodes, arr in settings():
        for lab in ("hawk", "hawk-general", "eagle", "hawk-general-keep", "eagle-keep"):
            runs = seed_runs(lab, nodes, arr, seeds)
            if not runs:
                continue
            cs = [s["counters"] for _, s in runs]
            each: dict[str, list[float | None]] = {k: [float(c.get(k, 0)) for c in cs] for k in COUNTERS}
            each["moved"] = [float(c.get("steals", 0) + c.get("probes_rescheduled", 0)) for c in cs]
            behind, ran = median(each["probes_behind_long"]) or 0, median(each["short_ran_behind_long"]) or 0
            share = behind / max(1.0, median(each["probes"]) or 0)
            cells = [over_seeds(each[k], "{:,.0f}") for k in (*COUNTERS[:3], "moved", *COUNTERS[3:])]
            cells[1] += f" ({share:.0%})"
            cells[2] += f" ({ran / short_tasks():.1%})"
            got = [seed for seed, _ in runs]
            row = " | ".join(cells)
            lines.append(f"| {arrivals_label(nodes, arr)} | {lab} | {row} | {seeds_cell(got, seeds)} |")
    return [*lines, ""]


def verdict(top: str, den: str, keys: tuple[str, ...], ok: Judge, seeds: Sequence[int]) -> str:
    """Where ``top`` over ``den`` satisfies the claim ``ok`` on the ratios ``keys``, per setting, judged
    on each ratio's median over ``seeds`` (the ratios taken within a seed), and where the seeds'
    verdicts differ."""
    rows = []
    for nodes, arr in settings():
        if (r := ratios(top, den, nodes, arr, seeds)) is not None:
            got, each = r
            rows.append((short_where(nodes, arr), got, [each[k] for k in keys]))
    return claim_verdict(rows, ok, seeds)


def claims(seeds: Sequence[int]) -> list[str]:
    s3 = ("short p50", "short p90", "short p99")
    l2 = ("long p50", "long p90")
    l3 = ("long p50", "long p90", "long p99")
    return [
        "Each line: where the claim holds and where not, judged on the median over the seeds of each ratio "
        "(each taken within a seed), with those medians (below 1: the first policy better; *trace 12.5k*: "
        "the sample's own arrivals on 12,500 nodes; *Poisson 0.95*: Poisson arrivals at offered load 0.95 "
        "on 12,500 nodes; a setting with fewer seeds says which it has); then the settings where the seeds' "
        "own verdicts differ, with the ratios' median [min, max].",
        "",
        "- **Fig. 2.5: Hawk better than Sparrow for short jobs** (p50 / p90 / p99 all below 1; thesis: up to "
        f"80 % / 90 % better at p50 / p90): {verdict('hawk', 'sparrow', s3, below(), seeds)}.",
        "- **Fig. 2.5: Hawk better than Sparrow for long jobs at p50 / p90** (thesis: up to 35 % / 10 % "
        f"better when highly loaded): {verdict('hawk', 'sparrow', l2, below(), seeds)}.",
        "- **Fig. 3.2: Eagle better than Hawk (§3.6.1 stealing) for short jobs at every percentile and "
        f"load**: {verdict('eagle', 'hawk-general', s3, below(), seeds)}.",
        "- **Fig. 3.2: long jobs not hurt by Eagle** (long p50 / p90 / p99 at most 1.02 of Hawk's): "
        f"{verdict('eagle', 'hawk-general', l3, in_range(-math.inf, 1.02), seeds)}.",
        "- **Fig. 4.8: Kairos better than Eagle for short jobs** (p50 / p90 / p99 below 1; thesis: up to "
        f"55 % better at high load, similar at low load): {verdict('kairos', 'eagle', s3, below(), seeds)}.",
        "- **Fig. 4.8: Kairos better than Eagle for long jobs at p50 / p90 when the load is at least 50 %**: "
        f"{verdict('kairos', 'eagle', l2, below(), seeds)}.",
        "- **Fig. 4.8: Kairos' long p99 11-33 % worse than Eagle's** (ratio between 1.11 and 1.33, here "
        "read as: worse, by at most 33 %): "
        + verdict("kairos", "eagle", ("long p99",), in_range(1.0, 1.33), seeds)
        + ".",
        "",
    ]


def seeds_text(seeds: Sequence[int]) -> list[str]:
    """The reports' paragraph on the seeds."""
    listed = ", ".join(map(str, seeds))
    return [
        f"Every cell is repeated for seeds {listed} ({len(seeds)} seeds; the seed draws the probes' nodes",
        "and the schedulers' choices, and with Poisson arrivals the arrival times; the jobs, their order",
        "and, with *trace*, their arrival times are the sample's). Each ratio is taken within a seed (both",
        "cells with the same seed); a table cell is the median over the seeds [min, max] (a single value:",
        "every seed gives the same). *seeds* is how many seeds a row has; a row with fewer than",
        f"{len(seeds)} is marked in bold, with the seeds it has. The raw table lists every cell.",
    ]


def thesis_report(seeds: Sequence[int] = SEEDS) -> str:
    lines = [
        "# Hawk, Eagle and Kairos in the thesis' regime of loads (issue 12)",
        "",
        *generated_by("(the set-up is in its docstring). The"),
        "whole bundled 10,000-job Google sample, trace seconds, single-slot nodes, 10 distributed",
        "schedulers, the thesis' parameters; *trace*: the sample's own arrival times, on 12,500-",
        "25,000 nodes, where the busy part of the sample (jobs submitted after 60,000 s) offers a load of",
        "about 1.0 down to 0.5; *Poisson*: the same jobs, in the same order, with Poisson arrivals at",
        "offered load 0.5-0.95 on 12,500 nodes (`--load`, no time or task scaling); *shuffled*: the",
        "same with the jobs in a seeded random order (see the last point below). *Peak 10,000 s",
        "load*: the most task-seconds submitted in any 10,000 s bin over nodes x 10,000 s: the sample's",
        "burst (48 % of its task-seconds are long jobs submitted within 10,000 s) remains with Poisson",
        "arrivals too, because the jobs keep their order. Ratios below 1: the first policy is better.",
        "The overloaded sizes (5,000-8,000 nodes, busy-part load 1.6-2.5) stay the documented stress case",
        "of [`hawk_eagle_sim.md`](hawk_eagle_sim.md) (Eagle's short tail there: issue 4,",
        "[`eagle_tail.md`](eagle_tail.md)); the Kairos investigation is",
        "[`kairos_regime.md`](kairos_regime.md).",
        "",
        *seeds_text(seeds),
        "",
        "## Which thesis claim holds where",
        "",
        *claims(seeds),
        *prose("discussion.md"),
        "",
        "## Hawk normalized to Sparrow (thesis Fig. 2.5; Hawk with every idle node stealing, §2.3.6)",
        "",
        *ratio_table("hawk", "sparrow", seeds),
        "## Eagle normalized to Hawk (thesis Fig. 3.2; Hawk: only general-partition nodes steal, §3.6.1)",
        "",
        *ratio_table("eagle", "hawk-general", seeds),
        "For reference, Eagle normalized to Hawk with every idle node stealing (§2.3.6):",
        "",
        *ratio_table("eagle", "hawk", seeds),
        "## Kairos normalized to Eagle (thesis Fig. 4.8)",
        "",
        *ratio_table("kairos", "eagle", seeds),
        "## Head-of-line blocking (thesis Table 3.2)",
        "",
        "Thesis, Google trace at 15,000 nodes: Hawk 17.30 M probes behind long tasks (67 % of its probes),",
        "0.63 M short tasks ran behind long ones (about 5 % of the short tasks), 15.70 M probes stolen;",
        "Eagle 0 and 0, 16.98 M probes re-scheduled by SSS. Leftover probes are cancelled here (Sparrow's",
        "§2.3.5 behaviour; the authors' simulator keeps them, which triples the steals). Each count: its",
        "median over the seeds [min, max]; the shares in brackets are the medians'.",
        "",
        *counters_table(seeds),
        "## Raw job completion times, each cell",
        "",
        "*sim wall*: the replay's wall time when the cell was run, on a shared machine (cells run at",
        "different times are not comparable).",
        "",
        *raw_table(MAIN, seeds),
        *baselines_section(seeds),
    ]
    return "\n".join(lines) + "\n"


# (top, bottom, what the ratio says) of each setting of the baselines' section
LWL_PAIRS = (
    ("hawk", "lwl", "**Hawk / centralized LWL** (Fig. 2.8)"),
    (
        "hawk-nopartition-nosteal",
        "lwl",
        "control: Hawk without partition or stealing / LWL (only the "
        "short jobs' placement differs: Sparrow's probes, 2 a task, against LWL's choice of the least loaded "
        "nodes)",
    ),
    ("hawk", "hawk-nopartition-nosteal", "what the partition and stealing give Hawk together"),
    ("hawk", "hawk-nosteal", "what stealing gives Hawk (Hawk / Hawk without stealing)"),
    ("hawk", "hawk-nopartition", "what the short partition gives Hawk (Hawk / Hawk without it)"),
)
DLWL_CELLS = ("eagle", "hawk-general", "dlwl", "eagle-nosss", "dlwl-fifo")
LWL_CELLS = ("lwl", "hawk", "hawk-nopartition-nosteal", "hawk-nosteal", "hawk-nopartition")
DLWL_PAIRS = (
    ("eagle", "dlwl", "**Eagle / DLWL+SRPT** (Fig. 3.3)"),
    ("eagle", "hawk-general", "Eagle / Hawk (§3.6.1 stealing), the check of the scale (Fig. 3.2)"),
    ("hawk-general", "dlwl", "Hawk (§3.6.1 stealing) / DLWL+SRPT"),
    ("eagle-nosss", "dlwl", "control: Eagle without SSS / DLWL+SRPT"),
    ("eagle", "eagle-nosss", "what SSS gives Eagle here (Eagle / Eagle without SSS)"),
    ("eagle", "dlwl-fifo", "control: Eagle / DLWL with FIFO nodes (SRPT threshold 0)"),
    ("dlwl", "dlwl-fifo", "what its nodes' SRPT gives DLWL (DLWL / DLWL with FIFO nodes)"),
)


def pairs_table(
    pairs: Sequence[tuple[str, str, str]], nodes: int, arr: str, seeds: Sequence[int]
) -> list[str]:
    """Each pair's ratios in one setting, within a seed, as their median over ``seeds`` [min, max]."""
    head = "| ratio | " + " | ".join(f"{c} {q}" for c in ("short", "long") for q in PCT) + " | seeds |"
    lines = [head, "|" + "---|" * 8]
    for top, den, what in pairs:
        if (r := ratios(top, den, nodes, arr, seeds)) is None:
            lines.append(f"| {what} | " + "not measured yet | " * 6 + "- |")
            continue
        got, each = r
        lines.append(f"| {what} | " + " | ".join(over_seeds(v) for v in each.values())
                     + f" | {seeds_cell(got, seeds)} |")  # fmt: skip
    return [*lines, ""]


def cells_table(labels: Sequence[str], nodes: int, arr: str, seeds: Sequence[int]) -> list[str]:
    """Every seed's cell of ``labels`` in one setting: completion times, utilization, messages, wall."""
    lines = ["| policy | seed | short p50 / p90 / p99 (s) | long p50 / p90 / p99 (s) | makespan (s) "
             "| utilization | messages | sim wall (s) |", "|" + "---|" * 8]  # fmt: skip
    for lab in labels:
        for seed, s in seed_runs(lab, nodes, arr, seeds):
            lines.append(
                f"| {lab} | {seed} | {jct_cells(s)} | {num(s['makespan'])} | {s['utilization']:.1%} "
                f"| {s['messages']['total']:,} | {num(sim_wall(s))} |"
            )
    return [*lines, ""]


def baselines_section(seeds: Sequence[int]) -> list[str]:
    """Hawk vs the centralized LWL of §2.4.5 with its controls, and Eagle vs DLWL+SRPT (§3.6.2)."""
    dlwl_arr = f"load0.95-j{cells.DLWL_JOBS}"
    return [
        "## The baselines: centralized LWL (thesis §2.4.5, Fig. 2.8) and DLWL+SRPT (§3.6.2, Fig. 3.3)",
        "",
        "**Hawk against a centralized LWL** that places every job, short and long, on every node, with",
        "no partition and no stealing (`lwl`, §2.4.5), at trace 12.5k (`--groups baselines`). Hawk",
        "differs from it in three mechanisms: its short jobs are placed by probes, it keeps a short",
        "partition, and its idle nodes steal; the controls take them away one at a time.",
        "",
        *pairs_table(LWL_PAIRS, 12_500, "trace", seeds),
        *prose("baselines.md"),
        "",
        *cells_table(LWL_CELLS, 12_500, "trace", seeds),
        "**Eagle against DLWL+SRPT** (`dlwl`, §3.6.2: every node reports its estimated queue wait to",
        "every scheduler every 3 s when it changed, the schedulers place each task on the least loaded",
        "node they see, plus Apollo's random offset; nodes reorder by SRPT with Eagle's threshold; the",
        "same short partition) at a fifth of the scale (`--groups dlwl`): "
        f"{cells.DLWL_JOBS:,} jobs of the sample drawn by the seed (in the trace's order), Poisson",
        f"arrivals at offered load 0.95, {cells.DLWL_NODES:,} nodes. At 12,500 nodes with the whole",
        "sample DLWL's heartbeat timers alone are ~1.4 G events (every node, every 3 s, until the last",
        "job ends at ~330,000-394,000 s): hours a cell. A fifth of both keeps the jobs per node and the",
        "load, not each job's share of the cluster (a job of 4,950 tasks is 2x the cluster here, 0.4x",
        "at 12,500 nodes): Eagle / Hawk in the same setting checks how far the scale moves the picture.",
        "",
        *pairs_table(DLWL_PAIRS, cells.DLWL_NODES, dlwl_arr, seeds),
        *prose("dlwl.md"),
        "",
        *cells_table(DLWL_CELLS, cells.DLWL_NODES, dlwl_arr, seeds),
    ]


def generated_by(rest: str) -> list[str]:
    """The reports' first line (``rest``: how it goes on), and with :data:`cells.FROM_SWEEP` one more saying
    the cells are the sweeps'."""
    lines = [f"Generated by `python -m aviary.experiments.thesis_regime` {rest}"]
    if cells.FROM_SWEEP is not None:
        specs = f"experiments/sweeps/{{{','.join((*cells.SPECS, *cells.SHUFFLED_SPECS))}}}.toml"
        lines.insert(0, f"Generated from the cells of `aviary sweep {specs}` by `--from-sweep`.")
    return lines


def kairos_report(seeds: Sequence[int] = SEEDS) -> str:
    lines = [
        "# Kairos vs Eagle at a busy-part load of about 1.0: why not Fig. 4.8 (issue 12)",
        "",
        *generated_by("(cells of its `kairos` group, and the"),
        "Kairos and Eagle cells of [`thesis_regime.md`](thesis_regime.md)). Each control changes one",
        "setting of Kairos (thesis §4.6.2: Q = 2, W = 10,000 s, starvation guard after 3 quanta; heartbeat",
        "period and tie-break as `aviary replay --policy kairos` defaults them) and is normalized to Eagle",
        "in the same arrivals. One command per cell, e.g.:",
        "",
        "    aviary replay --runtime sim --policy kairos --nodes 12500 --keep-arrivals --time-scale 1 \\",
        "        --task-scale 1 --seed 0 --kairos-q 2 --quantum 10000 --starvation-quanta 3 --out DIR",
        "",
        *seeds_text(seeds)[:-1],
        f"{len(seeds)} is marked in bold, with the seeds it has. The instrumented runs are seed 0's.",
        "",
        *prose("kairos_findings.md"),
        "",
        "## Kairos and its controls normalized to Eagle",
        "",
        *kairos_controls_table(seeds),
        "## Where short jobs wait",
        "",
        "Wait until a short job's first task started (Kairos: time in the central FIFO queue, since a task",
        "starts on arrival at its node), and for the short jobs at or above their p90 the median share of",
        "their completion time spent before their first task started; each figure the median over the",
        "seeds:",
        "",
        *wait_table(seeds),
        "## What the short jobs' completion times are made of (instrumented Kairos runs, seed 0)",
        "",
        *anatomy_table(),
    ]
    return "\n".join(lines) + "\n"


def anatomy_table() -> list[str]:
    lines = ["| run | short jobs | jobs | median tasks | with a task suspended at least once "
             "| median share of JCT until the last task left the central queue "
             "| median share of JCT the most-suspended task spent suspended |", "|" + "---|" * 7]  # fmt: skip
    notes = []
    for label, nodes, arr in cells.ANATOMY:
        path = OUT / cell_name(label, nodes, arr) / "anatomy.json"
        run = f"{VARIANTS[label][2]}; {arrivals_label(nodes, arr)}"
        if not path.exists():
            if cells.FROM_SWEEP is not None:  # not a sweep cell: the script's instrumented run
                notes.append(f"- {run}: absent (no `{path.relative_to(HERE.parent)}`: the instrumented "
                             "runs are not sweep cells; `python -m aviary.experiments.thesis_regime --groups "
                             "kairos` makes them).")  # fmt: skip
            continue
        a = json.loads(path.read_text())
        for key, what in (("all", "all"), ("p90", ">= p90"), ("p99", ">= p99")):
            t = a[key]
            lines.append(
                f"| {run} | {what} | {t['jobs']:,} | {num(t['tasks_median'])} | {t['suspended']:.0%} | "
                f"{t['queue_share']:.0%} | {t['suspended_share']:.0%} |"
            )
        ss = a["short_suspensions"]
        notes.append(
            f"- {run}: {a['short_tasks_suspended']:.1%} of the short tasks were suspended at least once; "
            f"{ss['count']:,} suspensions of short tasks lasted {num(ss['p50'])} s at the median and "
            f"{num(ss['p90'])} s at p90."
        )
    return [*lines, "", *notes, ""]


def kairos_cells() -> list[Cell]:
    out: list[Cell] = [("kairos", n, "trace") for n in cells.TRACE_NODES]
    out += [(v, 12_500, "trace") for v in KAIROS_CONTROLS]
    out += [("kairos", cells.POISSON_NODES, f"load{rho:.2f}") for rho in sorted(LOADS, reverse=True)]
    out += [(v, cells.POISSON_NODES, "load0.95") for v in ("kairos-q1000", "kairos-w1000")]
    out += [("kairos", cells.POISSON_NODES, f"shuffled{rho:.2f}") for rho in sorted(LOADS, reverse=True)]
    return out


def kairos_controls_table(seeds: Sequence[int]) -> list[str]:
    """Kairos and its controls over Eagle in the same arrivals and seed: each ratio's median over
    ``seeds`` [min, max]; Kairos' own figures, the medians."""
    lines = ["| arrivals | Kairos variant | short p50 | short p90 | short p99 | long p50 | long p90 "
             "| long p99 | Kairos short p50 / p90 / p99 (s), medians | preemptions "
             "| utilization Kairos / Eagle, medians | seeds |", "|" + "---|" * 12]  # fmt: skip
    split = []
    for lab, nodes, arr in kairos_cells():
        r = ratios(lab, "eagle", nodes, arr, seeds)
        if r is None:
            continue
        got, each = r
        ks = [s for seed, s in seed_runs(lab, nodes, arr, got)]
        es = [s for seed, s in seed_runs("eagle", nodes, arr, got)]
        for key, values in each.items():
            if (sides := both_sides(values)) is not None:
                split.append(f"{VARIANTS[lab][2]}, {short_where(nodes, arr)}, {key} {sides}")
        util = [median([s["utilization"] for s in runs]) or 0.0 for runs in (ks, es)]
        lines.append(
            f"| {arrivals_label(nodes, arr)} | {VARIANTS[lab][2]} | "
            + " | ".join(over_seeds(v) for v in each.values())
            + " | " + " / ".join(num(median([k["jct"]["short"][q] for k in ks])) for q in PCT)
            + f" | {over_seeds([float(k['counters'].get('preemptions', 0)) for k in ks], '{:,.0f}')} "
            f"| {util[0]:.1%} / {util[1]:.1%} | {seeds_cell(got, seeds)} |"
        )  # fmt: skip
    if len(seeds) > 1 and len(lines) > 2:
        lines += ["", disagreement(split)]
    return [*lines, ""]


def wait_table(seeds: Sequence[int]) -> list[str]:
    """Where short jobs wait, per setting and policy: each figure the median over ``seeds``."""
    lines = ["| arrivals | policy | short wait p50 / p90 / p99 (s) | short JCT p50 / p90 / p99 (s) "
             "| short jobs >= p90: median share of JCT before the first task started | seeds |",
             "|" + "---|" * 6]  # fmt: skip
    cells = [(lab, n, a) for lab, n, a in kairos_cells() if lab == "kairos" or a in ("trace", "load0.95")]
    seen = set()
    for lab, nodes, arr in cells:
        for lb in (lab, "eagle"):
            if (lb, nodes, arr) in seen:
                continue
            seen.add((lb, nodes, arr))
            runs = [
                (seed, s, d) for seed, s in seed_runs(lb, nodes, arr, seeds)
                if (d := load_derived(lb, nodes, arr, seed)) is not None
            ]  # fmt: skip
            if not runs:
                continue
            share = median([d["short"]["tail_wait_share"] for _, _, d in runs])
            tail = "n/a" if share is None else f"{share:.0%}"
            lines.append(
                f"| {arrivals_label(nodes, arr)} | {VARIANTS[lb][2] if lb != 'eagle' else 'Eagle'} | "
                + " / ".join(num(median([d["short"]["wait"][q] for _, _, d in runs])) for q in PCT)
                + " | "
                + " / ".join(num(median([s["jct"]["short"][q] for _, s, _ in runs])) for q in PCT)
                + f" | {tail} | {seeds_cell([r[0] for r in runs], seeds)} |"
            )
    return [*lines, ""]


def prose(name: str) -> list[str]:
    """The lines of a report's prose, kept beside this module (``discussion.md``, ...)."""
    return (Path(__file__).resolve().parent / name).read_text().splitlines()
