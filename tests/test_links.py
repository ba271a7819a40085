"""Links that lose nothing (``common/links.py``), walked segment by segment: loss, duplication,
reordering, acknowledgement, retransmission with back-off, and the fencing of incarnations."""

from __future__ import annotations

import pytest

from aviary.common.links import RTO, RTO_MAX, LinkEnd, Segment


def pair(a_inc: int = 1, b_inc: int = 1) -> tuple[LinkEnd, LinkEnd]:
    return LinkEnd(a_inc, b_inc), LinkEnd(b_inc, a_inc)


def test_in_order_segments_are_handed_on_at_once_and_acknowledged():
    a, b = pair()
    out, back = b.receive(0.0, a.send(0.0, "m1"))
    assert out == ["m1"] and len(back) == 1 and back[0].seq == 0 and back[0].ack == 1
    assert a.unacked  # not forgotten before the acknowledgement comes
    assert a.receive(0.0, back[0]) == ([], [])  # a bare acknowledgement is not answered
    assert not a.unacked and a.next_due() is None


def test_a_lost_segment_is_sent_again_after_the_timeout_and_the_timeout_backs_off():
    a, b = pair()
    a.send(0.0, "lost")
    assert a.due(RTO / 2) == []
    again = a.due(RTO)
    assert [s.msg for s in again] == ["lost"] and again[0].seq == 1
    assert a.next_due() == RTO + 2 * RTO
    t = a.next_due()
    for _ in range(10):  # a long partition: the timeout grows up to RTO_MAX, not beyond
        assert len(a.due(t)) == 1
        t, before = a.next_due(), t
    assert t - before == RTO_MAX
    a.send(before, "later")  # sent during the partition: its own timeout starts at RTO
    assert a.next_due() == before + RTO
    out, back = b.receive(before, again[0])
    assert out == ["lost"]
    a.receive(before, back[0])  # "lost" acknowledged: only "later" is left
    assert [s.msg for s in a.due(before + RTO)] == ["later"]
    assert a.next_due() == pytest.approx(before + 3 * RTO)


def test_each_segment_backs_off_alone_so_a_later_one_sent_again_does_not_delay_a_lost_one():
    """A lost segment with later ones waiting behind it at the receiver (unacknowledged, as the
    acknowledgement is cumulative): their retransmissions, at their own times, leave the lost one's
    timeout where its own retransmissions put it. (A timeout of the whole link doubled at each of them,
    and a message lost three times under 5 % loss came 3 s late: a false death at the frontend.)"""
    a, b = pair()
    a.send(0.0, "lost")
    b.receive(0.05, a.send(0.05, "waits"))  # came early: held, acknowledged as 0
    assert [s.msg for s in a.due(RTO)] == ["lost"]  # lost again; its timeout is now 2 RTO
    assert [s.msg for s in a.due(0.05 + RTO)] == ["waits"]  # ... and stays 2 RTO
    assert a.next_due() == RTO + 2 * RTO
    again = a.due(3 * RTO)
    assert [s.msg for s in again] == ["lost"]
    out, back = b.receive(3 * RTO, again[0])
    assert out == ["lost", "waits"]
    a.receive(3 * RTO, back[0])
    assert not a.unacked


def test_a_new_acknowledgement_starts_the_back_off_of_what_is_left_anew():
    a, b = pair()
    first = a.send(0.0, "m1")
    a.send(0.0, "m2")  # lost, and lost again with m1's retransmission
    assert len(a.due(RTO)) == 2 and a.next_due() == 3 * RTO
    a.receive(0.3, b.receive(0.3, first)[1][0])  # m1 arrives at last: the link carries
    assert a.next_due() == RTO + RTO  # m2's timeout is RTO again, from its last sending


def test_after_an_acknowledgement_what_is_left_is_due_rto_after_its_last_sending():
    """Sent again at 0.25 s (not at RTO, which would hide the difference), m2 is due at 0.25 + RTO once
    m1's acknowledgement resets its timeout; and every segment sent again is counted."""
    a, b = pair()
    first = a.send(0.0, "m1")
    a.send(0.0, "m2")
    assert len(a.due(0.25)) == 2 and a.counters["retransmitted"] == 2
    a.receive(0.3, b.receive(0.3, first)[1][0])
    assert a.next_due() == pytest.approx(0.25 + RTO)


def test_the_drivers_timer_is_brought_forward_when_an_acknowledgement_resets_the_back_off():
    """The timer set for the backed-off m2 (3 RTO) would send it again 0.2 s late once m1's
    acknowledgement brought its timeout back to RTO: ``rearm`` moves the timer to 2 RTO."""
    a, b = pair()
    first = a.send(0.0, "m1")
    a.send(0.0, "m2")
    assert a.rearm(0.0) == RTO  # the first timer
    assert a.rearm(0.0) is None  # set: nothing sooner
    a.fired()
    assert len(a.due(RTO)) == 2
    assert a.rearm(RTO) == 3 * RTO
    a.receive(0.3, b.receive(0.3, first)[1][0])
    assert a.rearm(0.3) == pytest.approx(2 * RTO)  # sooner than the timer set for 3 RTO: moved
    assert a.timer_at == pytest.approx(2 * RTO)


