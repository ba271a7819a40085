"""Node queues of the hybrid schedulers (Hawk, Eagle, DLWL): one FIFO-ordered list of entries that know
whether they are short or long, served in FIFO order or by Eagle's SRPT with bypass counters.

An :class:`Entry` is either a *probe* (a reservation of a job of a distributed scheduler, late binding:
the node asks for a task when it serves it) or a *placed task* (a long task placed by the central
scheduler, thesis §2.3.7, or a task placed early by a DLWL scheduler, §3.6.2). Entries stay in arrival
order; removals are lazy (an entry is marked dead and skipped), so a cancel costs O(1).

Selection:

- :meth:`HybridQueue.first` is FIFO: the first live entry that can take a slot (Hawk, thesis §2.3.1:
  "the server queue management policy is FIFO").
- :meth:`HybridQueue.srpt` is Eagle's ``GetProbeFromQueue`` (thesis Algorithm 1, §3.4.3): among the
  short probes ahead of the first long entry, the one of the job with the least estimated remaining
  work (remaining tasks x estimated task duration) that may bypass every probe in front of it; else the
  head of the queue. A probe P may be bypassed by a task T only while P's bypass counter plus T's
  estimated duration stays within ``threshold`` x P's estimated task duration (§3.5: threshold 5).
  After T is handed out, :meth:`HybridQueue.charge_bypass` adds T's estimate to the counters of the
  entries in front of it. With ``stop_at_long=False`` (DLWL+SRPT) every entry competes, long or short.
Speed: under overload a node's queue holds thousands of probes, and SRPT looks at all of them at every
slot. The queue is therefore cut into blocks of :data:`BLOCK` entries, each knowing the least slack,
estimate and remaining work of its entries (and a bypass amount owed to all of them, added lazily): a
scan skips a block whose entries can neither beat the best candidate so far nor fit in the slack in
front of them. The result is exactly that of the plain scan (``tests/test_hybrid_queue.py`` checks it
against one).

- :meth:`HybridQueue.steal_group` is Hawk's victim side of stealing (thesis §2.3.6, Figure 2.3): the
  first consecutive group of short probes that comes after a long task; when the node runs a long task,
  the group right after it (after any long entries at the head).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

__all__ = ["BLOCK", "Entry", "HybridQueue"]

BLOCK = 32
"""Entries per block of a queue."""


class Entry:
    """A queue entry: a probe (``probe=True``, ``count`` reservations) or a placed task (``count`` 1)."""

    __slots__ = (
        "active",
        "block",
        "bypass",
        "count",
        "dead",
        "duration",
        "estimate",
        "job_id",
        "long",
        "mark",
        "probe",
        "remaining",
        "scheduler",
        "task_index",
        "tasks",
    )

    def __init__(
        self,
        scheduler: str,
        job_id: int,
        estimate: float,
        *,
        probe: bool,
        long: bool = False,
        remaining: int = 0,
        count: int = 1,
        task_index: int = -1,
        duration: float = 0.0,
        mark: float = 0.0,
    ) -> None:
        self.scheduler = scheduler
        self.job_id = job_id
        self.estimate = estimate
        self.probe = probe
        self.long = long
        self.remaining = remaining  # the job's tasks not yet handed out, as last told
        self.count = count  # reservations (probes); 1 for a placed task
        self.task_index = task_index
        self.duration = duration
        self.mark = mark  # the node's long-slot clock when its wait began (HybridNodeCore.long_clock)
        self.active = 0  # slots it holds now (GetTask pending or its task running; sticky probes)
        self.tasks = 0  # tasks it brought
        self.bypass = 0.0  # estimated work that bypassed it, less its block's lazy amount
        self.dead = False
        self.block: _Block | None = None

    @property
    def key(self) -> tuple[str, int]:
        return (self.scheduler, self.job_id)

    def __repr__(self) -> str:
        kind = ("L" if self.long else "S") + ("p" if self.probe else "t")
        return f"<{kind} {self.scheduler}/{self.job_id} x{self.count} rem={self.remaining}>"


class _Block:
    """Up to :data:`BLOCK` consecutive entries and summaries of the live ones (unless ``dirty``): the
    least slack (threshold x estimate - bypass; exact), and over those that can take a slot, their
    number, least estimate and least remaining work (upper bound, lower bounds: enough to skip a block
    safely). ``lazy`` is bypass owed to every entry of the block."""

    __slots__ = (
        "dead",
        "dirty",
        "eligible",
        "entries",
        "lazy",
        "live",
        "longs",
        "min_est",
        "min_slack",
        "min_work",
    )

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.lazy = 0.0
        self.live = 0
        self.dead = 0  # dead entries still in ``entries``
        self.longs = 0
        self.dirty = True
        self.eligible = 0
        self.min_slack = math.inf
        self.min_est = math.inf
        self.min_work = math.inf

    def refresh(self, threshold: float) -> None:
        if self.dead:
            self.entries = [e for e in self.entries if not e.dead]
            self.dead = 0
        lazy = self.lazy
        min_slack = min_est = min_work = math.inf
        eligible = 0
        for e in self.entries:
            if lazy:
                e.bypass += lazy
            est = e.estimate
            slack = threshold * est - e.bypass
            if slack < min_slack:
                min_slack = slack
            if e.active < e.count:
                eligible += 1
                if est < min_est:
                    min_est = est
                work = e.remaining * est
                if work < min_work:
                    min_work = work
        self.lazy = 0.0
        self.min_slack, self.min_est, self.min_work = min_slack, min_est, min_work
        self.eligible = eligible
        self.dirty = False


class _Job:
    """One job's live entries in a queue, and the remaining count told for them but not yet written
    (-1: none)."""

    __slots__ = ("entries", "told")

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.told = -1


class HybridQueue:
    """Entries in arrival order, in blocks, with lazy removal; counts live long entries for SSS.

    ``threshold`` is the SRPT starvation threshold (in estimated task durations of the bypassed entry).
    Whoever changes an entry's ``active``, ``count`` or ``remaining`` calls :meth:`touch` (or uses the
    methods here that do).
    """

    __slots__ = ("_blocks", "_by_job", "_head", "_live", "_pending", "longs", "reservations", "threshold")

    def __init__(self, threshold: float = 5.0) -> None:
        self.threshold = threshold
        self._blocks: list[_Block] = []
        self._head = 0  # blocks before it are empty
        self._live = 0
        self._by_job: dict[tuple[str, int], _Job] = {}  # live entries by (scheduler, job)
        # The jobs told a remaining count not yet written into their entries (``_Job.told``, the last
        # one told): written before anything reads them, so many updates cost one write.
        self._pending: list[_Job] = []
        self.longs = 0  # live long entries (placed or probes)
        self.reservations = 0  # live probe reservations plus live placed tasks

    # --- size ------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._live

    def __iter__(self) -> Iterator[Entry]:
        """Live entries, head first."""
        if self._pending:
            self._write_pending()
        blocks = self._blocks
        for k in range(self._head, len(blocks)):
            for e in blocks[k].entries:
                if not e.dead:
                    yield e

    def bypass_of(self, entry: Entry) -> float:
        """The entry's bypass counter (estimated work that bypassed it)."""
        b = entry.block
        return entry.bypass + (b.lazy if b is not None else 0.0)

    # --- changes ---------------------------------------------------------------------------------
    def push(self, entry: Entry) -> None:
        key = (entry.scheduler, entry.job_id)
        job = self._by_job.get(key)
        if job is None:
            job = self._by_job[key] = _Job()
        elif job.told >= 0:  # a count told before this entry came is not its own
            self._write(job)
        blocks = self._blocks
        if len(blocks) == self._head or len(blocks[-1].entries) >= BLOCK:
            blocks.append(_Block())
        b = blocks[-1]
        entry.block = b
        entry.bypass -= b.lazy  # bypass owed to the block before it arrived is not its own
        b.entries.append(entry)
        b.live += 1
        if entry.long:
            b.longs += 1
            self.longs += 1
        if not b.dirty:  # keep the summaries exact
            est = entry.estimate
            slack = self.threshold * est - entry.bypass - b.lazy
            if slack < b.min_slack:
                b.min_slack = slack
            if entry.active < entry.count:
                b.eligible += 1
                b.min_est = min(b.min_est, est)
                b.min_work = min(b.min_work, entry.remaining * est)
        self._live += 1
        self.reservations += entry.count
        job.entries.append(entry)

    def touch(self, entry: Entry) -> None:
        """The entry's ``active``, ``count`` or ``remaining`` changed."""
        if entry.block is not None:
            entry.block.dirty = True

    def activate(self, entry: Entry, delta: int) -> None:
        """A sticky probe takes (+1) or gives back (-1) a slot."""
        entry.active += delta
        b = entry.block
        if b is None or b.dirty:
            return
        if delta < 0 and entry.active < entry.count:
            # Eligible again: summaries only go down. (Taking a slot leaves them as lower bounds of the
            # eligible entries' values, which only makes a scan look into the block.)
            b.eligible += 1
            b.min_est = min(b.min_est, entry.estimate)
            b.min_work = min(b.min_work, entry.remaining * entry.estimate)

    def remove(self, entry: Entry) -> None:
        """Take a live entry out of the queue (its task started, its job ran out, it was stolen)."""
        if entry.dead:
            return
        entry.dead = True
        self._live -= 1
        self.reservations -= entry.count
        b = entry.block
        if b is not None:
            b.live -= 1
            b.dead += 1
            b.dirty = True
            if entry.long:
                b.longs -= 1
        if entry.long:
            self.longs -= 1
        key = (entry.scheduler, entry.job_id)
        job = self._by_job.get(key)
        if job is not None:
            if len(job.entries) == 1:
                del self._by_job[key]
                job.entries.clear()  # a count told later goes nowhere
            else:
                job.entries.remove(entry)
        self._tidy()

    def consume(self, entry: Entry) -> None:
        """One reservation of a (non-sticky) probe is used; the entry goes when none is left."""
        if entry.count <= 1:
            self.remove(entry)
        else:
            entry.count -= 1
            self.reservations -= 1
            self.touch(entry)

    def cancel(self, scheduler: str, job_id: int) -> int:
        """Drop the job's queued probes; returns how many reservations that drops."""
        job = self._by_job.get((scheduler, job_id))
        if job is None:
            return 0
        if job.told >= 0:  # placed tasks of the job stay: they get what was told
            self._write(job)
        n = 0
        for e in [e for e in job.entries if e.probe]:
            n += e.count
            self.remove(e)
        return n

    def drop_scheduler(self, scheduler: str) -> int:
        """Take out every entry of ``scheduler`` (it died); returns how many."""
        if self._pending:
            self._write_pending()
        doomed = [e for key, job in self._by_job.items() if key[0] == scheduler for e in job.entries]
        for e in doomed:
            self.remove(e)
        return len(doomed)

    def set_remaining(self, scheduler: str, job_id: int, remaining: int) -> None:
        """The job has ``remaining`` tasks not handed out (what its entries' SRPT work is made of);
        written into the entries before anything reads them (the last one told wins)."""
        job = self._by_job.get((scheduler, job_id))
        if job is not None:
            if job.told < 0:
                self._pending.append(job)
            job.told = remaining

    def _write_pending(self) -> None:
        pending = self._pending
        self._pending = []
        for job in pending:
            if job.told >= 0:
                self._write(job)

    def _write(self, job: _Job) -> None:
        """Write the count told into the job's entries (it stays in ``_pending``: skipped there)."""
        remaining = job.told
        job.told = -1
        for e in job.entries:
            before = e.remaining
            e.remaining = remaining
            b = e.block
            if b is None or b.dirty:
                continue
            if remaining > before:
                b.dirty = True
            elif e.active < e.count:
                work = remaining * e.estimate
                if work < b.min_work:
                    b.min_work = work

    def entries_of(self, scheduler: str, job_id: int) -> list[Entry]:
        if self._pending:
            self._write_pending()
        job = self._by_job.get((scheduler, job_id))
        return list(job.entries) if job is not None else []

    def _tidy(self) -> None:
        blocks = self._blocks
        head = self._head
        while head < len(blocks) and blocks[head].live == 0:
            head += 1
        if head == len(blocks):
            for b in blocks:  # its dead entries point back to it: no cycles for the collector to find
                b.entries.clear()
            blocks.clear()
            head = 0
        elif head > 64 and head * 2 > len(blocks):
            for k in range(head):
                blocks[k].entries.clear()
            del blocks[:head]
            head = 0
        self._head = head

    # --- selection -------------------------------------------------------------------------------
    def first(self) -> Entry | None:
        """FIFO: the first live entry that can take a slot now."""
        if self._pending:
            self._write_pending()
        blocks = self._blocks
        threshold = self.threshold
        for k in range(self._head, len(blocks)):
            b = blocks[k]
            if b.dirty:
                b.refresh(threshold)
            if b.eligible:
                for e in b.entries:
                    if not e.dead and e.active < e.count:
                        return e
        return None

    def srpt(self, *, stop_at_long: bool = True) -> Entry | None:
        """Eagle's GetProbeFromQueue (thesis Algorithm 1) with the anti-starvation bypass check.

        Scans from the head; with ``stop_at_long`` it stops at the first long entry (only short probes
        ahead of it compete). An entry that can take a slot is chosen if its job's estimated remaining
        work is the least so far (ties: the earlier one) and its estimated task duration fits in the
        slack (threshold x estimate - bypass counter) of every entry in front of it. When nothing is
        chosen the first entry that can take a slot is returned (FIFO), which may be the long one.
        """
        if self._pending:
            self._write_pending()
        blocks = self._blocks
        threshold = self.threshold
        best: Entry | None = None
        best_work = math.inf
        min_slack = math.inf
        for k in range(self._head, len(blocks)):
            b = blocks[k]
            if b.live == 0:
                continue
            if b.dirty:
                b.refresh(threshold)
            if not (stop_at_long and b.longs) and not (
                b.eligible and b.min_work < best_work and b.min_est <= min_slack
            ):
                if b.min_slack < min_slack:  # no entry here can be chosen: only its slack matters
                    min_slack = b.min_slack
                continue
            lazy = b.lazy
            for e in b.entries:
                if e.dead:
                    continue
                if stop_at_long and e.long:
                    return best if best is not None else self.first()
                est = e.estimate
                if e.active < e.count:
                    work = e.remaining * est
                    if work < best_work and est <= min_slack:
                        best = e
                        best_work = work
                slack = threshold * est - e.bypass - lazy
                if slack < min_slack:
                    min_slack = slack
        return best if best is not None else self.first()

    def charge_bypass(self, chosen: Entry) -> None:
        """Add ``chosen``'s estimated task duration to the bypass counters of the live entries in front
        of it. Does nothing if ``chosen`` is no longer in the queue."""
        cb = chosen.block
        if chosen.dead or cb is None:
            return
        est = chosen.estimate
        blocks = self._blocks
        for k in range(self._head, len(blocks)):
            b = blocks[k]
            if b is cb:
                for e in b.entries:
                    if e is chosen:
                        break
                    if not e.dead:
                        e.bypass += est
                b.dirty = True
                return
            if b.live:
                b.lazy += est
                b.min_slack -= est

    def steal_group(self, running_long: bool) -> list[Entry]:
        """Hawk's victim side (thesis Figure 2.3): remove and return the first consecutive group of short
        probes queued behind a long task. Not running a long task, the node skips the short entries at
        the head first (cases a1, a2); running one, it starts at the head (b1, b2). Then it skips long
        entries and takes the short probes that follow, up to the next long entry. Entries that hold a
        slot (sticky probes) are never given away."""
        if not self.longs and not running_long:
            return []
        if self._pending:
            self._write_pending()
        group: list[Entry] = []
        # One pass over the live entries (head first): 0 skips short entries at the head (not running a
        # long task), 1 skips long entries, 2 takes short probes until the next long or placed entry.
        state = 1 if running_long else 0
        blocks = self._blocks
        done = False
        for k in range(self._head, len(blocks)):
            b = blocks[k]
            if state == 0 and not b.longs:  # short entries only (``longs`` counts the live long ones)
                continue
            for e in b.entries:
                if e.dead:
                    continue
                if state == 0:
                    if not e.long:
                        continue
                    state = 1
                if state == 1:
                    if e.long:
                        continue
                    state = 2
                if e.long or not e.probe:
                    done = True
                    break
                if e.active == 0:
                    group.append(e)
            if done:
                break
        for g in group:
            self.remove(g)
        return group
