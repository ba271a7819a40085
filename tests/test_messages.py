"""Wire codec: round trips, and every kind of bad frame is rejected with its reason."""

import contextlib

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aviary.common.messages import (
    MESSAGE_TYPES,
    PROTOCOL_VERSION,
    AssignTask,
    BadFrame,
    PlaceTask,
    Probe,
    Register,
    Stats,
    SubmitJob,
    decode,
    encode,
)


def v2(*items):
    """A frame of this protocol by hand: the version byte, then the msgpack array ``[tag, fields...]``."""
    return bytes([PROTOCOL_VERSION]) + msgspec.msgpack.encode(list(items))


@pytest.mark.parametrize(
    "msg",
    [
        SubmitJob(3, [0.5, 1.0], 0.75),
        Probe(1, 2.0, 3, 4),
        AssignTask(1, 2, 3.5, 1.0),
        Register("node", 4),
        Stats({"a": 1}, {"Probe": 2}),
    ],
)
def test_round_trip(msg):
    assert decode(encode(msg)) == msg


def test_optional_fields_may_be_omitted():
    frame = v2(Probe.TAG, 1, 2.0, 3)
    assert decode(frame) == Probe(1, 2.0, 3, 1)


def test_frames_written_before_the_dag_fields_still_decode():
    """SubmitJob, PlaceTask and Stats gained optional fields (stages, deadline, slo, gang, preference,
    slowdown; demand; log): the frames of the earlier protocol decode to their defaults."""
    old_submit = v2(SubmitJob.TAG, 7, [1.0, 2.0], 1.5)
    assert decode(old_submit) == SubmitJob(7, [1.0, 2.0], 1.5)
    assert decode(old_submit).stages == [] and decode(old_submit).slowdown == 1.0
    old_place = v2(PlaceTask.TAG, 7, 0, 1.0, 1.0)
    assert decode(old_place) == PlaceTask(7, 0, 1.0, 1.0) and decode(old_place).demand == []
    old_stats = v2(Stats.TAG, {"a": 1}, {"Probe": 2})
    assert decode(old_stats).log == []
    dag = SubmitJob(8, [1.0] * 3, 1.0, [[1, 1.0, [1, 2, 0, 0], []], [2, 1.0, [0.5], [0]]], 30.0, "be", True)
    assert decode(encode(dag)) == dag
    with pytest.raises(BadFrame):  # a stage list that is no list
        decode(v2(SubmitJob.TAG, 9, [1.0], 1.0, "stages"))


def test_a_frame_of_protocol_1_is_refused_in_one_clear_line():
    """Before issue 27 a frame was ``[1, tag, fields...]`` (hand-checked msgpack): such a sender is named."""
    with pytest.raises(BadFrame) as info:
        decode(msgspec.msgpack.encode([1, Probe.TAG, 1, 2.0, 3]))
    assert info.value.kind == "bad-version"
    assert str(info.value) == "bad-version: a frame of protocol 1; this process speaks 4"


def test_ints_are_read_as_floats_but_bools_are_not_numbers():
    assert decode(v2(Probe.TAG, 1, 2, 3)).estimate == 2.0 and isinstance(
        decode(v2(Probe.TAG, 1, 2, 3)).estimate, float
    )
    with pytest.raises(BadFrame):
        decode(v2(Probe.TAG, 1, True, 3))


def test_tags_are_unique():
    assert len({m.TAG for m in MESSAGE_TYPES}) == len(MESSAGE_TYPES)


@pytest.mark.parametrize(
    ("frame", "kind"),
    [
        (b"\xc1garbage", "not-msgpack"),
        (msgspec.msgpack.encode({"a": 1}), "not-a-message"),
        (msgspec.msgpack.encode([99, Probe.TAG, 1, 2.0, 3]), "bad-version"),
        (bytes([99]) + msgspec.msgpack.encode([Probe.TAG, 1, 2.0, 3]), "bad-version"),
        (bytes([PROTOCOL_VERSION]) + b"\xc1", "not-msgpack"),
        (v2(Probe.TAG, 1, 2.0, 3) + b"x", "not-msgpack"),
        (bytes([PROTOCOL_VERSION]) + msgspec.msgpack.encode({"a": 1}), "not-a-message"),
        (b"", "not-msgpack"),
        (v2(999), "unknown-type"),
        (v2(), "bad-fields"),
        (v2("Probe", 1), "unknown-type"),
        (v2(Probe.TAG, 1), "bad-fields"),
        (v2(Probe.TAG, 1, "x", 3), "bad-fields"),
        (v2(Probe.TAG, 1, 2.0, 3, 4, 5), "bad-fields"),
        (v2(SubmitJob.TAG, 1, [1.0, "x"], 1.0), "bad-fields"),
        (v2(Probe.TAG, True, 2.0, 3), "bad-fields"),
    ],
)
def test_bad_frames_raise_with_their_kind(frame, kind):
    with pytest.raises(BadFrame) as info:
        decode(frame)
    assert info.value.kind == kind


@given(st.binary(max_size=64))
def test_random_bytes_never_escape_as_another_exception(data):
    with contextlib.suppress(BadFrame):
        decode(data)


@given(st.binary(max_size=64))
def test_random_bytes_after_the_version_byte_never_escape_as_another_exception(data):
    with contextlib.suppress(BadFrame):
        decode(bytes([PROTOCOL_VERSION]) + data)


def test_a_string_that_is_not_utf8_is_a_bad_frame():
    with pytest.raises(BadFrame) as info:
        decode(bytes([PROTOCOL_VERSION]) + b"\x93\x15\xa2\x00\x80")  # Register with a broken role
    assert info.value.kind == "not-msgpack"
    with pytest.raises(BadFrame):
        decode(b"\xa2\x00\x80")