def test_a_segment_sent_while_the_others_are_backed_off_brings_the_timer_forward():
    a, _ = pair()
    a.send(0.0, "lost")
    t = 0.0
    for _ in range(6):  # a partition: the lost one's timeout grows to RTO_MAX
        assert a.rearm(t) is not None
        a.fired()
        t = a.next_due()
        assert t is not None
        a.due(t)
    assert a.rearm(t) == t + RTO_MAX
    a.send(t + 0.1, "new")  # its own timeout is RTO: the timer set for the lost one would be late
    assert a.rearm(t + 0.1) == pytest.approx(t + 0.1 + RTO)
    assert a.rearm(t + 0.1) is None


def test_an_overdue_segment_sets_the_timer_for_now_and_nothing_unacknowledged_sets_none():
    a, b = pair()
    assert a.rearm(0.0) is None
    seg = a.send(0.0, "m")
    assert a.rearm(5.0) == 5.0  # overdue: at once
    a.fired()
    a.receive(5.0, b.receive(5.0, seg)[1][0])
    assert not a.unacked and a.rearm(5.0) is None and a.next_due() is None


def test_a_duplicate_is_dropped_and_acknowledged_again():
    a, b = pair()
    seg = a.send(0.0, "once")
    assert b.receive(0.0, seg)[0] == ["once"]
    out, back = b.receive(0.0, seg)
    assert out == [] and back[0].ack == 1 and b.counters["duplicates"] == 1


def test_a_segment_that_comes_early_waits_for_those_before_it():
    a, b = pair()
    s1, s2, s3 = (a.send(0.0, m) for m in ("m1", "m2", "m3"))
    assert b.receive(0.0, s3)[0] == []
    assert b.receive(0.0, s2)[0] == []
    out, back = b.receive(0.0, s1)
    assert out == ["m1", "m2", "m3"] and back[-1].ack == 3 and b.counters["held"] == 2
    assert b.receive(0.0, s2)[0] == []  # and late copies after that are duplicates


def test_acknowledgements_ride_on_data_and_are_cumulative():
    a, b = pair()
    for m in ("m1", "m2", "m3"):
        b.receive(0.0, a.send(0.0, m))
    reply = b.send(0.0, "r1")  # b's own message carries its acknowledgement of all three
    assert reply.ack == 3
    assert a.receive(0.0, reply)[0] == ["r1"] and not a.unacked


def test_a_segment_of_an_earlier_incarnation_is_fenced():
    old_central, node = pair()
    late = old_central.send(0.0, "PlaceTask from the old central")
    new_central = LinkEnd(2, 1)
    assert node.receive(1.0, new_central.send(1.0, "GetHolding"))[0] == ["GetHolding"]
    assert node.receive(2.0, late) == ([], [])  # delivered after its successor spoke: dropped
    assert node.counters["fenced"] == 1


def test_a_restarted_receiver_tells_its_peers_who_is_there_and_they_send_again_from_1():
    node, central = pair()
    for m in ("f1", "f2"):
        central.receive(0.0, node.send(0.0, m))  # acknowledgements lost: f1, f2 stay unacknowledged
    node.send(0.0, "f3")  # then the central dies: f3 never reaches it
    restarted = LinkEnd(2, 1)
    out, back = restarted.receive(1.0, Segment(1, 1, 3, 0, "f3"))  # addressed to the old incarnation
    assert out == [] and restarted.counters["misaddressed"] == 1
    assert len(back) == 1 and back[0].inc == 2 and back[0].seq == 0
    out, again = node.receive(1.0, back[0])  # the node learns of the restart
    assert node.peer_inc == 2 and node.counters["peer_restarts"] == 1
    assert [(s.seq, s.msg, s.to_inc) for s in again] == [(1, "f1", 2), (2, "f2", 2), (3, "f3", 2)]
    assert restarted.receive(1.0, again[0])[0] == ["f1"]  # as a socket's queue would deliver them


def test_a_restarted_process_answers_data_to_its_predecessor_but_not_a_bare_acknowledgement():
    """Data addressed to the earlier incarnation (from the first segment on) is answered with an
    acknowledgement that names this one; a bare acknowledgement to it is not (no bare acknowledgement is
    answered)."""
    restarted = LinkEnd(2, 1)
    out, back = restarted.receive(1.0, Segment(1, 1, 1, 0, "f1"))
    assert out == [] and [(s.inc, s.seq) for s in back] == [(2, 0)]
    out, back = restarted.receive(1.0, Segment(1, 1, 0, 0))
    assert out == [] and back == [] and restarted.counters["misaddressed"] == 2


def test_a_fenced_process_gets_no_answer_to_what_is_addressed_to_its_successor():
    old = LinkEnd(1, 1)
    out, back = old.receive(0.0, Segment(1, 2, 1, 0, "for the new incarnation"))
    assert out == [] and back == []
