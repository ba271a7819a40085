"""The flags of ``aviary trace`` (``docs/traces.md``): convert, generate, sample, info."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ...common.model import GOOGLE_CUTOFF
from ...common.trace import MAX_JOBS

FORMATS = ("google-2011", "google-2019", "swf")
"""What ``aviary trace convert`` reads."""


def _out(p: argparse.ArgumentParser, out_file: Any, what: str) -> None:
    p.add_argument("--out", type=out_file, required=True, metavar="FILE", help=f"{what} (required)")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quiet", action="store_true", help="no progress bar (default: one on a terminal)")


def _convert_flags(p: argparse.ArgumentParser, out_file: Any) -> None:
    p.add_argument("format", choices=FORMATS, help="the source's format (required)")
    p.add_argument(
        "inputs",
        nargs="+",
        type=Path,
        metavar="INPUT",
        help="google-2011: the folder holding job_events/ and task_events/ (or their part files); "
        "google-2019: collection_events and instance_events files (.json[.gz] lines or .csv[.gz] with a "
        "header, in any order), or folders holding them; "
        "swf: the .swf[.gz] file",
    )
    _out(p, out_file, "the trace to write (Aviary format, docs/traces.md)")
    p.add_argument(
        "--plain",
        action="store_true",
        help="plain Hawk/Eagle lines, no KEY=VALUE extras (demands, priority, class, dependencies)",
    )
    p.add_argument(
        "--open",
        choices=("drop", "cut"),
        default="drop",
        dest="open_jobs",
        help="jobs that do not end inside the trace's window: drop them (counted), or cut them at its end "
        "(tasks still running end there) (default %(default)s)",
    )
    p.add_argument(
        "--skip-bad",
        action="store_true",
        help="skip a bad row and count it in the summary (default: stop at the first, one line, exit 2)",
    )
    p.add_argument(
        "--sort-buffer",
        type=int,
        default=200_000,
        metavar="N",
        help="jobs held in memory by the external sort into submit order, and (google-2019) events by the "
        "one into time order; more spill to temporary files (default %(default)s)",
    )
    _common(p)


def add_trace_parser(sub: Any, out_file: Any, count_to: Any, positive_int: Any) -> None:
    """``aviary trace`` and its actions, on the sub-parsers ``sub`` (the parser module's helpers given)."""
    tr = sub.add_parser(
        "trace", help="traces in: convert the public traces, sample, generate a synthetic one, describe one"
    )
    tr_sub = tr.add_subparsers(dest="trace_command", metavar="ACTION", parser_class=type(tr), required=True)
    cv = tr_sub.add_parser("convert", help="a public trace (Google 2011, 2019, SWF) to an Aviary trace")
    _convert_flags(cv, out_file)

    ge = tr_sub.add_parser("generate", help="a synthetic trace with the distributions of a given one")
    ge.add_argument("--like", type=Path, required=True, metavar="TRACE", help="the trace to imitate")
    ge.add_argument(
        "--jobs",
        type=count_to(MAX_JOBS * 100, "jobs a generated trace"),
        required=True,
        help="jobs",
    )
    ge.add_argument("--seed", type=int, default=0, help="random seed (default %(default)s)")
    _out(ge, out_file, "the trace to write")
    _common(ge)

    sa = tr_sub.add_parser("sample", help="the jobs of a trace in a time window, priority band, class, size")
    sa.add_argument("trace", type=Path, help="the trace to sample (required)")
    _out(sa, out_file, "the trace to write")
    sa.add_argument("--from", dest="since", type=float, default=None, metavar="S", help="submit >= S")
    sa.add_argument("--until", type=float, default=None, metavar="S", help="submit < S (trace seconds)")
    sa.add_argument("--priority", default=None, metavar="LO:HI", help="priority in LO..HI (prio=)")
    sa.add_argument("--class", dest="sched_class", default=None, metavar="C,..", help="scheduling classes")
    sa.add_argument("--min-tasks", type=positive_int, default=None, help="jobs of at least this many tasks")
    sa.add_argument("--max-tasks", type=positive_int, default=None, help="jobs of at most this many tasks")
    sa.add_argument("--fraction", type=float, default=None, help="keep each job with this probability")
    sa.add_argument(
        "--jobs", type=count_to(MAX_JOBS, "jobs a sample"), default=None, help="at most this many"
    )
    sa.add_argument("--seed", type=int, default=0, help="random seed of --fraction (default %(default)s)")
    _common(sa)

    info = tr_sub.add_parser("info", help="jobs, tasks, distributions, offered load; writes a figure")
    info.add_argument("trace", type=Path, help="the trace (required)")
    info.add_argument("--nodes", type=positive_int, default=10000, help="nodes (default %(default)s)")
    info.add_argument("--slots", type=positive_int, default=1, help="slots a node (default %(default)s)")
    info.add_argument(
        "--cutoff", type=float, default=GOOGLE_CUTOFF, help="short/long cutoff, trace s (default %(default)s)"
    )
    info.add_argument(
        "--plot",
        type=out_file,
        default=None,
        metavar="FILE",
        help="the figure (default: TRACE.png)",
    )
    info.add_argument("--no-plot", action="store_true", help="no figure")
    info.add_argument("--json", action="store_true", help="the figures as JSON on stdout")
