"""Encode + decode time per message kind, today's codec against an earlier revision's, in one run.

    python -m aviary.benchmarks.wire codec [--before REV]

``--before`` (default :data:`BEFORE`, the last revision with the hand-written msgpack codec) names a git
revision whose ``common/messages.py`` is loaded from git beside today's, so both are timed in the same
process on the same machine at the same moment: each kind is built with the same field values in both,
and one round trip is ``decode(encode(msg))``, best of 5 repeats of a loop.
``python -m aviary.benchmarks.wire messages`` prints this table too.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path
from types import ModuleType
from typing import Any

from aviary.common import messages

ROOT = Path(__file__).resolve().parents[2]
BEFORE = "e00518c"
"""The last revision whose wire codec is the hand-written one (protocol 1)."""

BITS = bytes(range(128))  # a 1,024-node bitvector
SAMPLES: dict[str, tuple[Any, ...]] = {
    "SubmitJob": (7, [0.25] * 20, 0.25),
    "JobDone": (7, 0.0125),
    "Probe": (7, 0.25, 18, 1, False, 0),
    "GetTask": (7,),
    "AssignTask": (7, 3, 0.25, 0.25, 17),
    "NoTask": (7,),
    "CancelProbes": (7,),
    "TaskFinished": (7, 3, True),
    "PlaceTask": (7, 3, 0.25, 0.25, [2.0, 8.0, 0.5, 0.25]),
    "KillTask": (7, 3),
    "Hello": (3,),
    "Register": ("node", 4),
    "Shutdown": (),
    "Stats": ({"tasks_launched": 1000, "probes": 2000}, {"Probe": 2000, "GetTask": 1000}),
    "GetStats": (),
    "PeerDown": ("node-3",),
    "PeerUp": ("node-3",),
    "TaskRecords": ([[7, 3, "node-2", 1.0, 1.25, 2.5, 0, True]], 3.5, "boot-id"),
    "GetCounters": (),
    "Counters": ({"tasks_launched": 1000, "probes": 2000}, {"Probe": 2000, "GetTask": 1000}),
    "LongTask": (7, 3, 120.0, 120.0, BITS, 12.5),
    "ProbeRejected": (7, 2, 0, BITS, 12.5),
    "RemainingUpdate": (7, 12),
    "StealRequest": (),
    "StealReply": ([["sched-0", 7, 0.25, 12, 1], ["sched-1", 8, 0.5, 3, 2]],),
    "TaskStarted": (7, 3),
    "QueueReport": (1.75,),
    "QueueTask": (7, 3, 0.25, 0.25, 12, False),
    "Heartbeat": (3, 0.5, 1.5, 1),
    "Recover": ([7, 8, 9], [1.5, 1.0, 0.25], [f"node-{i}" for i in range(10)]),
    "GetHolding": (),
    "Holding": ([(7, 3)], [(7, 4, 1.5), (8, 0, 0.25)], [(7, 0, 3.0), (7, 1, 2.5)]),
    "Link": (
        1795960000123,
        1795960000456,
        42,
        40,
        b"\x04\x93\x02\xcd\x01\x2c\xcb\x3f\xb9\x99\x99\x99\x99\x99\x9a",
    ),
    "LinkFaults": (["*>*:drop=1%", "node-[0-2]<>{scheduler}:cut@30s+10s"], 3, 0.0),
}


def load_revision(rev: str) -> ModuleType:
    """``common/messages.py`` as it was at ``rev``, as a module of its own."""
    try:
        text = subprocess.run(
            ["git", "show", f"{rev}:common/messages.py"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SystemExit(f"wire codec: cannot read common/messages.py at {rev!r} from git: {exc}") from None
    folder = Path(tempfile.mkdtemp(prefix="aviary-codec-"))
    path = folder / "messages_before.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("messages_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["messages_before"] = module  # dataclasses look their module up while building
    spec.loader.exec_module(module)
    return module


def round_trip_ns(module: ModuleType, kind: str, number: int = 20000) -> tuple[float, int]:
    """Best-of-5 nanoseconds per ``decode(encode(msg))`` of ``kind`` with ``module``'s codec, and the
    frame's size in bytes."""
    msg = getattr(module, kind)(*SAMPLES[kind])
    encode, decode = module.encode, module.decode
    assert decode(encode(msg)) == msg
    best = min(timeit.repeat(lambda: decode(encode(msg)), number=number, repeat=5))
    return best / number * 1e9, len(encode(msg))


def table(before: str = BEFORE, number: int = 20000) -> str:
    """The markdown table: per kind, ns per round trip and frame bytes, before and after."""
    old = load_revision(before)
    lines = [
        f"| kind | before ({before}, protocol {old.PROTOCOL_VERSION}) ns | bytes | after (msgspec, protocol "
        f"{messages.PROTOCOL_VERSION}) ns | bytes | after / before |",
        "|---|---|---|---|---|---|",
    ]
    totals = [0.0, 0.0]
    for kind in SAMPLES:
        if not hasattr(old, kind):  # a kind the earlier codec did not have: today's alone, not summed
            a_ns, a_len = round_trip_ns(messages, kind, number)
            lines.append(f"| {kind} (new) | — | — | {a_ns:,.0f} | {a_len} | — |")
            continue
        (b_ns, b_len), (a_ns, a_len) = round_trip_ns(old, kind, number), round_trip_ns(messages, kind, number)
        totals[0] += b_ns
        totals[1] += a_ns
        lines.append(f"| {kind} | {b_ns:,.0f} | {b_len} | {a_ns:,.0f} | {a_len} | {a_ns / b_ns:.2f} |")
    ratio = totals[1] / totals[0]
    lines.append(f"| **the kinds of both, summed** | {totals[0]:,.0f} | | {totals[1]:,.0f} | | {ratio:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--before", default=BEFORE, help="the git revision to compare with (default %(default)s)"
    )
    args = parser.parse_args(argv)
    missing = set(SAMPLES) ^ {cls.__name__ for cls in messages.MESSAGE_TYPES}
    if missing:
        raise SystemExit(f"wire codec: SAMPLES and the message kinds differ: {sorted(missing)}")
    print(table(args.before))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
