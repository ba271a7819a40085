"""What the user types: the ``aviary`` command line's grammar (DESIGN §7), every command's flags with
their types, defaults and help, and the checks between flags that argparse cannot make.

It knows the policies' declared parameters (:mod:`aviary.launch.policies.registry`) and the replay's
choices (:mod:`.spec`) and nothing of how a command runs: :mod:`aviary.launch.cli.main` parses with it
and hands the flags to :mod:`aviary.launch.cli.commands`, and the sweep reads a replay's flags from it
(:mod:`aviary.launch.sweep.spec`)."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from ...common.cluster import TRANSPORTS
from ...common.dags import GOOGLE_TRACE
from ...common.failures import LIVENESS_MISSES, LIVENESS_PERIOD
from ...common.params import Param
from ...common.resources import DEFAULT_MACHINE, Resources
from ...common.trace import MAX_JOBS
from ..policies.registry import BUILTIN, POLICIES, PolicyError, get_policy
from .spec import CHOICES, DASHBOARD_PORT, DEFAULT_MAX_WALL, REAL_TIME_SCALE, UsageError
from .trace_flags import add_trace_parser

BUNDLED_TRACE = GOOGLE_TRACE
MAX_NODES = 100_000
"""Most node monitors of a testbed (``--nodes``): ten times the 10,000 the papers simulate (Sparrow,
Hawk, Eagle); the simulator holds every node in one process's memory."""
MAX_SLOTS = 1_000
"""Most task slots of one node (``--slots``); the experiments use 1 to 16 (the default machine's cores)."""
MAX_SCHEDULERS = 10_000
"""Most distributed schedulers of a testbed (``--schedulers``); the papers run 1 to 100."""


class Parser(argparse.ArgumentParser):
    """argparse that reports a bad flag in one line, without the usage block, with a "did you mean" for a
    misspelt choice (policy, workload...) or flag."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {with_suggestion(self, message)}\n")


def _option_strings(parser: argparse.ArgumentParser) -> list[str]:
    """Every flag of ``parser`` and of its sub-commands."""
    out: list[str] = []
    for action in parser._actions:
        out += [o for o in action.option_strings if o.startswith("--")]
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out += _option_strings(sub)
    return sorted(set(out))


def with_suggestion(parser: argparse.ArgumentParser, message: str) -> str:
    """``message`` with the closest valid choice or flag for a misspelt one, when there is a close one."""
    choice = re.match(r"(argument \S+: invalid choice: '([^']*)')( \(choose from (.*)\))?$", message)
    if choice and choice.group(4):
        options = re.findall(r"'([^']*)'", choice.group(4))
        close = difflib.get_close_matches(choice.group(2), options, n=1)
        if close:
            return f"{choice.group(1)}; did you mean '{close[0]}'?{choice.group(3)}"
        return message
    unknown = re.match(r"unrecognized arguments: (.*)$", message)
    if unknown:
        flags = _option_strings(parser)
        hints = []
        for token in (t for t in unknown.group(1).split() if t.startswith("--")):
            close = difflib.get_close_matches(token.split("=")[0], flags, n=1)
            if close:
                hints.append(f"{token}: did you mean {close[0]}?")
        if hints:
            return f"{message} ({'; '.join(hints)})"
    return message


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _count_to(limit: int, what: str) -> Callable[[str], int]:
    """A count from 1 to ``limit`` (``what``: the limit's name in the complaint), checked as argparse
    reads it, so nothing is ever sized by a larger one."""

    def count(text: str) -> int:
        value = _positive_int(text)
        if value > limit:
            raise argparse.ArgumentTypeError(f"must be at most {limit:,} ({what}), got {value:,}")
        return value

    count.__name__ = "count"  # argparse's "invalid count value: 'x'"
    return count


def _positive_float(text: str) -> float:
    value = float(text)
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a number greater than 0, got {text}")
    return value


def _nonnegative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


def _nonnegative_float(text: str) -> float:
    value = float(text)
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text}")
    return value


def _wall_time(text: str) -> float:
    """A wall-clock time: seconds, or a number with s, m or h (``90``, ``90s``, ``2m``, ``1.5h``)."""
    units = {"s": 1.0, "m": 60.0, "h": 3600.0}
    number, unit = (text[:-1], text[-1]) if text[-1:] in units else (text, "s")
    try:
        value = float(number) * units[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds or a time such as 90s, 2m, 1h: {text}") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a time greater than 0, got {text}")
    return value


def _out_dir(text: str) -> Path:
    """A folder to write into: absent (it is made) or a folder, not a file."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} is a file, not a folder (name a folder to write into)")
    if not path.exists() and path.parent.exists() and not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"{path.parent} is a file, not a folder")
    return path


