"""STRL (TetriSched §4.1) and its MILP (Algorithm 1), solved with HiGHS: the paper's worked example,
each operator's semantics, supply never exceeded, warm starts accepted."""

from __future__ import annotations

import itertools
import random
from collections import defaultdict

import pytest

from aviary.central.strl import (
    Barrier,
    InvalidAllocation,
    LnCk,
    Max,
    Min,
    NCk,
    Scale,
    Sum,
    describe,
    leaves,
    value,
)
from aviary.central.strl_milp import SolverSettings, Supply, compile_strl, solve_strl

EXACT = SolverSettings(gap=0.0, max_nodes=None)


def one_part(capacity, quanta=8):
    """One equivalence set ``M`` of one partition with ``capacity`` resources at every quantum."""
    return Supply({"M": ["m"]}, {"m": [capacity] * quanta})


def chosen(solution):
    return sorted((c.leaf.tag, c.total) for c in solution.chosen)


def test_the_worked_example_of_section_5_1():
    # 3 machines, 10 s quanta [§5.1, Fig. 4]: job 1 nCk(M,2,0,10,1); job 2 max over s in {0,10,20} of
    # nCk(M,1,s,20,1); job 3 max over s in {0,10} of nCk(M,3,s,10,1).
    job1 = NCk("M", 2, 0, 1, 1.0, tag=("job1", 0))
    job2 = Max(tuple(NCk("M", 1, s, 2, 1.0, tag=("job2", 10 * s)) for s in (0, 1, 2)))
    job3 = Max(tuple(NCk("M", 3, s, 1, 1.0, tag=("job3", 10 * s)) for s in (0, 1)))
    model = compile_strl(Sum((job1, job2, job3)), one_part(3, quanta=4))
    solution = model.solve(EXACT)
    assert solution.status == "Optimal"
    assert solution.objective == pytest.approx(3.0)
    assert chosen(solution) == [(("job1", 0), 2), (("job2", 20), 1), (("job3", 10), 3)]
    # The supply rows of §5.1: job 2 started at 0 is in the rows of t = 0 and t = 10, not t = 20.
    p20 = next(lv for lv in model.leaves if lv.leaf.tag == ("job2", 0)).parts[0][1]
    rows_with = [t for (p, s, e) in model.used["m"] for t in range(s, e) if p == p20]
    assert rows_with == [0, 1]


def test_max_gives_resources_to_at_most_one_branch():
    a, b = NCk("M", 1, 0, 1, 2.0, "a"), NCk("M", 1, 0, 1, 3.0, "b")
    solution = solve_strl(Max((a, b)), one_part(5), EXACT)
    assert solution.objective == pytest.approx(3.0)
    assert chosen(solution) == [("b", 1)]
    with pytest.raises(InvalidAllocation):
        value(Max((a, b)), {a: 1, b: 1})


def test_min_is_its_least_child_and_needs_all_of_them():
    supply = Supply({"A": ["a"], "B": ["b"]}, {"a": [1], "b": [1]})
    expr = Min((NCk("A", 1, 0, 1, 3.0, "x"), NCk("B", 1, 0, 1, 5.0, "y")))
    solution = solve_strl(expr, supply, EXACT)
    assert solution.objective == pytest.approx(3.0)
    assert chosen(solution) == [("x", 1), ("y", 1)]
    # B is full: the AND cannot hold, so A is not given anything either.
    empty_b = Supply({"A": ["a"], "B": ["b"]}, {"a": [1], "b": [0]})
    solution = solve_strl(expr, empty_b, EXACT)
    assert solution.objective == pytest.approx(0.0)
    assert solution.chosen == []


def test_sum_adds_and_scale_multiplies():
    a, b = NCk("M", 1, 0, 1, 2.0, "a"), NCk("M", 2, 0, 1, 3.0, "b")
    assert solve_strl(Sum((a, b)), one_part(3), EXACT).objective == pytest.approx(5.0)
    assert solve_strl(Sum((a, b)), one_part(2), EXACT).objective == pytest.approx(3.0)  # room for one
    scaled = Sum((Scale(a, 4.0), b))
    solution = solve_strl(scaled, one_part(2), EXACT)
    assert solution.objective == pytest.approx(8.0)
    assert chosen(solution) == [("a", 1)]
    assert value(scaled, {a: 1}) == pytest.approx(8.0)


