"""Wire codec: round trips, and every kind of bad frame is rejected with its reason."""

import contextlib

import msgpack
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
    frame = msgpack.packb([PROTOCOL_VERSION, Probe.TAG, 1, 2.0, 3])
    assert decode(frame) == Probe(1, 2.0, 3, 1)


def test_frames_written_before_the_dag_fields_still_decode():
    """SubmitJob, PlaceTask and Stats gained optional fields (stages, deadline, slo, gang, preference,
    slowdown; demand; log): the frames of the earlier protocol decode to their defaults."""
    old_submit = msgpack.packb([PROTOCOL_VERSION, SubmitJob.TAG, 7, [1.0, 2.0], 1.5])
    assert decode(old_submit) == SubmitJob(7, [1.0, 2.0], 1.5)
    assert decode(old_submit).stages == [] and decode(old_submit).slowdown == 1.0
    old_place = msgpack.packb([PROTOCOL_VERSION, PlaceTask.TAG, 7, 0, 1.0, 1.0])
    assert decode(old_place) == PlaceTask(7, 0, 1.0, 1.0) and decode(old_place).demand == []
    old_stats = msgpack.packb([PROTOCOL_VERSION, Stats.TAG, {"a": 1}, {"Probe": 2}])
    assert decode(old_stats).log == []
    dag = SubmitJob(8, [1.0] * 3, 1.0, [[1, 1.0, [1, 2, 0, 0], []], [2, 1.0, [0.5], [0]]], 30.0, "be", True)
    assert decode(encode(dag)) == dag
    with pytest.raises(BadFrame):  # a stage list that is no list
        decode(msgpack.packb([PROTOCOL_VERSION, SubmitJob.TAG, 9, [1.0], 1.0, "stages"]))


def test_tags_are_unique():
    assert len({m.TAG for m in MESSAGE_TYPES}) == len(MESSAGE_TYPES)


@pytest.mark.parametrize(
    ("frame", "kind"),
    [
        (b"\xc1garbage", "not-msgpack"),
        (msgpack.packb({"a": 1}), "not-a-message"),
        (msgpack.packb([99, Probe.TAG, 1, 2.0, 3]), "bad-version"),
        (msgpack.packb([PROTOCOL_VERSION, 999]), "unknown-type"),
        (msgpack.packb([PROTOCOL_VERSION, "Probe", 1]), "unknown-type"),
        (msgpack.packb([PROTOCOL_VERSION, Probe.TAG, 1]), "bad-fields"),
        (msgpack.packb([PROTOCOL_VERSION, Probe.TAG, 1, "x", 3]), "bad-fields"),
        (msgpack.packb([PROTOCOL_VERSION, Probe.TAG, 1, 2.0, 3, 4, 5]), "bad-fields"),
        (msgpack.packb([PROTOCOL_VERSION, SubmitJob.TAG, 1, [1.0, "x"], 1.0]), "bad-fields"),
        (msgpack.packb([PROTOCOL_VERSION, Probe.TAG, True, 2.0, 3]), "bad-fields"),
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