def _out_file(text: str) -> Path:
    """A file to write: absent or a file (replaced), in a folder that exists."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} is a folder, not a file")
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"{path.parent} is no folder to write {path.name} into")
    return path


def _host_list(text: str) -> list[str]:
    hosts = [h.strip() for h in text.split(",")]
    if not all(hosts):
        raise argparse.ArgumentTypeError(f"expected addresses separated by commas, got {text!r}")
    return hosts


def _dashboard_port(text: str) -> int:
    """A port for ``--dashboard``: 0 (any free one) or a TCP port."""
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"expected a port number (0: any free one), got {text!r}")
    return 0 if int(text) == 0 else _port(text)


def _listen_address(text: str) -> str:
    """An address this machine can listen on (``--dashboard-address``)."""
    from ...common.addresses import bind_problem

    if (problem := bind_problem(text, 0, patience=0)) is not None:
        raise argparse.ArgumentTypeError(f"cannot listen on {text!r}: {problem}")
    return text


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


def _policy(text: str) -> str:
    """A policy's name or source, as given, once the registry knows it (a plug-in loaded)."""
    try:
        get_policy(text)
    except PolicyError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


_policy.__name__ = "policy"  # argparse's "invalid policy value"


def preload_policy(argv: list[str]) -> None:
    """Load the plug-in that ``--policy`` names in ``argv`` before the parser is built, so that its
    parameters are flags like a built-in's (``--help`` lists them); a policy that cannot be loaded is
    left for the flag's own check to report."""
    for i, arg in enumerate(argv):
        if arg == "--":
            return
        ref = argv[i + 1] if arg == "--policy" and i + 1 < len(argv) else arg.partition("=")[2]
        if (arg == "--policy" or arg.startswith("--policy=")) and ref and ref not in POLICIES:
            with contextlib.suppress(PolicyError):
                get_policy(ref)


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


UNITS = {"trace s": "trace seconds", "s": "seconds", "%": "%"}
"""How a declared parameter's unit reads in a flag's help."""


def default_help(name: str) -> str:
    """The default of the declared parameter ``name`` for the flag's help: its one value, or each value
    with the policies that have it (the most common last, as ``else``), in the parameter's unit."""
    by_value: dict[str, list[str]] = {}
    for pol in POLICIES.values():
        p = pol.param(name)
        if p is not None and p.default is not None:
            shown = _shown(p.default)
            if p.scales and not p.scales_given:
                shown += " trace seconds divided by the time scale"
            elif p.unit:
                shown += " " + UNITS.get(p.unit, p.unit)
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
    capacity = False
    for family in dict.fromkeys(pol.family for pol in POLICIES.values() if pol.family):
        members = [pol.name for pol in POLICIES.values() if pol.family == family]
        title = f"{family} (polic{'ies' if len(members) > 1 else 'y'} {_names(members)})"
        groups[family] = p.add_argument_group(title)
        if all(POLICIES[m].dag for m in members) and not capacity:
            capacity = True
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
        for param in pol.params:
            if param.name in seen:
                continue
            seen.add(param.name)
            try:
                groups[pol.family].add_argument(
                    param.flag,
                    dest=param.dest,
                    type=_param_type(param),
                    choices=param.choices or None,
                    default=None,
                    help=(param.help + default_help(param.name)).replace("%", "%%"),  # argparse formats it
                )
            except argparse.ArgumentError:
                raise PolicyError(
                    f"policy {pol.name!r} ({pol.origin}): parameter {param.name!r}: {param.flag} is one of "
                    "aviary's own flags (rename the parameter)"
                ) from None


def _dashboard_flags(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--dashboard",
        type=_dashboard_port,
        nargs="?",
        const=DASHBOARD_PORT,
        default=None,
        metavar="PORT",
        help=f"real processes: serve a live dashboard of {what} in the browser, at PORT (default "
        f"{DASHBOARD_PORT}; 0: any free port); its URL, printed, carries the key the server checks",
    )
    p.add_argument(
        "--dashboard-address",
        type=_listen_address,
        default="127.0.0.1",
        metavar="ADDRESS",
        help="the address the dashboard listens on (default %(default)s; another one prints a warning: "
        "the page is plain HTTP)",
    )


