"""``python -m aviary.experiments.kairos_sim``: run what is missing, then write the report and figure."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from aviary.experiments import kairos_sim
from aviary.experiments.kairos_sim import cells
from aviary.experiments.kairos_sim.cells import (
    BASELINE_FLAGS,
    KAIROS,
    SEEDS,
    Pairs,
    control_runs,
    load_summary,
    run,
)
from aviary.experiments.kairos_sim.measure import measure_kairos
from aviary.experiments.kairos_sim.report import (
    MEASURED,
    claims,
    control_lines,
    discussion,
    kairos_lines,
    measurements,
    plot,
    raw_table,
    table,
)
from aviary.experiments.runs import seeded
from aviary.experiments.sweep_cells import from_sweep_flag
from aviary.launch.policies.registry import POLICIES


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(kairos_sim.__doc__ or "").splitlines()[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=[5000, 5500, 6500, 8000])
    ap.add_argument("--baseline", default="eagle")
    ap.add_argument(
        "--seeds",
        "--seed",
        type=int,
        nargs="+",
        default=list(SEEDS),
        help="the seeds of every run (default 0 1 2)",
    )
    ap.add_argument("--jobs", type=int, default=None, help="first N jobs only (quick checks)")
    ap.add_argument(
        "--no-reuse", action="store_true", help="re-run the baseline even if hawk_eagle_sim has it"
    )
    ap.add_argument("--report-only", action="store_true", help="the report from the saved summaries")
    ap.add_argument("--force-measure", action="store_true", help="repeat the instrumented Kairos runs")
    ap.add_argument("--out", type=Path, default=Path("experiments/results/kairos_sim"))
    from_sweep_flag(
        ap, "kairos_sim*", "the report and plot", "; the instrumented runs' measure.json still from --out"
    )
    args = ap.parse_args(argv)
    cells.FROM_SWEEP = args.from_sweep.resolve() if args.from_sweep else None
    if cells.FROM_SWEEP is not None:
        args.report_only = True
    baseline, note = args.baseline, ""
    if baseline not in POLICIES:
        note = f"Policy `{baseline}` is not registered in this checkout: the baseline is `sparrow` instead."
        print(note, file=sys.stderr)
        baseline = "sparrow"
    seeds = sorted(set(args.seeds))
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[int, Pairs] = {}
    for nodes in args.nodes:
        results[nodes] = []
        for seed in seeds:
            runs: dict[str, dict[str, Any]] = {}
            for policy, extra in (("kairos", KAIROS), (baseline, BASELINE_FLAGS)):
                if args.report_only:
                    if (saved := load_summary(args.out, policy, nodes, seed=seed)) is not None:
                        runs[policy] = saved
                    continue
                print(f"{policy} on {nodes} nodes, seed {seed} ...", file=sys.stderr, flush=True)
                reuse = policy == baseline and not args.no_reuse
                runs[policy] = run(policy, nodes, args.out, extra, seed, args.jobs, reuse)
            if len(runs) == 2:
                results[nodes].append((seed, runs["kairos"], runs[baseline]))
    for n in [n for n, runs in results.items() if not runs]:
        where = (
            f"sweep cell under {cells.FROM_SWEEP}"
            if cells.FROM_SWEEP is not None
            else f"run under {args.out}"
        )
        print(f"{n:,} nodes: no finished {where} of both Kairos and {baseline}", file=sys.stderr)
        del results[n]
    if not results:
        where = (
            f"cells of {', '.join(cells.SPECS)} under {cells.FROM_SWEEP}"
            if cells.FROM_SWEEP is not None
            else "runs"
        )
        print(f"kairos_sim: error: no finished {where}", file=sys.stderr)
        return 2
    shown = [a for a in sys.argv[1:] if a != "--report-only"]
    cmd = " ".join(["python -m aviary.experiments.kairos_sim", *shown])
    if cells.FROM_SWEEP is not None:
        specs = f"experiments/sweeps/{{{','.join(cells.SPECS)}}}.toml"
        given = sys.argv[1:] if argv is None else argv
        cmd = f"aviary sweep {specs}`, then `python -m aviary.experiments.kairos_sim {' '.join(given)}"
    text = table(results, baseline, note, cmd, seeds)
    controls: dict[int, Pairs] = {}
    if args.jobs is None:
        for n in cells.CONTROL_NODES:
            if n in results:
                controls[n] = control_runs(args.out, baseline, seeds, n, not args.report_only)
        text += "\n" + "\n".join(claims(results, {n: r for n, r in controls.items() if r}, baseline, seeds))
    found = measurements(list(results), baseline, args.out)
    for n, pairs in controls.items():
        found += control_lines(pairs, baseline, seeds, n)
    if args.jobs is None:
        for n in results:
            path = args.out / seeded(f"kairos-{n}", seeds[0]) / "measure.json"
            if (
                cells.FROM_SWEEP is not None and not path.exists()
            ):  # runs nothing, not even with --force-measure
                found += [
                    f"Kairos on {n:,} nodes, instrumented run: absent (`{path}` not found; the instrumented "
                    "runs are not sweep cells: run the script without --from-sweep to make them).",
                    "",
                ]
                continue
            if not path.exists() or (args.force_measure and cells.FROM_SWEEP is None):
                print(f"kairos on {n} nodes, instrumented ...", file=sys.stderr, flush=True)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(measure_kairos(n, seeds[0])) + "\n")
            found += kairos_lines(json.loads(path.read_text()))
    if found:
        text += "\n## Measurements\n\n" + "\n".join([MEASURED.format(seed=seeds[0]), "", *found])
    if args.jobs is None:
        text += "\n" + "\n".join(raw_table(results, {n: r for n, r in controls.items() if r}, baseline))
    if baseline == "eagle" and args.jobs is None:
        text += "\n" + discussion()
    (args.out / "kairos_sim.md").write_text(text)
    plot(results, baseline, args.out / "kairos_sim.png", seeds)
    print(text)
    return 0
