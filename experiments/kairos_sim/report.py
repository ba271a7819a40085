"""The report of :mod:`aviary.experiments.kairos_sim` from its runs: Kairos over the baseline per size
(each ratio within a seed, its median over the seeds [min, max]), which thesis claim holds where, the
measurements, the controls, the raw values and Figure 4.8's bars."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from aviary.experiments.google_sample import busy_load
from aviary.experiments.kairos_sim import cells
from aviary.experiments.kairos_sim.cells import (
    PCTS,
    Pairs,
    folder,
    mean_load,
    read_jobs,
)
from aviary.experiments.kairos_sim.measure import BIN, LONG_BUCKETS
from aviary.experiments.tables import (
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
from aviary.launch.flags.parser import BUNDLED_TRACE

BUSY_NODES = 4704  # single-slot nodes the sample keeps busy at its own arrival times (traces/README.md)


def pair_ratios(runs: Pairs, cls: str) -> dict[str, list[float | None]]:
    """Kairos over the baseline per percentile of ``cls``, each within a seed, in the seeds' order."""
    return {p: [ratio(k["jct"][cls][p], b["jct"][cls][p]) for _, k, b in runs] for p in PCTS}


def ratio_cells(runs: Pairs, cls: str, where: str, split: list[str]) -> str:
    """The p50 | p90 | p99 cells of Kairos over the baseline for ``cls`` (each within a seed, then over
    the seeds), adding to ``split`` the percentiles whose seeds fall on both sides of 1."""
    each = pair_ratios(runs, cls)
    for p, values in each.items():
        if (sides := both_sides(values)) is not None:
            split.append(f"{where}{cls} {p} {sides}")
    return " | ".join(over_seeds(v) for v in each.values())


def medians(runs: Pairs, kairos: bool, cls: str) -> str:
    """``p50 / p90 / p99`` of Kairos' runs (else the baseline's), each the median over the seeds."""
    return " / ".join(num(median([(k if kairos else b)["jct"][cls][p] for _, k, b in runs])) for p in PCTS)


