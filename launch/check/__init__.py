"""The conformance kit: ``aviary policy check NAME`` tells a policy's author whether it keeps the testbed's
rules, with one implementation for them and for the project's own tests (DESIGN §10).

The checks, each passed, failed or not applicable (:func:`check_policy`):

- ``purity``: the policy's core modules import no I/O module and call no I/O built-in
  (:mod:`.purity`'s static scan), and a run under a guard sees none of their code call a clock, a file,
  a socket, a process or a thread;
- ``messages``: random input sequences to each role's core, as a runtime hands them (:mod:`.fuzz`, the
  project's own fuzz driver): no exception, only sendable effects, no task launched twice, no job told
  done twice a submission;
- ``invariants``: random workloads and message orders on the simulator (hypothesis; :mod:`.runs`): no
  exception, no task launched twice or finished twice, no slot double-booked, no memory over capacity,
  no job told done twice, every job finished;
- ``determinism``: the same case twice gives the same results;
- ``node-fault``: a node dying mid-run loses no job;
- ``central-fault``: the central scheduler's death and restart loses no job (central policies);
- ``network-fault``: faults of the network (loss, duplication, reordering, delay and partitions of
  random links in random windows, :func:`.runs.link_faults`) lose no job and make no task finish twice,
  no slot double-booked (the links of :mod:`aviary.common.links` under the policy's cores);
- ``real``: a tiny real run finishes every job and its mean completion time lies within the band the
  simulator gives over one-way delays of 0.5 to 5 ms, widened by 10 % (``packing_real``'s rule).

A failure shows the smallest case hypothesis shrinks to and the command that replays it
(``--only CHECK --case JSON``).
"""

from __future__ import annotations

import shlex
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...common.declaration import Policy
from ..flags.spec import UsageError
from ..policies.registry import build_core, get_policy
from . import purity
from .runs import Case, cases, determinism, run_case, search, searching

CHECKS = (
    "purity",
    "messages",
    "invariants",
    "determinism",
    "node-fault",
    "central-fault",
    "network-fault",
    "real",
)
BUDGETS = {"quick": (10, 8, 3, 5, 5, 5), "default": (60, 60, 10, 25, 15, 25)}
"""Cases per search: messages, invariants, determinism, node-fault, central-fault, network-fault."""


@dataclass
class Result:
    """One check's outcome: ``passed`` None when it does not apply (said in ``detail``)."""

    check: str
    passed: bool | None
    detail: str
    shown: str | None = None
    """A failure's smallest input: its case (one line of JSON), or the inputs of a message sequence."""
    repro: str | None = None


def _repro(ref: str, check: str, case: Case) -> str:
    return f"aviary policy check {shlex.quote(ref)} --only {check} --case {shlex.quote(case.text())}"


def cores_of(policy: Policy) -> list[Any]:
    """One core of each process of a small cluster of the policy (what the purity scan starts from)."""
    cluster = Case(2, 1, 1, 0, 0.0005, [[0.0, [0.1]]]).cluster(policy)
    return [build_core(p, cluster) for p in cluster.processes if p.role != "frontend"]


def check_purity(policy: Policy) -> Result:
    modules = purity.core_modules(cores_of(policy))
    found = purity.static_violations(modules)
    case = Case(3, 2, 2, 1, 0.0005, [[0.0, [0.2, 0.3]], [0.1, [0.5]], [0.4, [0.1, 0.1, 0.1]]])
    with purity.guard(modules) as calls:
        run_case(policy, case)
    found += sorted(set(calls))
    if found:
        return Result(
            "purity",
            False,
            "; ".join(found[:3]) + (f" (and {len(found) - 3} more)" if len(found) > 3 else ""),
        )
    return Result(
        "purity",
        True,
        f"{len(modules)} module(s): {', '.join(modules[:4])}{' ...' if len(modules) > 4 else ''}",
    )


def check_messages(ref: str, policy: Policy, examples: int) -> Result:
    """Random input sequences to each role's core (:mod:`.fuzz`): no exception, only sendable effects, no
    task launched twice, no job told done twice a submission. The same sequences every run, so
    ``--only messages`` replays a failure."""
    from hypothesis import given
    from hypothesis import strategies as st

    from .fuzz import Driver, drive

    cluster = Case(2, 1, 2, 0, 0.0005, []).cluster(policy)
    roles = {p.name: p.role for p in cluster.processes}
    specs = [p for p in cluster.processes if p.role != "frontend"]
    failing: list[Any] = []

    @searching(examples)
    @given(data=st.data())
    def holds(data: Any) -> None:
        spec = specs[data.draw(st.integers(0, len(specs) - 1))]
        d = Driver(build_core(spec, cluster), roles, cluster.frontend.name)
        try:
            drive(d, data)
        except Exception as exc:
            failing[:] = [spec, d.log, exc]  # the last failing call: the shrunk one
            raise

    try:
        holds()
    except Exception:
        if not failing:
            raise
        spec, log, exc = failing
        text = f"the {spec.role} core of {spec.name}: {type(exc).__name__}: {exc}".splitlines()[0]
        shown = f"{len(log)} inputs to {spec.name}:\n    " + "\n    ".join(log[-12:])
        return Result(
            "messages", False, text, shown, f"aviary policy check {shlex.quote(ref)} --only messages"
        )
    return Result("messages", True, f"{examples} random input sequences to the cores of every role")


