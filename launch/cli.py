"""The ``aviary`` command line (DESIGN §7): up, replay, compare, demo, bench."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from ..common.cluster import ClusterError
from ..common.dags import GOOGLE_TRACE
from ..common.params import Param
from ..common.resources import DEFAULT_MACHINE, Resources
from .registry import POLICIES
from .spec import CHOICES

BUNDLED_TRACE = GOOGLE_TRACE


class Parser(argparse.ArgumentParser):
    """argparse that reports a bad flag in one line, without the usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {text}")
    return value


def _host_list(text: str) -> list[str]:
    hosts = [h.strip() for h in text.split(",")]
    if not all(hosts):
        raise argparse.ArgumentTypeError(f"expected addresses separated by commas, got {text!r}")
    return hosts


def _port(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a TCP port (1-65535), got {value}")
    return value


def _capacity(text: str) -> Resources:
    try:
        return Resources.of(float(x) for x in text.split(","))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected up to 4 numbers cores,mem,disk,net: {exc}") from None


def _shown(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _names(policies: list[str]) -> str:
    """Policy names, a family given whole as ``name*`` (hawk, hawk-nosteal, ... -> hawk*)."""
    out: list[str] = []
    for name in policies:
        family = [n for n in POLICIES if n == name or n.startswith(name + "-")]
        if len(family) > 1 and all(n in policies for n in family):
            out.append(name + "*")
        elif not any(o.endswith("*") and name.startswith(o[:-1] + "-") for o in out):
            out.append(name)
    return ", ".join(out)


def default_help(name: str) -> str:
    """The default of the declared parameter ``name`` for the flag's help: its one value, or each value
    with the policies that have it (the most common last, as ``else``)."""
    by_value: dict[str, list[str]] = {}
    for pol in POLICIES.values():
        p = pol.param(name)
        if p is not None and p.default is not None:
            shown = _shown(p.default)
            if p.scales and not p.scales_given:
                shown += " trace seconds divided by the time scale"
            by_value.setdefault(shown, []).append(pol.name)
    if not by_value:
        return ""
    if len(by_value) == 1:
        return f" (default {next(iter(by_value))})"
    common = max(by_value, key=lambda v: len(by_value[v]))
    rest = "; ".join(f"{v} for {_names(pols)}" for v, pols in by_value.items() if v != common)
    return f" (default: {rest}, else {common})"


def _param_type(param: Param) -> Callable[[str], Any]:
    """The flag's argparse type: the text as the parameter's type, checked (one line if it is not)."""

    def convert(text: str) -> Any:
        value = param.kind(text)  # a ValueError: argparse's "invalid int value: 'x'"
        try:
            return param.check(value)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc).replace(f"{param.name} must", "must")) from None

    convert.__name__ = param.kind.__name__  # argparse's "invalid float value"
    return convert


def _declared_flags(p: argparse.ArgumentParser) -> None:
    """The flags of every policy's declared parameters, one per name, under the heading of the family
    of the first policy declaring it (defaults per policy in the help); ``--capacity`` with the
    multi-resource policies'."""
    groups: dict[str, argparse._ArgumentGroup] = {}
    for family in dict.fromkeys(pol.family for pol in POLICIES.values() if pol.family):
        members = [pol.name for pol in POLICIES.values() if pol.family == family]
        title = f"{family} (polic{'ies' if len(members) > 1 else 'y'} {_names(members)})"
        groups[family] = p.add_argument_group(title)
        if all(POLICIES[m].dag for m in members):
            groups[family].add_argument(
                "--capacity",
                type=_capacity,
                default=None,
                help="every node's capacity cores,mem(GB),disk,net (default "
                + ",".join(f"{x:g}" for x in DEFAULT_MACHINE)
                + ")",
            )
    seen: set[str] = set()
    for pol in POLICIES.values():
        for param in pol.declared:
            if param.name in seen:
                continue
            seen.add(param.name)
            groups[pol.family].add_argument(
                param.flag,
                dest=param.dest,
                type=_param_type(param),
                choices=param.choices or None,
                default=None,
                help=param.help + default_help(param.name),
            )


