"""Resource vectors (``aviary.common.resources``) by hand: parsing, arithmetic, the multi-resource fit and
the shares the DRF, Tetris and packing policies rank by. Every expected value is worked out in the
comments from what the vector means (cores, GB of memory, disk and network as fractions of a machine's)."""

from __future__ import annotations

import math

import pytest

from aviary.common.resources import (
    DEFAULT_MACHINE,
    EPS,
    ONE_CORE,
    RESOURCES,
    ZERO,
    Resources,
    vector_sum,
)


def exact(v: Resources) -> tuple[tuple[str, float], ...]:
    """A vector with the type of each amount, so that 1 and 1.0 (or True) do not compare equal."""
    return tuple((type(x).__name__, x) for x in v)


# --- parsing: Resources.of -------------------------------------------------------------------------


def test_of_a_sequence_fills_the_dimensions_in_order_and_pads_with_zeros():
    assert Resources.of([2, 8, 0.5, 0.25]) == Resources(cores=2.0, mem=8.0, disk=0.5, net=0.25)
    assert Resources.of((3, 4)) == Resources(cores=3.0, mem=4.0, disk=0.0, net=0.0)
    assert Resources.of([]) == ZERO
    # Integers become floats (what crosses the wire as msgpack floats).
    assert exact(Resources.of([2, 8, 1, 0])) == (("float", 2), ("float", 8), ("float", 1), ("float", 0))


def test_of_a_generator_is_read_once():
    assert Resources.of(x for x in (1, 2, 3)) == Resources(1.0, 2.0, 3.0, 0.0)


def test_of_a_mapping_reads_the_dimensions_by_name_and_missing_ones_are_zero():
    assert Resources.of({"mem": 4, "net": 0.5}) == Resources(cores=0.0, mem=4.0, disk=0.0, net=0.5)
    assert Resources.of({"net": 1, "disk": 2, "mem": 3, "cores": 4}) == Resources(4.0, 3.0, 2.0, 1.0)
    assert exact(Resources.of({"cores": 1})) == (("float", 1), ("float", 0), ("float", 0), ("float", 0))
    assert Resources.of({}) == ZERO


def test_of_refuses_an_unknown_name_naming_the_first_in_sorted_order():
    with pytest.raises(ValueError, match=r"^unknown resource 'gpu' \(known: cores, mem, disk, net\)$"):
        Resources.of({"cores": 1, "gpu": 1})
    # Two unknown names: the message names the first alphabetically, whatever the mapping's order.
    with pytest.raises(ValueError, match=r"^unknown resource 'fpga' "):
        Resources.of({"ssd": 1, "fpga": 2})


def test_of_refuses_more_than_four_amounts():
    assert Resources.of([1, 2, 3, 4]) == Resources(1, 2, 3, 4)  # four is the most
    with pytest.raises(ValueError, match=r"^a resource vector has at most 4 amounts, got 5$"):
        Resources.of([1, 2, 3, 4, 5])


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([-1], r"^resource 'cores' must be a finite number >= 0, got -1$"),
        ([1, -0.5], r"^resource 'mem' must be a finite number >= 0, got -0.5$"),
        ([1, 1, math.inf], r"^resource 'disk' must be a finite number >= 0, got inf$"),
        ([1, 1, 1, math.nan], r"^resource 'net' must be a finite number >= 0, got nan$"),
        ([True], r"^resource 'cores' must be a finite number >= 0, got True$"),  # a bool is no amount
        ([1, False], r"^resource 'mem' must be a finite number >= 0, got False$"),
        (["2"], r"^resource 'cores' must be a finite number >= 0, got '2'$"),
        ([1, None], r"^resource 'mem' must be a finite number >= 0, got None$"),
        ({"disk": -2}, r"^resource 'disk' must be a finite number >= 0, got -2$"),
        ({"net": -math.inf}, r"^resource 'net' must be a finite number >= 0, got -inf$"),
    ],
)
def test_of_refuses_an_amount_that_is_not_a_finite_number_at_least_zero(values, message):
    with pytest.raises(ValueError, match=message):
        Resources.of(values)


def test_of_accepts_zero_and_tiny_amounts_in_every_dimension():
    assert Resources.of([0, 0.0, 1e-300, 0]) == Resources(0.0, 0.0, 1e-300, 0.0)
    assert Resources.of({"net": 0}) == ZERO


# --- arithmetic ------------------------------------------------------------------------------------