def table(results: dict[int, Pairs], baseline: str, note: str, cmd: str, seeds: Sequence[int]) -> str:
    listed = ", ".join(map(str, seeds))
    lines = [
        f"# Kairos normalized to {baseline}: bundled Google sample, simulated (thesis §4.6, Fig. 4.8)",
        "",
        f"Regenerate: `{cmd}`",
        "",
        "Whole 10,000-job sample at its own arrival times, single-slot nodes, network delay 0.5 ms; Kairos "
        "Q = 2, W = 10,000 s, starvation guard after 3 missed quanta (for 2 W). Ratios below 1: Kairos "
        "better. *Offered load*: the sample's task-seconds over nodes x its span; *busy-part load*: the "
        "same for the jobs submitted after 60,000 s (the first 60,000 s hold 32 of the 10,000 jobs), over "
        "nodes x the time they arrive in (`hawk_eagle_sim.busy_load`): the cluster is overloaded while they "
        "arrive, then drains.",
        "",
        f"Every run is repeated for seeds {listed} (the seed draws the schedulers' and nodes' choices, and "
        "with Poisson arrivals the arrival times; the jobs and, on the trace, their arrival times are the "
        "sample's). Each ratio is taken within a seed (both runs with the same seed); a ratio cell is its "
        "median over the seeds [min, max] (a single value: every seed gives the same); the completion "
        "times, utilizations and preemptions are the medians over the seeds. *seeds*: how many seeds a "
        f"row has; a row with fewer than {len(seeds)} is marked in bold, with the seeds it has.",
    ]
    if note:
        lines += ["", note]
    lines += [
        "",
        "| nodes | offered load | busy-part load | class | p50 ratio | p90 ratio | p99 ratio "
        "| Kairos p50 / p90 / p99 (s) "
        f"| {baseline} p50 / p90 / p99 (s) | util. Kairos | util. {baseline} | preemptions | seeds |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    split: list[str] = []
    for nodes, runs in results.items():
        got = [seed for seed, _, _ in runs]
        util = [
            median([(k if kairos else b)["utilization"] for _, k, b in runs]) or 0.0
            for kairos in (True, False)
        ]
        preempt = over_seeds([float(k["counters"].get("preemptions", 0)) for _, k, _ in runs], "{:,.0f}")
        for cls in ("short", "long"):
            rs = ratio_cells(runs, cls, f"{nodes:,} nodes ", split)
            lines.append(
                f"| {nodes:,} | {BUSY_NODES / nodes:.0%} | {busy_load(nodes):.2f} | {cls} | {rs} "
                f"| {medians(runs, True, cls)} | {medians(runs, False, cls)} | "
                f"{util[0]:.1%} | {util[1]:.1%} | {preempt} | {seeds_cell(got, seeds)} |"
            )
    if len(seeds) > 1:
        lines += ["", disagreement(split)]
    lines += [
        "",
        "Thesis (whole Google trace, 15,000-23,000 nodes): short jobs up to 55 % better at high load, "
        "similar as the load drops; long jobs better at p50/p90 when the load is at least 50 %; long p99 "
        "11-33 % worse; same utilization.",
    ]
    return "\n".join(lines) + "\n"


def raw_table(results: dict[int, Pairs], controls: dict[int, Pairs], baseline: str) -> list[str]:
    """Every run's percentiles, seed by seed (the tables above show their medians)."""
    lines = [
        "## Raw job completion times, each run",
        "",
        "| arrivals | nodes | seed | Kairos short p50 / p90 / p99 (s) | Kairos long p50 / p90 / p99 (s) "
        f"| {baseline} short p50 / p90 / p99 (s) | {baseline} long p50 / p90 / p99 (s) | util. Kairos "
        f"| util. {baseline} |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for arrivals, runs_by in (("trace", results), ("Poisson", controls)):
        for nodes, runs in runs_by.items():
            where = "trace" if arrivals == "trace" else f"Poisson {mean_load(nodes):.2f}"
            for seed, k, b in runs:
                cells = [
                    " / ".join(num(x["jct"][c][p]) for p in PCTS) for x in (k, b) for c in ("short", "long")
                ]
                lines.append(
                    f"| {where} | {nodes:,} | {seed} | " + " | ".join(cells)
                    + f" | {k['utilization']:.1%} | {b['utilization']:.1%} |"
                )  # fmt: skip
    return [*lines, ""]


def claims(
    results: dict[int, Pairs], controls: dict[int, Pairs], baseline: str, seeds: Sequence[int]
) -> list[str]:
    """Which claim of Fig. 4.8 holds where, judged on the medians over the seeds of the ratios (each
    within a seed), and where a seed's verdict differs: on the trace at each size and in the Poisson
    controls."""
    settings = [(f"{n / 1000:g}k", runs) for n, runs in results.items()]
    settings += [(f"Poisson {mean_load(n):.2f} on {n / 1000:g}k", runs) for n, runs in controls.items()]

    def rows(keys: tuple[tuple[str, str], ...]) -> list[tuple[str, list[int], list[list[float | None]]]]:
        out = []
        for where, runs in settings:
            each = {cls: pair_ratios(runs, cls) for cls in ("short", "long")}
            out.append((where, [seed for seed, _, _ in runs], [each[c][p] for c, p in keys]))
        return out

    worse = in_range(1.0, 1.33)
    short = (("short", "p50"), ("short", "p90"), ("short", "p99"))
    tail = (("short", "p90"), ("short", "p99"))
    name = baseline.capitalize()
    return [
        "## Which claim of Fig. 4.8 holds where",
        "",
        "Each line: where the claim holds and where not, judged on the median over the seeds of each ratio "
        f"(each taken within a seed), with those medians (below 1: Kairos better than {name}; *5k*: the "
        "sample's own arrivals on 5,000 nodes; *Poisson 0.94 on 5k*: the control below); then the "
        "settings where the seeds' own verdicts differ, with the ratios' median [min, max].",
        "",
        f"- **Kairos better than {name} for short jobs** (p50 / p90 / p99 all below 1; thesis: up to 55 % "
        f"better at high load): {claim_verdict(rows(short), below(), seeds)}.",
        f"- **... at the short tail** (p90 / p99 below 1): {claim_verdict(rows(tail), below(), seeds)}.",
        f"- **Kairos better than {name} for long jobs at p50 / p90 when the load is at least 50 %**: "
        f"{claim_verdict(rows((('long', 'p50'), ('long', 'p90'))), below(), seeds)}.",
        f"- **Kairos' long p99 11-33 % worse than {name}'s** (ratio between 1.11 and 1.33, here read as: "
        f"worse, by at most 33 %): {claim_verdict(rows((('long', 'p99'),)), worse, seeds)}.",
        "",
    ]


def _pct(xs: list[float], q: float) -> str:
    xs = [x for x in xs if not math.isnan(x)]
    return "n/a" if not xs else f"{float(np.percentile(xs, q)):,.0f}"


def measurements(nodes: list[int], baseline: str, out: Path) -> list[str]:
    """Where the differences come from: short jobs by submission time, long jobs by mean task duration
    (from the runs' ``jobs.csv`` and the trace), for each size whose two ``jobs.csv`` exist."""
    from aviary.common.trace import read_trace

    trace = read_trace(BUNDLED_TRACE)  # job ids follow the trace's submit order
    lines: list[str] = []
    for n in nodes:
        k, b = (
            read_jobs(None if (f := folder(out, p, n)) is None else f / "jobs.csv")
            for p in ("kairos", baseline)
        )
        if k is None or b is None:
            continue
        lines += [f"### {n:,} nodes", "", "Short jobs by submission time (s since the first submission):", ""]
        lines += [f"| submitted | jobs | Kairos p50 / p90 | {baseline} p50 / p90 |", "|---|---|---|---|"]
        short = [j for j, r in k.items() if r[0] == "short"]
        first = math.floor(min(k[j][2] for j in short) / BIN) * BIN
        for lo in np.arange(first, max(k[j][2] for j in short) + 1, BIN):
            ids = [j for j in short if lo <= k[j][2] < lo + BIN]
            if ids:
                kk, bb = [k[j][3] for j in ids], [b[j][3] for j in ids]
                lines.append(
                    f"| {lo:,.0f}-{lo + BIN:,.0f} | {len(ids):,} | {_pct(kk, 50)} / {_pct(kk, 90)} | "
                    f"{_pct(bb, 50)} / {_pct(bb, 90)} |"
                )
        lines += ["", "Long jobs by the trace's mean task duration:", ""]
        lines += [
            f"| mean task duration (s) | jobs | Kairos p50 / p90 / p99 | {baseline} p50 / p90 / p99 |",
            "|---|---|---|---|",
        ]
        for lo, hi in LONG_BUCKETS:
            ids = [j for j, r in k.items() if r[0] == "long" and lo <= trace[j].mean < hi]
            kk, bb = [k[j][3] for j in ids], [b[j][3] for j in ids]
            label = f"{lo:,.0f}+" if math.isinf(hi) else f"{lo:,.0f}-{hi:,.0f}"
            lines.append(
                f"| {label} | {len(ids):,} | {' / '.join(_pct(kk, q) for q in (50, 90, 99))} | "
                f"{' / '.join(_pct(bb, q) for q in (50, 90, 99))} |"
            )
        lines.append("")
    return lines


def control_lines(runs: Pairs, baseline: str, seeds: Sequence[int], nodes: int) -> list[str]:
    """The control's table: Kairos over the baseline per class, each ratio's median over the seeds
    [min, max], the completion times the medians."""
    head = (
        f"### Control: Poisson arrivals at the sample's mean load ({mean_load(nodes):.2f}), {nodes:,} nodes"
    )
    if not runs:
        where = (
            f"`{cells.FROM_SWEEP.name}/kairos_sim_poisson_{nodes}/`"
            if cells.FROM_SWEEP is not None
            else "the runs"
        )
        return [head, "", f"Absent: no finished run of both Kairos and {baseline} in {where}.", ""]
    got = [seed for seed, _, _ in runs]
    lines = [
        head,
        "",
        "| class | p50 ratio | p90 ratio | p99 ratio | Kairos p50 / p90 / p99 (s) "
        f"| {baseline} p50 / p90 / p99 (s) | seeds |",
        "|---|---|---|---|---|---|---|",
    ]
    split: list[str] = []
    for cls in ("short", "long"):
        rs = ratio_cells(runs, cls, "", split)
        lines.append(
            f"| {cls} | {rs} | {medians(runs, True, cls)} | {medians(runs, False, cls)} "
            f"| {seeds_cell(got, seeds)} |"
        )
    if len(seeds) > 1:
        lines += ["", disagreement(split)]
    return [*lines, ""]


def kairos_lines(m: dict[str, Any]) -> list[str]:
    lines = [
        f"Kairos on {m['nodes']:,} nodes, instrumented run: the central FIFO queue, when short jobs left it, "
        "and the suspensions of long tasks:",
        "",
        "| submitted / time (s) | short jobs | median time until the job's last task left the central queue "
        "| median completion time | most tasks in the central queue | of them short |",
        "|---|---|---|---|---|---|",
    ]
    for (lo, n, wait, done), (_, q, sq) in zip(m["short_wait"], m["queue"], strict=True):
        w = "n/a" if wait is None else f"{wait:,.0f}"
        d = "n/a" if done is None else f"{done:,.0f}"
        lines.append(f"| {lo:,.0f}-{lo + BIN:,.0f} | {n:,} | {w} | {d} | {q:,} | {sq:,} |")
    lines += [
        "",
        "| long jobs, mean task duration (s) | tasks | suspensions per task | time suspended / task-seconds "
        "| tasks suspended at least once |",
        "|---|---|---|---|---|",
    ]
    for lo, hi, n, per, frac, once in m["long"]:
        label = f"{lo:,.0f}+" if math.isinf(hi) else f"{lo:,.0f}-{hi:,.0f}"
        lines.append(f"| {label} | {n:,} | {per:.1f} | {frac:.2f} | {once:.0%} |")
    lines += ["", f"Short tasks suspended at least once: {m['short_suspended']:.1%}.", ""]
    return lines


def plot(results: dict[int, Pairs], baseline: str, png: Path, seeds: Sequence[int]) -> None:
    """Figure 4.8's bars: Kairos' p50/p90/p99 over the baseline's per size, short and long jobs, the
    median over ``seeds`` of the ratios within a seed, the whiskers their range (format of ``png``'s
    extension; a log axis when the ratios span orders of magnitude, ``n/a`` when missing)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from aviary.experiments.figures import whiskers
    from aviary.launch.results.compare import ratio_bars, save_figure

    fig = Figure(figsize=(11, 4.6), layout="constrained")
    FigureCanvasAgg(fig)
    nodes = list(results)
    for i, cls in enumerate(("short", "long")):
        ax = fig.add_subplot(1, 2, i + 1)
        each = [pair_ratios(results[n], cls) for n in nodes]
        got = {p: [[v for v in e[p] if v is not None] for e in each] for p in PCTS}
        series = {p: [statistics.median(vs) if vs else None for vs in got[p]] for p in PCTS}
        log = ratio_bars(ax, series, [f"{n:,}" for n in nodes])
        whiskers(ax, got, series, log)
        ax.set_xlabel("single-slot nodes")
        ax.set_ylabel(f"Kairos JCT / {baseline.capitalize()} JCT" + (" (log scale)" if log else ""))
        ax.set_title(f"({'ab'[i]}) {cls} jobs")
    fig.legend(*fig.axes[0].get_legend_handles_labels(), title="percentile", loc="outside right upper")
    first = next(iter(results.values()))[0][1]
    extra = first.get("extra") or {}
    arrivals = "at their own arrival times" if extra.get("keep_arrivals") else f"at load {extra.get('load')}"
    counts = {len(runs) for runs in results.values()}
    few = f"; some sizes {min(counts)} seed(s)" if min(counts) < len(seeds) else ""
    fig.suptitle(
        f"Kairos normalized to {baseline.capitalize()} (below 1 is better; thesis Fig. 4.8), simulated\n"
        f"bundled Google sample: {first.get('jobs', '?'):,} jobs {arrivals}, time scale "
        f"{extra.get('time_scale', 1):g}\nbars: median over seeds {', '.join(map(str, seeds))} of the ratio "
        f"within a seed, whiskers: their min-max{few}",
        fontsize=11,
    )
    save_figure(fig, png)


MEASURED = (
    "The tables by submission time and by task size (from the runs' `jobs.csv`) and the instrumented "
    "Kairos runs are seed {seed}'s; the Poisson controls, as the table above, the medians over the seeds."
)


def discussion() -> str:
    """The discussion that closes the report (``discussion.md`` beside this module)."""
    return (Path(__file__).resolve().parent / "discussion.md").read_text()
