"""``python -m aviary.experiments.thesis_regime``: run the cells still missing, then write both reports."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from aviary.experiments import thesis_regime
from aviary.experiments.sweep_cells import from_sweep_flag
from aviary.experiments.tables import num
from aviary.experiments.thesis_regime import cells
from aviary.experiments.thesis_regime.cells import (
    ANATOMY,
    BASELINES,
    GROUPS,
    OUT,
    PCT,
    RESULTS,
    SEEDS,
    anatomy,
    cell_name,
    derive,
    load_cell,
    run_cell,
    shuffled_trace,
)
from aviary.experiments.thesis_regime.report import kairos_report, thesis_report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(thesis_regime.__doc__ or "").splitlines()[0])
    every = {**GROUPS, **BASELINES}
    ap.add_argument("--groups", nargs="+", choices=list(every), default=list(every))
    ap.add_argument("--report-only", action="store_true", help="only rebuild the reports")
    ap.add_argument("--force", action="store_true", help="re-run cells whose results exist")
    ap.add_argument(
        "--seeds", type=int, nargs="+", default=list(SEEDS), help="the seeds of every cell (default 0 1 2)"
    )
    ap.add_argument(
        "--shuffled-trace",
        action="store_true",
        help="only write the shuffled copy of the sample (the trace of sweeps/thesis_regime_shuffled.toml)",
    )
    from_sweep_flag(
        ap,
        "thesis_regime_*",
        "the reports",
        "; the anatomy.json of the instrumented runs still from the script's folder",
    )
    ap.add_argument("--results", type=Path, default=RESULTS, help="where the reports go")
    args = ap.parse_args(argv)
    if args.shuffled_trace:
        print(f"written: {shuffled_trace()}")
        return 0
    cells.FROM_SWEEP = args.from_sweep.resolve() if args.from_sweep else None
    if cells.FROM_SWEEP is not None:
        args.report_only = True
    else:
        OUT.mkdir(parents=True, exist_ok=True)
    seeds = sorted(set(args.seeds))
    if not args.report_only:
        todo = [(*cell, seed) for group in args.groups for cell in every[group] for seed in seeds]
        for label, nodes, arr, seed in todo:
            name = cell_name(label, nodes, arr, seed)
            if load_cell(label, nodes, arr, seed) is not None and not args.force:
                if not (OUT / name / "derived.json").exists() and (OUT / name / "jobs.csv").exists():
                    (OUT / name / "derived.json").write_text(
                        json.dumps(derive(OUT / name / "jobs.csv", nodes, arr), indent=1) + "\n"
                    )
                continue
            print(f"{name} ...", flush=True, file=sys.stderr)
            s = run_cell(label, nodes, arr, seed=seed)
            print(f"  short p50/p90/p99 {' / '.join(num(s['jct']['short'][q]) for q in PCT)}, "
                  f"long {' / '.join(num(s['jct']['long'][q]) for q in PCT)}, "
                  f"{s['extra']['sim_wall_seconds']:.0f} s", flush=True, file=sys.stderr)  # fmt: skip
        if "kairos" in args.groups:
            for label, nodes, arr in ANATOMY:
                path = OUT / cell_name(label, nodes, arr) / "anatomy.json"
                if path.exists() and not args.force:
                    continue
                print(f"{cell_name(label, nodes, arr)}, instrumented ...", flush=True, file=sys.stderr)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(anatomy(label, nodes, arr), indent=1) + "\n")
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "thesis_regime.md").write_text(thesis_report(seeds))
    (args.results / "kairos_regime.md").write_text(kairos_report(seeds))
    print(f"written: {args.results / 'thesis_regime.md'}, {args.results / 'kairos_regime.md'}")
    return 0
