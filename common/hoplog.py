"""Where a message's time goes, hop by hop (issue 27's "a profile per message"): an opt-in log.

With ``AVIARY_HOP_LOG=DIR`` in its environment, a testbed process (and the frontend) drives its cores
with a :class:`HopLogRuntime`: it notes ``time.monotonic()`` (one clock for every process of a machine)
when a message reaches the runtime's handling (read and decoded) and when one is handed to the
transport (before it is encoded), with the message's kind, job and sender or addressee, and writes
them to ``DIR/NAME.hops`` when its run ends. Between one process's ``out`` and the next one's ``in``
is the wire and the wake-up (encode, the send, the kernel, the receiver's loop, the read, decode);
between a process's ``in`` and its ``out`` is its handling (the checks, the core, the effects; at a
node the task too). :mod:`aviary.benchmarks.runtime_overhead.hops` turns the logs into each step's time.
Without the variable the plain :class:`Runtime` runs: nothing of this costs anything.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from .runtime import Runtime

ENV = "AVIARY_HOP_LOG"
IN, OUT = "in", "out"
Hop = tuple[str, str, int, str, float]
"""``(in|out, kind, job, peer, time)``: the peer is the sender of what came in, the addressee of what went."""


class HopLogRuntime(Runtime):
    """A :class:`Runtime` that notes when each message comes in and goes out (see the module)."""

    def __init__(self, *args: Any, directory: Path, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.directory = directory
        self.hops: list[Hop] = []

    def _deliver(self, sender: str, msg: Any) -> None:
        self.hops.append((IN, type(msg).__name__, getattr(msg, "job_id", -1), sender, time.monotonic()))
        super()._deliver(sender, msg)

    def _send(self, to: str, msg: Any, frame: bytes | None = None) -> None:
        self.hops.append((OUT, type(msg).__name__, getattr(msg, "job_id", -1), to, time.monotonic()))
        super()._send(to, msg, frame)

    async def run(self) -> None:
        try:
            await super().run()
        finally:
            self.write()

    def write(self) -> None:
        """The log in ``DIRECTORY/NAME.hops``, one line a message (:func:`read_hops` reads it)."""
        lines = (f"{d} {kind} {job} {peer} {t!r}\n" for d, kind, job, peer, t in self.hops)
        (self.directory / f"{self.core.name}.hops").write_text("".join(lines))


def make_runtime(*args: Any, **kwargs: Any) -> Runtime:
    """A :class:`HopLogRuntime` writing to ``$AVIARY_HOP_LOG`` when it is set, else a :class:`Runtime`."""
    directory = os.environ.get(ENV)
    if not directory:
        return Runtime(*args, **kwargs)
    return HopLogRuntime(*args, directory=Path(directory), **kwargs)


def read_hops(directory: Path) -> dict[str, list[Hop]]:
    """Each process's log in ``directory``, in order."""
    out = {}
    for path in sorted(directory.glob("*.hops")):
        rows = [line.split() for line in path.read_text().splitlines() if line]
        out[path.stem] = [(d, kind, int(job), peer, float(t)) for d, kind, job, peer, t in rows]
    return out