def test_barrier_gives_its_value_only_when_the_child_reaches_it():
    expr = Barrier(LnCk("M", 4, 0, 1, 4.0, "l"), 3.0)
    assert solve_strl(expr, one_part(2), EXACT).objective == pytest.approx(0.0)  # only 2 of 4: worth 2
    solution = solve_strl(expr, one_part(3), EXACT)
    assert solution.objective == pytest.approx(3.0)
    assert chosen(solution)[0][1] >= 3
    pair = Barrier(Sum((NCk("M", 1, 0, 1, 1.0, "p"), NCk("M", 1, 0, 1, 1.0, "q"))), 2.0)
    assert solve_strl(pair, one_part(1), EXACT).objective == pytest.approx(0.0)
    assert solve_strl(pair, one_part(2), EXACT).objective == pytest.approx(2.0)


def test_lnck_is_worth_its_share_of_k_and_takes_partial_grants():
    leaf = LnCk("M", 4, 0, 2, 8.0, "l")
    solution = solve_strl(leaf, one_part(3), EXACT)
    assert solution.objective == pytest.approx(6.0)
    assert chosen(solution) == [("l", 3)]
    assert value(leaf, {leaf: 3}) == pytest.approx(6.0)
    whole = NCk("M", 4, 0, 1, 8.0)
    with pytest.raises(InvalidAllocation):
        value(whole, {whole: 2})  # an nCk is all k or nothing


def test_nck_takes_k_across_the_partitions_of_its_set():
    # Set S = two partitions of 2 each: k = 3 must combine them; set T = one of them only.
    supply = Supply({"S": ["x", "y"], "T": ["y"]}, {"x": [2], "y": [2]})
    s3 = NCk("S", 3, 0, 1, 1.0, "s3")
    solution = solve_strl(s3, supply, EXACT)
    assert solution.chosen[0].grants in ({"x": 2, "y": 1}, {"x": 1, "y": 2})
    assert solve_strl(NCk("T", 3, 0, 1, 1.0), supply, EXACT).objective == pytest.approx(0.0)


def test_describe_and_leaves():
    a, b = NCk("M", 1, 0, 1, 2.0), LnCk("G", 2, 1, 3, 1.0)
    expr = Sum((Max((a, b)), Scale(Barrier(a, 1.0), 2.0)))
    assert list(leaves(expr)) == [a, b, a]
    assert describe(expr) == (
        "sum(max(nCk(M, k=1, s=0, d=1, v=2), LnCk(G, k=2, s=1, d=3, v=1)), "
        "scale(barrier(nCk(M, k=1, s=0, d=1, v=2), 1), 2))"
    )
    with pytest.raises(ValueError):
        NCk("M", 0, 0, 1, 1.0)


# --- random instances against brute force --------------------------------------------------------


def random_tree(rng, depth=0):
    """A small STRL tree over sets A (partition a), B (partition b) and AB (both), 3 quanta."""
    if depth >= 2 or rng.random() < 0.35:
        k = rng.randint(1, 2)
        leaf = NCk(rng.choice(["A", "B", "AB"]), k, rng.randint(0, 1), rng.randint(1, 2), rng.randint(1, 9))
        return LnCk(leaf.set, k, leaf.start, leaf.dur, leaf.value) if rng.random() < 0.25 else leaf
    op = rng.choice(["max", "min", "sum", "sum", "scale", "barrier"])
    if op == "scale":
        return Scale(random_tree(rng, depth + 1), rng.choice([0.5, 2.0, 3.0]))
    if op == "barrier":
        return Barrier(random_tree(rng, depth + 1), float(rng.randint(1, 9)))
    kids = tuple(random_tree(rng, depth + 1) for _ in range(rng.randint(2, 3)))
    return {"max": Max, "min": Min, "sum": Sum}[op](kids)


PARTS = {"A": ["a"], "B": ["b"], "AB": ["a", "b"]}