def test_plus_minus_and_times_work_dimension_by_dimension():
    # Distinct amounts in every dimension, so that a dimension paired with the wrong one shows.
    a, b = Resources(8, 32, 0.5, 0.25), Resources(2, 4, 0.125, 0.0625)
    assert a.plus(b) == Resources(10, 36, 0.625, 0.3125)
    assert b.plus(a) == a.plus(b)
    assert a.minus(b) == Resources(6, 28, 0.375, 0.1875)
    assert b.minus(a) == Resources(-6, -28, -0.375, -0.1875)  # the bookkeeping may go below zero
    assert a.times(3) == Resources(24, 96, 1.5, 0.75)
    assert a.times(0) == ZERO
    # A sum of vectors is a vector of four numbers (not the eight of tuple concatenation).
    assert len(a.plus(b)) == 4 and isinstance(a.plus(b), Resources)
    assert isinstance(a.minus(b), Resources) and isinstance(a.times(2), Resources)


def test_a_released_demand_gives_back_what_was_reserved():
    free = Resources(16, 64, 1, 1)
    demand = Resources(3, 10, 0.25, 0.5)
    assert free.minus(demand) == Resources(13, 54, 0.75, 0.5)
    assert free.minus(demand).plus(demand) == free


def test_dot_and_total():
    a, b = Resources(1, 2, 3, 4), Resources(5, 7, 11, 13)
    assert a.dot(b) == 1 * 5 + 2 * 7 + 3 * 11 + 4 * 13  # 104
    assert b.dot(a) == 104
    assert a.dot(ZERO) == 0
    assert Resources(1, 10, 100, 1000).total() == 1111
    assert ZERO.total() == 0


def test_vector_sum():
    parts = [Resources(1, 2), Resources(3, 0, 0.5), Resources(0, 0, 0, 0.25)]
    assert vector_sum(parts) == Resources(4, 2, 0.5, 0.25)
    assert vector_sum(Resources(cores=1) for _ in range(3)) == Resources(cores=3)
    assert vector_sum([]) == ZERO


# --- the fit -----------------------------------------------------------------------------------------


def test_fits_in_checks_every_dimension_against_its_own():
    free = Resources(4, 16, 0.5, 0.25)
    assert free.fits_in(free)  # an exact fit fits
    assert ZERO.fits_in(free)
    assert Resources(4, 16, 0.5, 0.25).fits_in(Resources(5, 17, 1, 1))
    # One dimension over, the others within: no fit, whichever dimension it is.
    assert not Resources(4.5, 1, 0, 0).fits_in(free)
    assert not Resources(1, 16.5, 0, 0).fits_in(free)
    assert not Resources(1, 1, 0.75, 0).fits_in(free)
    assert not Resources(1, 1, 0, 0.5).fits_in(free)
    # Each amount is compared with the same dimension of the free room, not another one: 10 GB fit in
    # 16 GB though 10 > 4 cores; 3 cores fit in 4 though 3 > 0.5 disk.
    assert Resources(3, 10, 0.5, 0.25).fits_in(free)
    assert not Resources(0.5, 0.5, 0.5, 4).fits_in(Resources(4, 4, 4, 0.5))


def test_fits_in_has_a_slack_of_eps_for_float_sums():
    # Demands of 0.1 and 0.2 GB released in another order leave 0.30000000000000004 != 0.3: still a fit.
    summed = Resources(0.1, 0.1, 0.1, 0.1).plus(Resources(0.2, 0.2, 0.2, 0.2))
    room = Resources(0.3, 0.3, 0.3, 0.3)
    assert summed != room
    assert summed.fits_in(room)
    # The slack is EPS (1e-9) and no more: a demand at exactly free + EPS fits, one at free + 2 EPS does
    # not, dimension by dimension.
    assert EPS == 1e-9
    base = [1.0, 2.0, 3.0, 4.0]
    for d in range(4):
        at = list(base)
        at[d] = base[d] + EPS
        assert Resources(*at).fits_in(Resources(*base)), d
        over = list(base)
        over[d] = base[d] + 2 * EPS
        assert not Resources(*over).fits_in(Resources(*base)), d


def test_a_negative_free_room_fits_nothing_but_zero_demands_in_that_dimension():
    # Over-allocated bookkeeping (free below zero) still refuses a demand of that resource.
    free = Resources(-1, 8, 1, 1)
    assert not ONE_CORE.fits_in(free)
    assert not ZERO.fits_in(free)
    assert Resources(0, 8, 1, 1).fits_in(Resources(0, 8, 1, 1))


