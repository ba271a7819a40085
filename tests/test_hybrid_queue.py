"""The hybrid node queue (worker/queues.py): FIFO, Eagle's SRPT with bypass counters (thesis Algorithm 1),
Hawk's steal groups (Figure 2.3); the blocked SRPT scan against a plain one."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from aviary.worker.queues import BLOCK, Entry, HybridQueue


def probe(job: int, est: float = 1.0, remaining: int = 1, count: int = 1, sched: str = "s") -> Entry:
    return Entry(sched, job, est, probe=True, remaining=remaining, count=count)


def long(job: int, est: float = 100.0, index: int = 0) -> Entry:
    return Entry("central", job, est, probe=False, long=True, task_index=index, duration=est)


def naive_srpt(q: HybridQueue, stop_at_long: bool = True) -> Entry | None:
    """Algorithm 1 as written: one pass over the queue, head first."""
    best, best_work, min_slack = None, math.inf, math.inf
    for e in q:
        if stop_at_long and e.long:
            break
        if e.active < e.count and e.remaining * e.estimate < best_work and e.estimate <= min_slack:
            best, best_work = e, e.remaining * e.estimate
        min_slack = min(min_slack, q.threshold * e.estimate - q.bypass_of(e))
    if best is None:
        best = next((e for e in q if e.active < e.count), None)
    return best


# --- FIFO ------------------------------------------------------------------------------------------


def test_fifo_serves_in_arrival_order_and_skips_removed_entries():
    q = HybridQueue()
    a, b, c = probe(1), long(2), probe(3)
    for e in (a, b, c):
        q.push(e)
    assert q.first() is a and len(q) == 3 and q.longs == 1
    q.remove(a)
    assert q.first() is b
    q.remove(b)
    assert q.first() is c and q.longs == 0


def test_cancel_drops_only_that_jobs_probes_and_counts_reservations():
    q = HybridQueue()
    q.push(probe(1, count=3))
    q.push(probe(2))
    q.push(probe(1))
    assert q.cancel("s", 1) == 4
    assert [e.job_id for e in q] == [2]
    assert q.cancel("other", 2) == 0


# --- SRPT -----------------------------------------------------------------------------------------


def test_srpt_picks_least_remaining_work_among_probes_ahead_of_the_first_long():
    q = HybridQueue()
    big, small, behind = probe(1, est=2.0, remaining=10), probe(2, est=1.0, remaining=3), probe(3, 1.0, 1)
    for e in (big, small, long(9), behind):
        q.push(e)
    # Job 3 has the least remaining work but waits behind the long entry: not a candidate.
    assert q.srpt() is small
    # Without the stop at the first long entry (DLWL+SRPT) it competes.
    assert q.srpt(stop_at_long=False) is behind


def test_srpt_returns_the_head_when_a_long_entry_is_first():
    q = HybridQueue()
    head = long(9)
    q.push(head)
    q.push(probe(1))
    assert q.srpt() is head


def test_bypass_is_refused_once_the_counter_would_pass_the_threshold():
    # Threshold 5 x the bypassed probe's estimate (2.0): 10 units of bypass allowed in all.
    q = HybridQueue(threshold=5.0)
    first = probe(1, est=2.0, remaining=100)  # lots of remaining work: SRPT would always skip it
    small = probe(2, est=3.0, remaining=1)
    q.push(first)
    q.push(small)
    for expected_bypass in (3.0, 6.0, 9.0):
        assert q.srpt() is small
        q.charge_bypass(small)  # the small job's task was handed out
        assert q.bypass_of(first) == expected_bypass
    # 9 + 3 = 12 > 10: the small job may not bypass the first probe again, FIFO takes over.
    assert q.srpt() is first
    # A task of estimate 1 still fits (9 + 1 <= 10).
    tiny = probe(3, est=1.0, remaining=1)
    q.push(tiny)
    assert q.srpt() is tiny


def test_bypass_check_covers_every_probe_in_front():
    q = HybridQueue(threshold=5.0)
    a, b, c = probe(1, 10.0, 50), probe(2, 1.0, 50), probe(3, 2.0, 1)
    for e in (a, b, c):
        q.push(e)
    assert q.srpt() is c  # 2 <= slack of a (50) and of b (5)
    for _ in range(2):
        q.charge_bypass(c)
    assert (q.bypass_of(a), q.bypass_of(b)) == (4.0, 4.0)
    assert q.srpt() is b  # b's slack is 1 < 2: c may not pass it; b has less work than a


def test_sticky_probes_holding_a_slot_are_not_chosen_again():
    q = HybridQueue()
    a, b = probe(1, remaining=1), probe(2, remaining=5)
    q.push(a)
    q.push(b)
    q.activate(a, 1)
    assert q.srpt() is b and q.first() is b
    q.activate(a, -1)
    assert q.srpt() is a


def test_remaining_updates_reorder_srpt():
    q = HybridQueue()
    a, b = probe(1, remaining=5), probe(2, remaining=3)
    q.push(a)
    q.push(b)
    assert q.srpt() is b
    q.set_remaining("s", 1, 1)
    assert q.srpt() is a


def test_a_remaining_count_of_zero_is_written_like_any_other():
    """The last update a job's nodes get says 0 tasks left (Eagle, §3.4.3): that count, told and not yet
    written when the queue is next read, puts the job's probe first (0 work), even told twice, and a
    cancel of the job's probes writes it into its placed entries first."""
    q = HybridQueue()
    a, b = probe(1, remaining=5), probe(2, remaining=3)
    q.push(a)
    q.push(b)
    q.set_remaining("s", 1, 0)
    q.set_remaining("s", 1, 0)
    assert q.srpt() is a and a.remaining == 0
    placed = Entry("s", 2, 1.0, probe=False, remaining=3, task_index=0, duration=1.0)
    q.push(placed)
    q.set_remaining("s", 2, 0)
    assert q.cancel("s", 2) == 1 and placed.remaining == 0