def splits(leaf):
    """Every grant of ``leaf`` per partition of its set: 0 or k in total (nCk), 0..k (LnCk)."""
    parts = PARTS[leaf.set]
    totals = range(leaf.k + 1) if leaf.linear else (0, leaf.k)
    out = []
    for amounts in itertools.product(range(leaf.k + 1), repeat=len(parts)):
        if sum(amounts) in totals:
            out.append({x: n for x, n in zip(parts, amounts, strict=True) if n})
    return out


def within_supply(allocation, avail):
    used = defaultdict(int)
    for leaf, grants in allocation:
        for x, n in grants.items():
            for t in range(leaf.start, leaf.end):
                used[x, t] += n
    return all(n <= avail[x][min(t, len(avail[x]) - 1)] for (x, t), n in used.items())


def brute_force(expr, avail):
    best = 0.0
    unique = list(dict.fromkeys(leaves(expr)))
    for combo in itertools.product(*(splits(leaf) for leaf in unique)):
        allocation = list(zip(unique, combo, strict=True))
        if not within_supply(allocation, avail):
            continue
        try:
            v = value(expr, {leaf: sum(g.values()) for leaf, g in allocation})
        except InvalidAllocation:
            continue
        best = max(best, v)
    return best


@pytest.mark.parametrize("seed", range(40))
def test_the_milp_optimum_is_the_brute_force_optimum_and_respects_supply(seed):
    rng = random.Random(seed)
    expr = Sum(tuple(random_tree(rng) for _ in range(rng.randint(1, 3))))
    if sum(1 for _ in leaves(expr)) > 6:
        expr = Sum(expr.children[:1])
    avail = {"a": [rng.randint(0, 2) for _ in range(3)], "b": [rng.randint(0, 2) for _ in range(3)]}
    supply = Supply(PARTS, avail)
    solution = solve_strl(expr, supply, EXACT)
    assert solution.objective == pytest.approx(brute_force(expr, avail), abs=1e-6), describe(expr)
    plan = [(c.leaf, c.grants) for c in solution.chosen]
    assert within_supply(plan, avail)
    assert value(expr, {leaf: sum(g.values()) for leaf, g in plan}) == pytest.approx(
        solution.objective, abs=1e-6
    )


@pytest.mark.parametrize("seed", range(15))
def test_a_plan_never_exceeds_a_partitions_capacity_in_any_quantum(seed):
    rng = random.Random(100 + seed)
    parts = {"all": ["x", "y", "z"], "xy": ["x", "y"], "z": ["z"]}
    avail = {p: sorted(rng.randint(0, 6) for _ in range(10)) for p in ("x", "y", "z")}
    jobs = []
    for j in range(12):
        k, d = rng.randint(1, 5), rng.randint(1, 4)
        sets = rng.sample(sorted(parts), rng.randint(1, 3))
        jobs.append(
            Max(
                tuple(
                    NCk(s, k, t, d, rng.uniform(1, 10), (j, s, t))
                    for s in sets
                    for t in range(rng.randint(1, 6))
                )
            )
        )
    solution = solve_strl(Sum(tuple(jobs)), Supply(parts, avail), SolverSettings())
    assert solution.chosen, "something fits"
    used = defaultdict(int)
    for c in solution.chosen:
        assert set(c.grants) <= set(parts[c.leaf.set])
        assert c.total == c.leaf.k
        for x, n in c.grants.items():
            for t in range(c.leaf.start, c.leaf.end):
                used[x, t] += n
    for (x, t), n in used.items():
        assert n <= avail[x][min(t, 9)], (x, t)
    assert len({c.leaf.tag[0] for c in solution.chosen}) == len(solution.chosen)  # one option per job


# --- warm start ------------------------------------------------------------------------------------


def test_the_previous_plan_is_accepted_as_a_mip_start():
    job1 = NCk("M", 2, 0, 1, 1.0, tag=("job1", 0))
    job2 = Max(tuple(NCk("M", 1, s, 2, 1.0, tag=("job2", 10 * s)) for s in (0, 1, 2)))
    job3 = Max(tuple(NCk("M", 3, s, 1, 1.0, tag=("job3", 10 * s)) for s in (0, 1)))
    expr = Sum((job1, job2, job3))
    model = compile_strl(expr, one_part(3, quanta=4))
    first = model.solve(EXACT)
    previous = {c.leaf.tag: c.grants for c in first.chosen}
    start = model.start_vector(previous)
    assert start is not None and start[1] == pytest.approx(3.0)
    assert model.satisfied(start[0])
    again = model.solve(EXACT, start[0])
    assert again.start and again.start_accepted
    assert again.objective == pytest.approx(3.0)


