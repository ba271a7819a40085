"""``python -m aviary.experiments.kairos_analysis``: the simulations, then ``analysis.md``."""

from __future__ import annotations

import argparse
from pathlib import Path

from aviary.experiments import kairos_analysis
from aviary.experiments.kairos_analysis.report import report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(kairos_analysis.__doc__ or "").splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("experiments/results/kairos_real"))
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    ap.add_argument(
        "--published", type=Path, help="the thesis' workload file (section 4; see published_jobs)"
    )
    args = ap.parse_args(argv)
    text = report(args.seeds, args.published)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "analysis.md").write_text(text)
    print(text)
    return 0