def _testbed_flags(p: argparse.ArgumentParser, nodes: int, schedulers: int) -> None:
    p.add_argument("--policy", default="sparrow", choices=sorted(POLICIES), help="scheduling policy")
    p.add_argument("--nodes", type=_positive_int, default=nodes, help="node monitors (default %(default)s)")
    p.add_argument("--slots", type=_positive_int, default=1, help="slots per node (default %(default)s)")
    p.add_argument(
        "--schedulers",
        type=_positive_int,
        default=schedulers,
        help="distributed schedulers (default %(default)s)",
    )
    p.add_argument(
        "--executor",
        default="timer",
        choices=CHOICES["executor"],
        help="what a task is: a timer in the node monitor, a real child process, or a container",
    )
    p.add_argument(
        "--time-scale",
        type=_positive_float,
        default=None,
        help="divide trace durations by this; the cutoff and the quantum follow "
        "(default 1000 on real processes, 1 simulated; a replay --connect takes the testbed's)",
    )
    _declared_flags(p)
    p.add_argument("--seed", type=int, default=0, help="seed of every random choice (default 0)")


def _workload_nodes_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--workload",
        choices=CHOICES["workload"],
        default="google",
        help="shape the nodes for this workload of 'aviary replay --connect': gshet gives them --slots "
        "one-core slots (unless --capacity) and rack/gpu attributes; the others change nothing",
    )