def _testbed_flags(p: argparse.ArgumentParser, nodes: int, schedulers: int) -> None:

    p.add_argument(
        "--policy",
        default="sparrow",
        type=_policy,
        metavar="POLICY",
        help="scheduling policy: a built-in, one of " + ", ".join(BUILTIN) + "; an installed plug-in's name; "
        "or a plug-in not installed, module:attribute or path/to/file.py:attribute ('aviary policy list' "
        "lists them; 'aviary replay --policy P --help' lists P's flags) (default %(default)s)",
    )
    p.add_argument(
        "--nodes",
        type=_count_to(MAX_NODES, "the limit of nodes"),
        default=nodes,
        help=f"node monitors, a count up to {MAX_NODES:,} (default %(default)s)",
    )
    p.add_argument(
        "--keys",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="real processes: CurveZMQ keys made for the testbed, loopback included, so that only its own "
        "processes can drive it (default: keys; --no-keys runs without: anyone who reaches a port can)",
    )
    p.add_argument(
        "--transport",
        default="zmq",
        choices=TRANSPORTS,
        help="real processes: what they speak, ZeroMQ (CurveZMQ with keys) or plain TCP written and read "
        "from each process's own event loop, without an I/O thread (Noise IK with keys) (default "
        "%(default)s)",
    )
    p.add_argument(
        "--nodes-per-process",
        type=_positive_int,
        default=1,
        metavar="K",
        help="real processes: node monitors one OS process hosts, each still its own ZeroMQ endpoint with "
        "its own address and name (default %(default)s; 50 or so holds 1,000 nodes on one machine)",
    )
    p.add_argument(
        "--slots",
        type=_count_to(MAX_SLOTS, "the limit of slots a node"),
        default=1,
        help="task slots per node, a count (default %(default)s; the multi-resource policies: one per core "
        "of --capacity)",
    )
    p.add_argument(
        "--schedulers",
        type=_count_to(MAX_SCHEDULERS, "the limit of schedulers"),
        default=schedulers,
        help="distributed schedulers, a count, for the policies that have them (default %(default)s)",
    )
    p.add_argument(
        "--executor",
        default="timer",
        choices=CHOICES["executor"],
        help="what a task is: a timer in the node monitor, a real child process, or a container "
        "(default %(default)s)",
    )
    real = ", ".join(f"{_shown(v)} for {k}" for k, v in REAL_TIME_SCALE.items())
    p.add_argument(
        "--time-scale",
        type=_positive_float,
        default=None,
        help="trace seconds per second of the replay clock: trace durations are divided by this, and the "
        f"durations given in trace seconds follow (default on real processes {real}; simulated 1; a "
        "real replay without it picks the one that fits --duration on the simulator's prediction, at "
        "least that default; a replay --connect takes the testbed's)",
    )
    _declared_flags(p)
    p.add_argument(
        "--seed",
        type=_nonnegative_int,
        default=0,
        help="seed of every random choice, a whole number >= 0 (default %(default)s)",
    )


def _workload_nodes_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--workload",
        choices=CHOICES["workload"],
        default="google",
        help="shape the nodes for this workload of 'aviary replay --connect': gshet gives them --slots "
        "one-core slots (unless --capacity) and rack/gpu attributes; the others change nothing "
        "(default %(default)s)",
    )


def _remote_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--remote-aviary",
        default=None,
        metavar="PATH",
        help="with --cluster: the aviary command on the hosts (default: this one's path, "
        "as with the same checkout or a shared home on every host)",
    )