# --- shares ------------------------------------------------------------------------------------------


def test_over_gives_each_amount_as_a_share_of_the_capacity():
    # 4 of 16 cores, 16 of 64 GB, half a disk, a quarter of a NIC on the default machine.
    assert Resources(4, 16, 0.5, 0.25).over(DEFAULT_MACHINE) == Resources(0.25, 0.25, 0.5, 0.25)
    # A capacity below one whole unit divides too (0.5 of a 0.5 disk is all of it).
    assert Resources(1, 1, 0.5, 0.25).over(Resources(2, 4, 0.5, 0.125)) == Resources(0.5, 0.25, 1.0, 2.0)
    # A dimension the capacity lacks counts 0, whatever the amount (no division by zero).
    assert Resources(1, 2, 3, 4).over(Resources(2, 0, 0, 8)) == Resources(0.5, 0.0, 0.0, 0.5)
    assert Resources(1, 2, 3, 4).over(ZERO) == ZERO


def test_dominant_share_is_the_largest_share():
    # DRF (Ghodsi et al. §4): <1 CPU, 4 GB> of <9 CPU, 18 GB> -> shares 1/9 and 2/9, dominant: memory.
    assert Resources(1, 4).dominant_share(Resources(9, 18)) == pytest.approx(2 / 9)
    # <3 CPU, 1 GB> -> 1/3 and 1/18: dominant CPU.
    assert Resources(3, 1).dominant_share(Resources(9, 18)) == pytest.approx(1 / 3)
    # The disk's share wins here; each dimension is divided by its own capacity.
    assert Resources(2, 8, 0.75, 0.1).dominant_share(DEFAULT_MACHINE) == 0.75
    # The network's share, with a capacity below 1.
    assert Resources(1, 1, 0.1, 0.4).dominant_share(Resources(16, 64, 1, 0.5)) == 0.8
    # Dimensions the capacity lacks count 0 (a vector that only uses them has a share of 0).
    assert Resources(0, 0, 5, 5).dominant_share(Resources(16, 64, 0, 0)) == 0.0
    assert ZERO.dominant_share(DEFAULT_MACHINE) == 0.0


def test_dominant_share_is_the_maximum_of_over():
    for v, cap in [
        (Resources(3, 7, 0.2, 0.9), Resources(8, 16, 1, 1)),
        (Resources(5, 1, 0.6, 0.1), Resources(10, 2, 0.5, 0)),
    ]:
        assert v.dominant_share(cap) == max(v.over(cap))


# --- names and constants -----------------------------------------------------------------------------


def test_describe_names_every_dimension():
    assert DEFAULT_MACHINE.describe() == "cores=16, mem=64, disk=1, net=1"
    assert Resources(0.5, 2.25, 0, 0.125).describe() == "cores=0.5, mem=2.25, disk=0, net=0.125"


def test_the_named_vectors():
    assert RESOURCES == ("cores", "mem", "disk", "net")
    assert Resources._fields == RESOURCES
    assert tuple(ZERO) == (0, 0, 0, 0)
    assert tuple(ONE_CORE) == (1, 0, 0, 0)
    assert tuple(DEFAULT_MACHINE) == (16, 64, 1, 1)


def test_utilization_over_time_spreads_each_task_s_delivered_work_over_the_windows_it_held_its_demand():
    from aviary.common.usage import TaskRecord, utilization_by_resource, utilization_over_time

    cap = Resources(cores=2.0, mem=8.0)
    tasks = [
        TaskRecord(0, 1.0, 5.0, Resources(cores=1.0)),  # 1 core from 1 s to 5 s
        TaskRecord(1, 6.0, 10.0, Resources(cores=2.0, mem=4.0), work=2.0),  # stretched: half speed
    ]
    series = utilization_over_time(tasks, cap, 10.0, windows=5)  # windows of 2 s
    assert series["t"] == [2.0, 4.0, 6.0, 8.0, 10.0]
    assert series["cores"] == pytest.approx([0.25, 0.5, 0.25, 0.5, 0.5])
    assert series["mem"] == pytest.approx([0.0, 0.0, 0.0, 0.25, 0.25])
    assert "disk" not in series  # the cluster has none
    whole = utilization_by_resource(tasks, cap, 10.0)
    assert sum(series["cores"]) / 5 == pytest.approx(whole["cores"])
    with pytest.raises(ValueError):
        utilization_over_time(tasks, cap, 0.0)
