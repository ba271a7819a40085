"""``aviary trace convert`` and ``aviary trace sample`` (``docs/traces.md``): the converters of
:mod:`aviary.common.traces` streamed into a file in submit order (an external sort, bounded by
``--sort-buffer`` jobs), with a progress bar on the compressed bytes read and a summary at the end."""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterable, Iterator

from ...common.trace import TraceJob, format_job
from ...common.traces.rows import BadRows, Bytes, ExternalSort
from ..flags.spec import UsageError
from .trace_out import progress_bar, write_lines


def in_submit_order(jobs: Iterable[TraceJob], plain: bool, buffer: int) -> Iterator[str]:
    sorter = ExternalSort(buffer)
    for job in jobs:
        sorter.add(job.submit, format_job(job, plain=plain))
    yield from sorter.sorted()


def convert(args: argparse.Namespace) -> int:
    bad = BadRows(skip=args.skip_bad)
    progress = Bytes()
    t0 = time.monotonic()
    with progress_bar(f"convert {args.format}", 1, args.quiet) as show:
        if args.format == "google-2011":
            from ...common.traces.google2011 import Counts, convert_2011

            counts = Counts(bad=bad)
            jobs: Iterable[TraceJob] = convert_2011(
                args.inputs, open_jobs=args.open_jobs, bad=bad, progress=progress, counts=counts
            )
            source = "Google clusterdata-2011-2 (schema v2.1)"
        elif args.format == "google-2019":
            from ...common.traces.google2019 import Counts2019, convert_2019

            counts = Counts2019(bad=bad)
            jobs = convert_2019(
                args.inputs,
                open_jobs=args.open_jobs,
                bad=bad,
                progress=progress,
                counts=counts,
                sort_buffer=args.sort_buffer,
            )
            source = "Google ClusterData2019 (cluster-usage traces v3)"
        elif args.format == "swf":
            from ...common.traces.swf import SwfCounts, convert_swf

            if len(args.inputs) != 1:
                raise UsageError("convert swf: give one .swf file")
            counts = SwfCounts(bad=bad)  # type: ignore[assignment]
            jobs = convert_swf(args.inputs[0], bad=bad, progress=progress, counts=counts)  # type: ignore[arg-type]
            source = "Standard Workload Format (Parallel Workloads Archive)"
        else:
            raise UsageError(f"convert {args.format}: not supported (google-2011, google-2019 and swf are)")
        progress.on_progress = lambda done: show(done / max(1, progress.total))
        header = [
            "# aviary-trace 1 (docs/traces.md): submit num_tasks mean d_1..d_n [KEY=VALUE...]",
            f"# converted from {source}: {' '.join(map(str, args.inputs))}"
            + (f" (--open {args.open_jobs})" if args.format.startswith("google") else ""),
        ]
        n = write_lines(args.out, header, in_submit_order(jobs, args.plain, args.sort_buffer))
    seconds = time.monotonic() - t0
    mb = progress.total / 1e6
    print(f"written: {args.out} ({n:,} jobs) in {seconds:.1f} s ({mb / max(seconds, 1e-9):.1f} MB/s read)")
    for line in counts.lines():
        print(f"  {line}")
    return 0


def _band(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    lo, sep, hi = text.partition(":")
    try:
        band = (int(lo), int(hi if sep else lo))
    except ValueError:
        raise UsageError(f"argument --priority: expected LO:HI (integers), got {text!r}") from None
    if band[0] > band[1]:
        raise UsageError(f"argument --priority: LO must be <= HI, got {text!r}")
    return band


def _classes(text: str | None) -> set[int] | None:
    if text is None:
        return None
    try:
        return {int(c) for c in text.split(",")}
    except ValueError:
        raise UsageError(f"argument --class: expected classes separated by commas, got {text!r}") from None


def sample(args: argparse.Namespace) -> int:
    """``aviary trace sample``: the filtered jobs, in file order, with a header saying how they were drawn."""
    import shlex

    from ...common.traces.sample import Filter, sample_trace

    if args.fraction is not None and not 0 < args.fraction <= 1:
        raise UsageError(f"argument --fraction: must be in (0, 1], got {args.fraction}")
    keep = Filter(
        args.since,
        args.until,
        _band(args.priority),
        _classes(args.sched_class),
        args.min_tasks,
        args.max_tasks,
    )
    jobs = sample_trace(args.trace, keep, fraction=args.fraction, jobs=args.jobs, seed=args.seed)
    how = (
        " ".join(
            f"--{k.replace('_', '-')} {shlex.quote(str(v))}"
            for k, v in vars(args).items()
            if k
            in (
                "since",
                "until",
                "priority",
                "sched_class",
                "min_tasks",
                "max_tasks",
                "fraction",
                "jobs",
                "seed",
            )
            and v is not None
        )
        .replace("--since", "--from")
        .replace("--sched-class", "--class")
    )
    header = [
        "# aviary-trace 1 (docs/traces.md): submit num_tasks mean d_1..d_n [KEY=VALUE...]",
        f"# sampled: aviary trace sample {args.trace} {how}",
    ]
    n = write_lines(args.out, header, (format_job(j) for j in jobs))
    print(f"written: {args.out} ({n:,} jobs of {args.trace})")
    return 0
