"""The speed and memory of ``aviary trace convert google-2011`` on 1 GB or more of generated
``task_events`` (``docs/measurements.md``, "Trace conversion speed"). A benchmark, not a test.

    .venv/bin/python -m aviary.experiments.bench_trace_convert [--gb 1.0] [--dir /tmp/g2011]

Writes schema-true parts (:mod:`aviary.common.traces.fake2011`, gzip level 1) until the uncompressed
``task_events`` reach ``--gb``, then runs the conversion in a child process (``aviary trace convert``) and
reports its wall time, MB/s (compressed and uncompressed) and peak RSS (the child's ``ru_maxrss``)."""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from aviary.common.traces.fake2011 import event_rows, random_jobs, write_parts


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/aviary-g2011-bench"))
    args = ap.parse_args()
    folder: Path = args.dir
    task_bytes = 0
    target = args.gb * 1e9
    if not (folder / "task_events").is_dir():
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
    compressed = sum(p.stat().st_size for p in folder.glob("*/*.gz"))
    out = folder / "out.tr"
    t0 = time.monotonic()
    cmd = [
        sys.executable,
        "-m",
        "aviary.launch.cli",
        "trace",
        "convert",
        "google-2011",
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
