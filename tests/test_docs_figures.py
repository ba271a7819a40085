"""The headline figures the pages quote are the committed results' (~1 s): a page cannot keep a figure its
results no longer give.

A quoted figure is marked, in the Markdown, by a comment that names where it comes from; the figures
right after the comment (in the same paragraph or table row, ``**`` aside) must read as the results give
them::

    Tetris' mean JCT is
    <!-- figures: experiments/results/packing_sim/tpch-0.9-tetris-seed* / tpch-0.9-drf-seed*: mean_jct -->
    **0.29** [0.28, 0.30] of DRF's

- the source is a glob of runs under the repository (a run: a folder with ``summary.json``, or a
  ``.json`` file), one a seed; ``A / B`` is the ratio of each run of ``A`` to the run of ``B`` (a glob in
  the same folder) whose name has the same part where the ``*`` stands;
- the fields are dotted paths into the summary, one figure each: the median over the runs [min, max],
  two decimals (``experiments/tables.py``'s ``spread``, as the reports write them); ``FIELD%`` is a
  fraction shown as a whole percentage, ``FIELD~N`` a figure with ``N`` decimals.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from aviary.experiments.tables import spread

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["README.md", "docs/headlines.md", "docs/measurements.md"]
MARKER = re.compile(r"<!-- figures: (?P<source>.+?): (?P<fields>[^:]+?) -->")
NUMBER = r"\d[\d,]*(?:\.\d+)?"
FIGURE = re.compile(rf"(?<![\w.]){NUMBER}(?: \[{NUMBER}, {NUMBER}\])?")


def value(run: Path, field: str) -> float:
    data: Any = json.loads((run / "summary.json" if run.is_dir() else run).read_text())
    for key in field.split("."):
        data = data[key]
    return float(data)


def runs(pattern: str) -> dict[str, Path]:
    """The runs a glob names, by the part of their name where its ``*`` stands."""
    head, _, tail = Path(pattern).name.partition("*")
    found = sorted((ROOT / pattern).parent.glob(Path(pattern).name))
    assert found, f"no results match {pattern}"
    return {path.name[len(head) : len(path.name) - len(tail)]: path for path in found}


def expected(source: str, field: str) -> str:
    percent = field.endswith("%")
    field, _, decimals = field.rstrip("%").partition("~")
    top, _, base = source.partition(" / ")
    values = [value(run, field) for run in runs(top).values()]
    if base:
        bases = runs(str(Path(top).parent / base))
        values = [value(run, field) / value(bases[key], field) for key, run in runs(top).items()]
    if percent:
        return spread([100 * v for v in values], "{:,.0f}")
    return spread(values, f"{{:,.{decimals or 2}f}}")


def marked() -> list[tuple[str, str, str, str]]:
    """(page, source, field, the figure the page quotes) for every marked figure of every page."""
    found = []
    for page in PAGES:
        text = (ROOT / page).read_text()
        for marker in MARKER.finditer(text):
            rest = text[marker.end() :].split("\n\n")[0].split("\n|")[0]  # its paragraph or table row
            quoted = FIGURE.findall(" ".join(rest.replace("**", "").split()))
            fields = [f.strip() for f in marker["fields"].split(",")]
            assert len(quoted) >= len(fields), f"{page}: {marker[0]} is followed by {quoted}"
            found += [(page, marker["source"], f, q) for f, q in zip(fields, quoted, strict=False)]
    return found


FIGURES = marked()


def test_the_headline_pages_mark_their_figures():
    pages = {page for page, *_ in FIGURES}
    assert pages == set(PAGES), f"no marked figure in {set(PAGES) - pages}"


@pytest.mark.parametrize(("page", "source", "field", "quoted"), FIGURES)
def test_a_quoted_figure_is_the_committed_results(page, source, field, quoted):
    assert quoted == expected(source, field), f"{page} quotes {quoted} for {field} of {source}"