def build_parser() -> Parser:
    parser = Parser(prog="aviary", description="A testbed for datacenter schedulers.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    up = sub.add_parser("up", help="start a local testbed and keep it running until Ctrl-C")
    _testbed_flags(up, nodes=10, schedulers=2)
    _workload_nodes_flag(up)
    up.add_argument("--dir", type=Path, default=None, help="where to write cluster.toml and logs")

    cl = sub.add_parser("cluster", help="write the cluster description of a testbed over several hosts")
    _testbed_flags(cl, nodes=10, schedulers=2)
    _workload_nodes_flag(cl)
    cl.add_argument(
        "--hosts",
        type=_host_list,
        required=True,
        help="comma-separated host addresses; schedulers and nodes go round-robin, central to the first",
    )
    cl.add_argument(
        "--frontend-host", default=None, help="where 'aviary replay --connect' runs (default: the first host)"
    )
    cl.add_argument(
        "--base-port", type=_port, default=7100, help="each host's first port (default %(default)s)"
    )
    cl.add_argument(
        "--bind",
        default=None,
        help="the interface every process listens on (default: its host address; 0.0.0.0 behind NAT)",
    )
    cl.add_argument("--out", type=Path, required=True, help="the cluster description to write (TOML)")

    hs = sub.add_parser("host", help="run this host's processes of a cluster description until Ctrl-C")
    hs.add_argument("cluster", type=Path, help="cluster description (from 'aviary cluster' or 'aviary up')")
    hs.add_argument(
        "--host",
        action="append",
        default=None,
        help="run the processes of this host address (repeatable; default: this machine's addresses)",
    )
    hs.add_argument("--dir", type=Path, default=None, help="where to write logs")

    rp = sub.add_parser("replay", help="replay a trace sample against a testbed or the simulator")
    rp.add_argument(
        "trace",
        nargs="?",
        type=Path,
        default=BUNDLED_TRACE,
        help="trace file (default: the bundled 10,000-job Google sample, or the --workload's bundled file)",
    )
    rp.add_argument("--runtime", choices=CHOICES["runtime"], default="real")
    rp.add_argument(
        "--workload",
        choices=CHOICES["workload"],
        default="google",
        help="jobs to replay: Google trace jobs (flat; the trace argument), Alibaba DAG jobs or TPC-H query "
        "DAGs (bundled, or the trace argument in their format), TPC-DS-like DAGs generated to match "
        "Carbyne's Table 1 (no trace; --jobs, default 200), or TetriSched's GS_HET-like SLO/best-effort "
        "gang mix (no trace; --jobs, default 200, --load in slot-seconds, default 1, --misestimate; "
        "nodes of --slots one-core slots in racks of 10, a quarter GPU-labelled); all but google need a "
        "DAG policy",
    )
    rp.add_argument(
        "--demands",
        choices=CHOICES["demands"],
        default="synth",
        help="DAG policies: per-stage demands drawn from the Tetris ranges (synth), or Alibaba's own "
        "plan_cpu/plan_mem (alibaba-plan, near-uniform)",
    )
    _testbed_flags(rp, nodes=10, schedulers=2)
    rp.add_argument("--jobs", type=_positive_int, default=None, help="jobs to sample (default: all)")
    rp.add_argument("--sample", choices=CHOICES["sample"], default="consecutive")
    rp.add_argument(
        "--start",
        type=int,
        default=None,
        help="first job of a consecutive sample (default: a seeded random start)",
    )
    rp.add_argument(
        "--task-scale",
        type=_positive_float,
        default=None,
        help="multiply task counts by this, keeping task-seconds (default real: "
        "nodes*slots/reference-nodes; sim: 1)",
    )
    rp.add_argument(
        "--reference-nodes",
        type=_positive_int,
        default=10000,
        help="cluster size the trace's job sizes refer to (default %(default)s)",
    )
    arrivals = rp.add_mutually_exclusive_group()
    arrivals.add_argument(
        "--load",
        type=_positive_float,
        default=None,
        help="Poisson arrivals at this offered load (fraction of all slots; default 0.8)",
    )
    arrivals.add_argument("--keep-arrivals", action="store_true", help="keep the trace's own arrival times")
    arrivals.add_argument(
        "--batch",
        action="store_true",
        help="DAG policies: every job arrives at time 0 (a backlog: the setting of makespan comparisons)",
    )
    rp.add_argument(
        "--misestimate",
        type=float,
        nargs=2,
        metavar=("LO", "HI"),
        default=None,
        help="multiply each job's estimate by a seeded uniform factor in [LO, HI]",
    )
    rp.add_argument(
        "--gshet",
        metavar="KEY=VALUE,...",
        default=None,
        help="--workload gshet: its mix and sizes (default: the recipe of spec 1.12), e.g. "
        "'slo_share=0.75,gpu_share=0.5,slowdown=1.5,slack=0.5:2,slo_tasks=2:10,slo_duration=20:120,"
        "be_tasks=1:4,be_duration=10:60,admission=rayon'",
    )
    rp.add_argument("--net-delay", type=float, default=0.0005, help="simulator network delay (s)")
    rp.add_argument(
        "--stall-timeout",
        type=_positive_float,
        default=None,
        help="give up when no job finished for this long (s; default from the workload)",
    )
    rp.add_argument(
        "--connect",
        type=Path,
        default=None,
        help="use the running testbed of this cluster.toml instead of starting one",
    )
    rp.add_argument(
        "--out", type=Path, default=None, help="results folder (default results/<policy>-<runtime>)"
    )
    rp.add_argument("--quiet", action="store_true", help="no progress bar")

    cp = sub.add_parser("compare", help="percentiles of runs normalized to the first")
    cp.add_argument("dirs", nargs="+", type=Path, help="result folders; the first is the baseline")
    cp.add_argument("--png", type=Path, default=None, help="also write a bar chart here")

    dm = sub.add_parser("demo", help="a small replay of the bundled Google sample, two policies, compared")
    dm.add_argument("--out", type=Path, default=Path("results/demo"))

    bn = sub.add_parser("bench", help="measure the runtime's overhead on this machine")
    bn.add_argument("--out", type=Path, default=Path("results/bench"))
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from . import commands
    from .replay import UsageError

    try:
        return commands.COMMANDS[args.command](args)
    except (UsageError, ClusterError) as exc:
        print(f"aviary {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("aviary: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