def _searched(
    ref: str, check: str, prop: Callable[[Case], list[str]], strategy: Any, examples: int
) -> Result:
    case, problems = search(prop, strategy, examples)
    if case is None:
        return Result(check, True, f"{examples} random cases")
    return Result(check, False, problems[0], case.text(), _repro(ref, check, case))


def _replayed(ref: str, check: str, prop: Callable[[Case], list[str]], case: Case) -> Result:
    problems = prop(case)
    if problems:
        return Result(check, False, problems[0], case.text(), _repro(ref, check, case))
    return Result(check, True, "the given case")


def check_real(ref: str, policy: Policy) -> Result:
    """A tiny real replay and its simulations at three one-way delays: every job finished, and the real
    mean JCT within the simulated band widened by 10 %."""
    from ..flags.spec import ReplaySpec
    from ..replay.resolve import setup_replay
    from ..replay.run import run_replay

    with tempfile.TemporaryDirectory(prefix="aviary-check-") as tmp:
        base: dict[str, Any] = {"policy": ref, "jobs": 20, "nodes": 4, "seed": 1}
        spec = ReplaySpec(**base, runtime="real", duration=10.0, keys=False, out=Path(tmp) / "real")
        real = _summary(setup_replay, run_replay, spec)
        if real["finished"] != real["jobs"]:
            return Result("real", False, f"the real run finished {real['finished']} of {real['jobs']} jobs")
        scale = real["workload"]["time_scale"]
        sims = [
            _summary(
                setup_replay,
                run_replay,
                ReplaySpec(**base, runtime="sim", net_delay=d, time_scale=scale, out=Path(tmp) / f"sim-{d}"),
            )["mean_jct"]
            for d in (0.0005, 0.002, 0.005)
        ]
    inside = min(sims) / 1.1 <= real["mean_jct"] <= max(sims) * 1.1
    text = f"mean JCT real {real['mean_jct']:.3f} s, simulated {min(sims):.3f}-{max(sims):.3f} s at 0.5-5 ms"
    return Result("real", inside, text + ("" if inside else ": outside it widened by 10 %"))


def _summary(setup: Any, run: Any, spec: Any) -> dict[str, Any]:
    import io

    from rich.console import Console

    return run(setup(spec, quiet=True), quiet=True, console=Console(file=io.StringIO()))


def table(results: list[Result]) -> str:
    """The results as a table, then each failure's case and the command that replays it."""
    width = max(len(r.check) for r in results)
    mark = {True: "passed", False: "FAILED", None: "n/a"}
    lines = [f"{r.check:<{width}}  {mark[r.passed]:<6}  {r.detail}" for r in results]
    for r in results:
        if r.passed is False and r.shown is not None:
            lines += ["", f"{r.check}: the smallest failing case: {r.shown}", f"  replay it: {r.repro}"]
    return "\n".join(lines)


def check_policy(
    ref: str, *, quick: bool = False, only: str | None = None, case: Case | None = None, real: bool = True
) -> list[Result]:
    """Every check of :data:`CHECKS` (or ``only`` one) on the policy ``ref`` names (a built-in's name or a
    plug-in's, or a source); ``case`` replays one case instead of searching; ``real``: also the real run
    (never with ``quick``)."""
    policy = get_policy(ref)
    if only is not None and only not in CHECKS:
        raise UsageError(f"--only {only}: not a check (one of {', '.join(CHECKS)})")
    n_msg, n_inv, n_det, n_node, n_central, n_net = BUDGETS["quick" if quick else "default"]
    central = policy.central is not None
    out: list[Result] = []

    def want(check: str) -> bool:
        return only is None or only == check

    searches: list[tuple[str, Callable[[Case], list[str]], Any, int]] = [
        ("invariants", lambda c: run_case(policy, c)[0], cases(policy), n_inv),
        ("determinism", lambda c: determinism(policy, c), cases(policy), n_det),
        ("node-fault", lambda c: run_case(policy, c)[0], cases(policy, "node"), n_node),
        ("network-fault", lambda c: run_case(policy, c)[0], cases(policy, "network"), n_net),
    ]
    recovers = central and all(hasattr(c, "restore_job") for c in cores_of(policy) if c.role == "central")
    if recovers:
        searches.append(
            ("central-fault", lambda c: run_case(policy, c)[0], cases(policy, "central"), n_central)
        )
    if want("purity"):
        out.append(check_purity(policy))
    if want("messages"):
        out.append(check_messages(ref, policy, n_msg))
    for check, prop, strategy, examples in searches:
        if want(check):
            out.append(
                _replayed(ref, check, prop, case) if case else _searched(ref, check, prop, strategy, examples)
            )
    if want("central-fault") and not recovers:
        why = "its central core has no restore_job (docs/plugins.md)" if central else "no central scheduler"
        out.append(Result("central-fault", None, why))
    if want("real"):
        if quick or not real:
            out.append(Result("real", None, "skipped (--quick)" if quick else "skipped"))
        else:
            out.append(check_real(policy.source or policy.name, policy))
    return out