OPS = st.lists(
    st.tuples(
        st.sampled_from(["push", "push", "push", "long", "remove", "remaining", "activate", "serve"]),
        st.integers(0, 10_000),
        st.floats(0.5, 20.0),
        st.integers(0, 30),
    ),
    min_size=1,
    max_size=4 * BLOCK + 20,
)


@settings(max_examples=60, deadline=None)
@given(OPS, st.booleans())
def test_blocked_srpt_scan_equals_the_plain_scan(ops, stop_at_long):
    q = HybridQueue(threshold=5.0)
    live: list[Entry] = []
    job = 0
    for op, pick, est, rem in ops:
        if op == "push":
            job += 1
            e = probe(job, est=est, remaining=rem)
            q.push(e)
            live.append(e)
        elif op == "long":
            job += 1
            e = long(job, est=est)
            q.push(e)
            live.append(e)
        elif live and op == "remove":
            q.remove(live.pop(pick % len(live)))
        elif live and op == "remaining":
            e = live[pick % len(live)]
            q.set_remaining(e.scheduler, e.job_id, rem)
        elif live and op == "activate":
            e = live[pick % len(live)]
            if e.probe:
                q.activate(e, 1 if e.active == 0 else -1)
        elif op == "serve":
            chosen = q.srpt(stop_at_long=stop_at_long)
            assert chosen is naive_srpt(q, stop_at_long)
            if chosen is not None:
                q.charge_bypass(chosen)
                if pick % 2:
                    q.remove(chosen)
                    live.remove(chosen)
        assert q.srpt(stop_at_long=stop_at_long) is naive_srpt(q, stop_at_long)
        assert q.first() is next((e for e in q if e.active < e.count), None)
    assert len(q) == len(live) and list(q) == live


# --- stealing (thesis Figure 2.3) ---------------------------------------------------------------------


def kinds(q: HybridQueue) -> str:
    return "".join("L" if e.long else "S" for e in q)


def build(pattern: str) -> HybridQueue:
    q = HybridQueue()
    for i, c in enumerate(pattern):
        q.push(long(i) if c == "L" else probe(i))
    return q


def test_steal_case_a1_running_short_steals_the_shorts_after_the_long():
    # The node runs a short task; its queue: S L S S -> the two S after L are stolen.
    q = build("SLSS")
    assert [e.job_id for e in q.steal_group(running_long=False)] == [2, 3]
    assert kinds(q) == "SL"


def test_steal_case_a2_only_the_first_group_after_the_first_long():
    # Running a short task; queue: L S S L S -> only the first group (after the first L).
    q = build("LSSLS")
    assert [e.job_id for e in q.steal_group(running_long=False)] == [1, 2]
    assert kinds(q) == "LLS"


def test_steal_case_b1_running_long_steals_the_shorts_right_behind_it():
    # The node runs a long task; its queue: S S L S -> the head group.
    q = build("SSLS")
    assert [e.job_id for e in q.steal_group(running_long=True)] == [0, 1]
    assert kinds(q) == "LS"


def test_steal_case_b2_running_long_with_a_long_at_the_head():
    # Running a long task; queue: L S S -> the shorts behind the queued long.
    q = build("LSS")
    assert [e.job_id for e in q.steal_group(running_long=True)] == [1, 2]
    assert kinds(q) == "L"


def test_nothing_to_steal_without_long_work():
    assert build("SSS").steal_group(running_long=False) == []
    assert build("SSL").steal_group(running_long=False) == []


def probes_queued(n: int) -> tuple[HybridQueue, list[Entry]]:
    """A queue of ``n`` probes of jobs 0 .. n-1, in that order."""
    q = HybridQueue()
    entries = [probe(j) for j in range(n)]
    for e in entries:
        q.push(e)
    return q, entries


def test_a_drained_queue_leaves_no_cycles_between_entries_and_their_blocks():
    """A discarded block lets go of its entries (each still points to its block): otherwise every block
    and its entries are garbage only the cycle collector can free (80-100 MB per whole-sample run)."""
    q, entries = probes_queued(3 * BLOCK + 5)
    for e in entries[: 2 * BLOCK]:
        q.remove(e)
    assert q.first() is entries[2 * BLOCK]
    for e in entries[2 * BLOCK :]:
        q.remove(e)
    assert q.first() is None and len(q) == 0
    blocks = {id(e.block): e.block for e in entries}
    assert len(blocks) == 4
    assert all(b is not None and b.entries == [] for b in blocks.values())


def test_a_queue_with_many_finished_blocks_at_its_head_drops_them_and_keeps_its_order():
    """More than 64 blocks gone at the head, fewer live after them: the head blocks are cut off (their
    entries let go), and the live entries are served in arrival order from the first one."""
    q, entries = probes_queued(70 * BLOCK + 3)
    for e in entries[: 65 * BLOCK]:
        q.remove(e)
    assert all(e.block is not None and e.block.entries == [] for e in entries[: 65 * BLOCK])
    assert q.first() is entries[65 * BLOCK]
    assert [e.job_id for e in q] == [e.job_id for e in entries[65 * BLOCK :]]
    assert len(q) == 5 * BLOCK + 3