def build_parser() -> Parser:
    parser = Parser(
        prog="aviary",
        description="A testbed for datacenter schedulers.",
        epilog="'aviary COMMAND --help' lists a command's flags, each with its default and unit.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    up = sub.add_parser("up", help="start a local testbed and keep it running until Ctrl-C")
    _testbed_flags(up, nodes=10, schedulers=2)
    _workload_nodes_flag(up)
    up.add_argument(
        "--dir",
        type=_out_dir,
        default=None,
        help="folder to write cluster.toml and the logs into (default: a new temporary folder)",
    )
    up.add_argument(
        "--base-port",
        type=_port,
        default=None,
        help="the processes listen on 127.0.0.1 from this port on, one each, the frontend's first "
        "(default: free ports)",
    )
    up.add_argument(
        "--cluster",
        type=Path,
        default=None,
        help="instead of a local testbed, start the processes of this cluster description (from 'aviary "
        "cluster') on their hosts over SSH, logs collected into --dir (default: a local testbed)",
    )
    _dashboard_flags(up, "the testbed")
    _remote_flag(up)

    cl = sub.add_parser("cluster", help="write the cluster description of a testbed over several hosts")
    _testbed_flags(cl, nodes=10, schedulers=2)
    _workload_nodes_flag(cl)
    cl.add_argument(
        "--hosts",
        type=_host_list,
        required=True,
        help="comma-separated host addresses; schedulers and nodes go round-robin, central to the first "
        "(required, no default)",
    )
    cl.add_argument(
        "--frontend-host", default=None, help="where 'aviary replay --connect' runs (default: the first host)"
    )
    cl.add_argument(
        "--base-port",
        type=_port,
        default=7100,
        help="each host's first TCP port, 1-65535 (default %(default)s)",
    )
    cl.add_argument(
        "--bind",
        default=None,
        help="the interface every process listens on (default: its host address; 0.0.0.0 behind NAT)",
    )
    cl.add_argument(
        "--out",
        type=_out_file,
        required=True,
        help="the cluster description to write, TOML (required, no default; an existing file is replaced)",
    )

    hs = sub.add_parser("host", help="run this host's processes of a cluster description until Ctrl-C")
    hs.add_argument(
        "cluster", type=Path, help="cluster description (from 'aviary cluster' or 'aviary up'; required)"
    )
    hs.add_argument(
        "--host",
        action="append",
        default=None,
        help="run the processes of this host address (repeatable; default: this machine's addresses)",
    )
    hs.add_argument(
        "--dir",
        type=_out_dir,
        default=None,
        help="folder to write the logs into (default: a new temporary folder)",
    )
    hs.add_argument(
        "--lifeline",
        action="store_true",
        help="also stop when standard input ends (how 'aviary up --cluster' runs it over SSH: a lost "
        "connection stops the host's processes; default: off)",
    )

    ks = sub.add_parser("keys", help="make CurveZMQ keys for a cluster description: authenticated, encrypted")
    ks.add_argument(
        "cluster",
        type=Path,
        help="cluster description to add public keys to; secrets go to STEM.keys/ next to it (required)",
    )

    rp = sub.add_parser("replay", help="replay a trace sample against a testbed or the simulator")
    rp.add_argument(
        "trace",
        nargs="?",
        type=Path,
        default=BUNDLED_TRACE,
        help="trace file (default: the bundled 10,000-job Google sample, or the --workload's bundled file)",
    )
    rp.add_argument(
        "--runtime",
        choices=CHOICES["runtime"],
        default="real",
        help="real processes on loopback (durations in seconds of the replay clock, trace seconds divided "
        "by --time-scale), or the simulator (virtual time; default %(default)s)",
    )
    rp.add_argument(
        "--workload",
        choices=CHOICES["workload"],
        default="google",
        help="jobs to replay: Google trace jobs (flat; the trace argument), Alibaba DAG jobs or TPC-H query "
        "DAGs (bundled, or the trace argument in their format), TPC-DS-like DAGs generated to match "
        "Carbyne's Table 1 (no trace; --jobs, default 200), or TetriSched's GS_HET-like SLO/best-effort "
        "gang mix (no trace; --jobs, default 200, --load in slot-seconds, default 1, --misestimate; "
        "nodes of --slots one-core slots in racks of 10, a quarter GPU-labelled); all but google need a "
        "DAG policy (default %(default)s)",
    )
    rp.add_argument(
        "--demands",
        choices=CHOICES["demands"],
        default="synth",
        help="DAG policies: per-stage demands drawn from the Tetris ranges (synth), Alibaba's own "
        "plan_cpu/plan_mem (alibaba-plan, near-uniform), or the trace's own requests (trace: Alibaba's, or "
        "an Aviary trace's cpu=/mem=, shares of the largest machine, docs/traces.md; default %(default)s)",
    )
    _testbed_flags(rp, nodes=10, schedulers=2)
    rp.add_argument(
        "--jobs",
        type=_count_to(MAX_JOBS, "the limit of jobs a workload"),
        default=None,
        help=f"jobs to sample, a count up to {MAX_JOBS:,} (default: all of the trace, 300 on real "
        "processes; 200 for tpch, tpcds and gshet)",
    )
    rp.add_argument(
        "--sample",
        choices=CHOICES["sample"],
        default="consecutive",
        help="which jobs: a run of consecutive ones, or drawn at random (default %(default)s)",
    )
    rp.add_argument(
        "--start",
        type=_nonnegative_int,
        default=None,
        help="first job of a consecutive sample, an index from 0 (default: a seeded random start)",
    )
    rp.add_argument(
        "--task-scale",
        type=_positive_float,
        default=None,
        help="multiply task counts by this factor, keeping task-seconds (default real: "
        "nodes*slots/reference-nodes, raised up to 1 until no merged task outlasts a quarter of the "
        "sample's arrivals; sim: 1)",
    )
    rp.add_argument(
        "--reference-nodes",
        type=_positive_int,
        default=10000,
        help="cluster size the trace's job sizes refer to, in nodes (default %(default)s)",
    )
    arrivals = rp.add_mutually_exclusive_group()
    arrivals.add_argument(
        "--load",
        type=_positive_float,
        default=None,
        help="Poisson arrivals at this offered load, the fraction of all slots busy on average, > 0 "
        "(above 1 the cluster is overloaded; default 0.8, gshet 1)",
    )
    arrivals.add_argument(
        "--keep-arrivals", action="store_true", help="keep the trace's own arrival times (default: off)"
    )
    arrivals.add_argument(
        "--batch",
        action="store_true",
        help="DAG policies: every job arrives at time 0 (a backlog: the setting of makespan comparisons; "
        "default: off)",
    )
    rp.add_argument(
        "--misestimate",
        type=_positive_float,
        nargs=2,
        metavar=("LO", "HI"),
        default=None,
        help="multiply each job's estimate by a seeded uniform factor in [LO, HI], 0 < LO <= HI "
        "(default: exact estimates)",
    )
    rp.add_argument(
        "--gshet",
        metavar="KEY=VALUE,...",
        default=None,
        help="--workload gshet: its mix and sizes (default: the recipe of spec 1.12), e.g. "
        "'slo_share=0.75,gpu_share=0.5,slowdown=1.5,slack=0.5:2,slo_tasks=2:10,slo_duration=20:120,"
        "be_tasks=1:4,be_duration=10:60,admission=rayon'",
    )
    rp.add_argument(
        "--tpch-mix",
        metavar="MIX",
        default=None,
        help="--workload tpch: the input sizes its jobs are drawn from, 'sizes' (50, 100, 250 and 500 GB "
        "equally likely, the default), '50g' (every job at 50 GB, as before the mixes) or "
        "'PROFILE[:WEIGHT],...' over the file's profiles, e.g. '50g_maxCores_50:3,500g_maxCores_50'",
    )
    rp.add_argument(
        "--net-delay",
        type=_nonnegative_float,
        default=0.0005,
        help="--runtime sim: one-way network delay of every message, in virtual seconds "
        "(default %(default)s)",
    )
    rp.add_argument(
        "--fail",
        default=None,
        metavar="NAME@TIME,...",
        help="kill processes on purpose at replay times, e.g. 'node-3@30s,sched-0@45s' (real processes: "
        "SIGKILL; the simulator: the same events); their work is re-run elsewhere; NAME@TIME+PAUSE "
        "stops one for PAUSE instead (SIGSTOP; a packed node is frozen alone by its pack; the simulator "
        "holds its inputs) (default: none)",
    )
    rp.add_argument(
        "--liveness-period",
        type=_positive_float,
        default=LIVENESS_PERIOD,
        help="real processes: seconds of wall time between the frontend's liveness heartbeats to every "
        "process (default %(default)s)",
    )
    rp.add_argument(
        "--liveness-misses",
        type=_positive_int,
        default=LIVENESS_MISSES,
        help="real processes: heartbeats a process may leave unanswered before it is declared dead and its "
        "work goes elsewhere (default %(default)s, count)",
    )
    rp.add_argument(
        "--stall-timeout",
        type=_positive_float,
        default=None,
        help="give up when no job finished for this long, in seconds of the replay clock (default: 3 times "
        "the longest task, at least 30)",
    )
    rp.add_argument(
        "--duration",
        type=_wall_time,
        default=None,
        help="real processes: the wall-clock budget of the replay (from the first submission to the last "
        "finish; starting the testbed adds a few seconds), e.g. 90s, 2m: picks --time-scale on the "
        "simulator's prediction (default without --time-scale: 1m)",
    )
    _dashboard_flags(rp, "the replay")
    rp.add_argument(
        "--max-wall",
        type=_wall_time,
        default=DEFAULT_MAX_WALL,
        help="real processes: refuse (exit 2, saying which --time-scale, --jobs or --task-scale would "
        "fit) a replay predicted to run longer than this, e.g. 10m (default 5m)",
    )
    rp.add_argument(
        "--yes",
        action="store_true",
        help="run a real replay even when predicted to take longer than --max-wall (default: off)",
    )
    rp.add_argument(
        "--connect",
        type=Path,
        default=None,
        help="use the running testbed of this cluster.toml instead of starting one; its policy, nodes and "
        "parameters apply (default: start one)",
    )
    rp.add_argument(
        "--cluster",
        type=Path,
        default=None,
        help="start the testbed of this cluster.toml on its hosts over SSH (as 'aviary up --cluster'), "
        "replay against it as --connect does, then stop it; host logs go to --out (default: off)",
    )
    _remote_flag(rp)
    rp.add_argument(
        "--out",
        type=_out_dir,
        default=None,
        help="results folder, made if absent; refused if it holds another run's results, unless --force "
        "(default: a new results/<workload>-<policy>-<runtime>-<time stamp>; results/latest points at it)",
    )
    rp.add_argument("--force", action="store_true", help="replace the results --out holds (default: refuse)")
    rp.add_argument(
        "--no-task-table",
        dest="task_table",
        action="store_false",
        help="leave out tasks.csv, the row of each task's run (for the largest runs; default: written)",
    )
    rp.add_argument(
        "--stream",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the simulator: read the trace's jobs as the replay advances, write each finished job out and "
        "forget it, no tasks.csv (a whole month's trace in bounded memory; default: on for a trace file "
        "above 64 MB)",
    )
    rp.add_argument("--quiet", action="store_true", help="no progress bar (default: off)")
    rp.add_argument(
        "--progress-every",
        type=_positive_float,
        default=10.0,
        metavar="SECONDS",
        help="without a terminal (a log file, nohup, | tee): a progress line every SECONDS of wall time "
        "(default %(default)s)",
    )

    cp = sub.add_parser("compare", help="percentiles of runs of one workload normalized to the first")
    cp.add_argument("dirs", nargs="+", type=Path, help="result folders; the first is the baseline")
    cp.add_argument(
        "--plot",
        "--png",
        dest="plot",
        type=Path,
        default=None,
        metavar="FILE",
        help="also write a figure here, in the format of its extension: .png (300 dpi), .pdf, .svg "
        "(default: none)",
    )
    cp.add_argument(
        "--force",
        action="store_true",
        help="compare runs of different workloads anyway, labelled as such (default: refuse)",
    )
    cp.add_argument(
        "--json",
        action="store_true",
        help="print the table as JSON instead (rows, ratios, factors of improvement; default: off)",
    )

    rp_ = sub.add_parser("report", help="finished runs (or a sweep) as one self-contained HTML page")
    rp_.add_argument(
        "dirs", nargs="+", type=Path, help="result folders (the first is the baseline), or one sweep's folder"
    )
    rp_.add_argument(
        "--html",
        type=_out_file,
        required=True,
        metavar="FILE",
        help="the page to write (required; it opens with no server and no network)",
    )

    ex = sub.add_parser("export", help="a run's (or a sweep's) jobs and tasks tables as Parquet files")
    ex.add_argument(
        "dir", type=Path, help="a results folder, or a sweep's folder (one table, axes as columns)"
    )
    ex.add_argument(
        "--format",
        dest="fmt",
        choices=("parquet", "csv"),
        default="parquet",
        help="parquet (typed columns, read by pandas, polars, DuckDB, Spark) or csv (default %(default)s)",
    )
    ex.add_argument(
        "--out",
        type=_out_dir,
        default=None,
        help="the folder to write jobs.<format> and tasks.<format> into (default: DIR/export)",
    )

    dm = sub.add_parser("demo", help="a small replay of the bundled Google sample, two policies, compared")
    dm.add_argument(
        "--out", type=_out_dir, default=Path("results/demo"), help="results folder (default %(default)s)"
    )

    bn = sub.add_parser("bench", help="measure the runtime's overhead on this machine")
    bn.add_argument(
        "--out", type=_out_dir, default=Path("results/bench"), help="results folder (default %(default)s)"
    )
    bn.add_argument(
        "--peer",
        choices=["dask"],
        default=None,
        help="also measure this runtime the same way in the same run and print the ratios (dask: "
        "Dask distributed's LocalCluster of 4 one-thread workers; default: none)",
    )
    bn.add_argument(
        "--dashboard",
        action="store_true",
        help="also measure with the live dashboard served, idle and with a page computed every second "
        "as a browser showing it makes the server do, and print its cost over the plain figures "
        "(default: off)",
    )

    sw = sub.add_parser("sweep", help="a grid of simulated replays from a TOML spec, resumable, on all cores")
    sw.add_argument("spec", type=Path, help="the sweep spec, TOML (docs/sweep.md; required)")
    sw.add_argument(
        "--out",
        type=_out_dir,
        default=None,
        help="the sweep's folder, one sub-folder per cell (default: the spec's 'out', else "
        "results/sweeps/<spec name>)",
    )
    sw.add_argument(
        "--workers",
        type=_positive_int,
        default=None,
        help="cells run at once on this machine, a count (default: every core)",
    )
    sw.add_argument(
        "--cluster",
        metavar="ADDRESS",
        default=None,
        help="run the cells on the Dask distributed scheduler at this address, e.g. tcp://10.0.0.1:8786 "
        "(default: a local process pool)",
    )
    sw.add_argument("--force", action="store_true", help="re-run the cells already done (default: skip them)")
    sw.add_argument(
        "--dry-run", action="store_true", help="list the cells, each done or not, run none (default: off)"
    )
    sw.add_argument("--quiet", action="store_true", help="no progress bar (default: off)")

    co = sub.add_parser("compose", help="a testbed in containers, one per process: write, up, down")
    co_sub = co.add_subparsers(dest="compose_command", metavar="ACTION", parser_class=Parser, required=True)
    cw = co_sub.add_parser("write", help="write DIR/cluster.toml and DIR/docker-compose.yml")
    cw.add_argument("dir", type=_out_dir, help="the testbed's folder, made if absent (required)")
    _testbed_flags(cw, nodes=10, schedulers=2)
    _workload_nodes_flag(cw)
    cw.add_argument(
        "--duration",
        type=_wall_time,
        default=None,
        help="the wall-clock length of a default 'aviary replay --connect' against this testbed, e.g. 90s, "
        "2m: picks the testbed's --time-scale on the simulator's prediction, as a replay does "
        "(default without --time-scale: 1m)",
    )
    cw.add_argument(
        "--cpus",
        type=_positive_float,
        default=None,
        help="CPU limit of each container, in cores (default none)",
    )
    cw.add_argument(
        "--memory",
        type=parse_bytes,
        default=None,
        help="memory limit of each container: bytes, 256m, 1g (default none)",
    )
    cu = co_sub.add_parser("up", help="start the containers (docker-compose where installed) and check them")
    cu.add_argument("dir", type=Path, help="the folder of 'aviary compose write' (required)")
    cu.add_argument(
        "--sdk",
        action="store_true",
        help="start them through the docker SDK, not docker-compose (default: off)",
    )
    cu.add_argument(
        "--wait",
        type=_positive_float,
        default=None,
        help="seconds to wait for every process to listen (default 60 + 0.5 per container)",
    )
    cd = co_sub.add_parser("down", help="stop and remove the containers")
    cd.add_argument("dir", type=Path, help="the folder of 'aviary compose write' (required)")

    po = sub.add_parser("policy", help="the policies: list them, or start one of your own (a plug-in)")
    po_sub = po.add_subparsers(dest="policy_command", metavar="ACTION", parser_class=Parser, required=True)
    po_sub.add_parser("list", help="built-in and installed policies, with where each comes from")
    pn = po_sub.add_parser(
        "new", help="write an installable plug-in package: a working policy, its tests, a README"
    )
    pn.add_argument("name", help="the policy's name, and the package folder's (required)")
    pn.add_argument(
        "--kind",
        choices=("central", "distributed", "node"),
        default="central",
        help="what it schedules with: a central scheduler (least loaded), distributed schedulers (random "
        "placement) or a node monitor's queue (under Sparrow's schedulers) (default %(default)s)",
    )
    pn.add_argument(
        "--dir", type=Path, default=Path("."), help="the folder to write the package into (default: here)"
    )
    pr = sub.add_parser("protocol", help="the wire protocol (docs/protocol.md): print every message's schema")
    pr_sub = pr.add_subparsers(dest="protocol_command", metavar="ACTION", parser_class=Parser, required=True)
    pr_sub.add_parser(
        "schema", help="the JSON Schema of every message, with its tag (stable per protocol version)"
    )

    pc = po_sub.add_parser(
        "check", help="does a policy keep the testbed's rules? purity, invariants, faults, real vs simulated"
    )
    pc.add_argument(
        "name", type=_policy, help="a built-in's or installed plug-in's name, or a source (required)"
    )
    pc.add_argument(
        "--quick",
        action="store_true",
        help="a small budget: 10 random input sequences, 8 random cases for the invariants, 3 for "
        "determinism, 5 per fault, no real run (a few seconds); the default is 60, 60, 10, 25 and 15 and "
        "a real run of 20 jobs (under a minute)",
    )
    pc.add_argument("--only", default=None, metavar="CHECK", help="run only this check (default: all)")
    pc.add_argument(
        "--case",
        default=None,
        metavar="JSON",
        help="replay this case (a failure prints it) instead of searching",
    )
    pc.add_argument("--no-real", action="store_true", help="skip the real run (default: run it)")
    add_trace_parser(sub, _out_file, _count_to, _positive_int)
    return parser


def _commands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[Parser]:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def command_list(parser: argparse.ArgumentParser) -> str:
    """What bare ``aviary`` prints: each command with its one line."""
    actions = _commands(parser)._choices_actions
    width = max(len(a.dest) for a in actions)
    rows = [f"  {a.dest:<{width}}  {a.help}" for a in actions]
    head = ["usage: aviary COMMAND [FLAGS]", "", f"{parser.description} Commands:"]
    return "\n".join([*head, *rows, "", parser.epilog or ""])


def given_flags(argv: list[str]) -> set[str]:
    """The destinations of the flags ``argv`` gives (argparse fills in the defaults of the others)."""
    parser = build_parser()
    for p in [parser, *_commands(parser).choices.values()]:
        for action in p._actions:
            action.default = argparse.SUPPRESS
    return set(vars(parser.parse_args(argv))) - {"command"}


def check_flags(args: argparse.Namespace) -> list[str]:
    """What one flag's type cannot check: bounds between flags, flags the run would ignore (``given``:
    the flags the command line gives). Raises a one-line ``UsageError``; returns warnings, one each."""
    given = getattr(args, "given", ())
    if "dashboard_address" in given and args.dashboard is None:
        raise UsageError("argument --dashboard-address: only with --dashboard")
    if args.command in ("replay", "up") and args.dashboard:  # a port asked for: free before any starts
        from ...common.addresses import bind_problem

        problem = bind_problem(args.dashboard_address, args.dashboard, patience=0.5)
        if problem is not None:
            raise UsageError(
                f"argument --dashboard: cannot listen on {args.dashboard_address}:{args.dashboard}: "
                f"{problem} (0 picks a free port)"
            )
    if args.command != "replay":
        return []
    if args.runtime == "sim" and args.dashboard is not None:
        raise UsageError(
            "argument --dashboard: only for --runtime real (a simulated replay is over at once: "
            "'aviary report RUN --html FILE' draws its charts)"
        )
    if args.misestimate is not None and args.misestimate[0] > args.misestimate[1]:
        lo, hi = map(_shown, args.misestimate)
        raise UsageError(f"argument --misestimate: LO must be <= HI, got {lo} {hi}")
    if args.runtime != "sim" and "net_delay" in given:
        raise UsageError("argument --net-delay: only for --runtime sim (real processes have the network's)")
    if args.runtime == "sim" and "executor" in given:
        raise UsageError("argument --executor: only for --runtime real (the simulator runs tasks virtually)")
    if args.load is not None and args.load > 1:
        return [
            f"--load {_shown(args.load)}: jobs bring {_shown(args.load)} times the work all the slots can "
            "run (1 keeps every slot busy): the cluster is overloaded, its queues grow the whole replay"
        ]
    return []


def parse_bytes(text: str) -> int:
    """A memory size: bytes, or a number with k, m or g (powers of 1024), as docker takes it."""
    units = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30}
    number, unit = (text[:-1], text[-1].lower()) if text[-1:].isalpha() else (text, "")
    try:
        value = float(number) * units[unit]
    except (ValueError, KeyError):
        raise argparse.ArgumentTypeError(f"not a memory size (bytes, or 256m, 1g): {text!r}") from None
    if value < 6 * 2**20:
        raise argparse.ArgumentTypeError(f"docker needs at least 6m, got {text!r}")
    return int(value)