def test_a_partial_previous_plan_is_accepted_and_a_stale_one_is_dropped():
    rng = random.Random(7)
    jobs = [
        Max(tuple(NCk("all", rng.randint(1, 4), t, rng.randint(1, 3), 1.0, (j, t)) for t in range(5)))
        for j in range(20)
    ]
    supply = Supply({"all": ["p"]}, {"p": [6] * 10})
    model = compile_strl(Sum(tuple(jobs)), supply)
    first = model.solve(SolverSettings())
    previous = {c.leaf.tag: c.grants for c in first.chosen[: len(first.chosen) // 2]}
    start = model.start_vector(previous)
    assert start is not None
    solution = model.solve(SolverSettings(), start[0])
    assert solution.start_accepted
    assert solution.objective >= start[1] - 1e-9
    # A plan for a partition that no longer has room: the gang is left out of the start.
    tight = compile_strl(Sum(tuple(jobs)), Supply({"all": ["p"]}, {"p": [0] * 10}))
    assert tight.start_vector(previous) is None


def test_the_solver_is_deterministic():
    rng = random.Random(3)
    jobs = [
        Max(
            tuple(
                NCk(s, rng.randint(1, 4), t, rng.randint(1, 3), rng.uniform(1, 5), (j, s, t))
                for s in "ab"
                for t in range(4)
            )
        )
        for j in range(25)
    ]
    supply = Supply({"a": ["a"], "b": ["a", "b"]}, {"a": [5] * 8, "b": [4] * 8})
    one = solve_strl(Sum(tuple(jobs)), supply)
    two = solve_strl(Sum(tuple(jobs)), supply)
    assert one.values == two.values


# --- LP relaxation and rounding ----------------------------------------------------------------------


def random_jobs(rng, n=5, starts=3):
    return Sum(
        tuple(
            Max(tuple(NCk("M", k, s, d, rng.uniform(1.0, 5.0), tag=(j, s)) for s in range(starts)))
            for j, k, d in ((j, rng.randint(1, 3), rng.randint(1, 3)) for j in range(n))
        )
    )


def test_the_lp_relaxation_bounds_every_integer_plan_and_a_rounding_is_taken_only_within_the_gap():
    rng = random.Random(3)
    loose = 0
    for _ in range(20):
        model = compile_strl(random_jobs(rng), one_part(4))
        relaxation = model.relax()
        exact = model.solve(EXACT)
        assert relaxation is not None and relaxation.bound >= exact.objective - 1e-6
        gap = (relaxation.bound - exact.objective) / max(1.0, exact.objective)
        taken = model.rounded(exact.values, relaxation, gap + 1e-6)
        assert taken is not None and taken.objective == pytest.approx(exact.objective)
        assert chosen(taken) == chosen(exact) and taken.status.startswith("Rounded")
        if gap > 1e-3:
            loose += 1
            assert model.rounded(exact.values, relaxation, gap / 2) is None
    assert loose >= 5  # the relaxation is not always tight, so the gap test above is exercised


def test_leaf_weights_are_the_lp_indicators_of_all_or_nothing_leaves_and_grants_of_linear_ones():
    a, b = NCk("M", 2, 0, 1, 2.0, "a"), LnCk("M", 4, 0, 1, 4.0, "b")
    model = compile_strl(Sum((a, b)), one_part(3, quanta=1))
    weights = model.leaf_weights(model.relax())
    # 3 slots: the LP gives b (worth 1 per slot) and a (1 per slot) 3 slots in all, fractions allowed
    assert weights[id(a)] * 2 + weights[id(b)] * 4 == pytest.approx(3.0)
    assert 0.0 <= weights[id(a)] <= 1.0 and 0.0 <= weights[id(b)] <= 1.0
