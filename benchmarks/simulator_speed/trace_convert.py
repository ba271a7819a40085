"""The speed and memory of ``aviary trace convert google-2011`` on 1 GB or more of generated
``task_events``, and of ``google-2019`` on generated ``collection_events``/``instance_events``
(``docs/measurements.md``, "Trace conversion speed"). A benchmark, not a test.

    .venv/bin/python -m aviary.benchmarks.simulator_speed trace_convert [--gb 1.0] [--dir /tmp/g2011]
    .venv/bin/python -m aviary.benchmarks.simulator_speed trace_convert --format google-2019 --gb 0.5

Writes schema-true input until its uncompressed size reaches ``--gb``: 2011 parts
(:mod:`aviary.common.traces.fake2011`, gzip level 1), or 2019 JSON lines as BigQuery exports them
(:mod:`aviary.common.traces.fake2019`, shuffled in windows of 200,000 rows so they are out of time order,
gzip level 1, files of 1 M rows); then runs the conversion in a child process (``aviary trace convert``)
and reports its wall time, MB/s (compressed and uncompressed) and peak RSS (the child's ``ru_maxrss``)."""

from __future__ import annotations

import argparse
import itertools
import json
import random
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from aviary.common.traces.fake2011 import event_rows, random_jobs, write_parts
from aviary.common.traces.fake2019 import event_records, random_jobs_2019, shuffled, write_json


def generate_2019(folder: Path, target: float) -> float:
    """2019 exports of about ``target`` bytes (uncompressed) into ``folder``; returns the bytes written."""
    rng = random.Random(1)
    records = shuffled(event_records(random_jobs_2019(rng, 10**9, max_tasks=60), rng), rng, window=200_000)
    written = 0
    part = 0
    while written < target:
        chunk = itertools.islice(records, 1_000_000)
        written += write_json(
            folder / f"collection_events-{part:012d}.json.gz",
            folder / f"instance_events-{part:012d}.json.gz",
            chunk,
            level=1,
        )
        part += 1
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--format", choices=("google-2011", "google-2019"), default="google-2011")
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--dir", type=Path, default=None, help="default /tmp/aviary-g2011-bench (or -g2019-)")
    args = ap.parse_args(argv)
    folder: Path = args.dir or Path(f"/tmp/aviary-g{args.format[-4:]}-bench")
    task_bytes = 0
    target = args.gb * 1e9
    if args.format == "google-2019":
        if not any(folder.glob("*.json.gz")):
            folder.mkdir(parents=True, exist_ok=True)
            t0 = time.monotonic()
            written = generate_2019(folder, target)
            print(
                f"generated {written / 1e9:.2f} GB of 2019 events in {time.monotonic() - t0:.0f} s",
                flush=True,
            )
    elif not (folder / "task_events").is_dir():
        rows = event_rows(random_jobs(random.Random(1), 10**9, max_tasks=60))

        def bounded() -> Iterator[tuple[bool, list[str]]]:
            nonlocal task_bytes
            for is_job, fields in rows:
                if not is_job:
                    task_bytes += sum(map(len, fields)) + len(fields)
                    if task_bytes >= target:
                        return
                yield is_job, fields

        t0 = time.monotonic()
        write_parts(folder, bounded(), rows_per_part=2_000_000, level=1)
        print(
            f"generated {task_bytes / 1e9:.2f} GB of task_events in {time.monotonic() - t0:.0f} s", flush=True
        )
    compressed = sum(p.stat().st_size for p in [*folder.glob("*/*.gz"), *folder.glob("*.json.gz")])
    out = folder / "out.tr"
    t0 = time.monotonic()
    cmd = [
        sys.executable,
        "-m",
        "aviary.launch.cli",
        "trace",
        "convert",
        args.format,
        str(folder),
        "--out",
        str(out),
        "--quiet",
    ]
    run = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(run.stdout, run.stderr, sep="")
    data = {
        "compressed_mb": compressed / 1e6,
        "wall_s": wall,
        "compressed_mb_per_s": compressed / 1e6 / wall,
        "peak_rss_mb": peak_mb,
        "output_mb": out.stat().st_size / 1e6 if out.exists() else 0,
    }
    print(json.dumps(data, indent=2))
    return run.returncode


if __name__ == "__main__":
    raise SystemExit(main())
