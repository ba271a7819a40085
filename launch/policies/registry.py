"""Policies by name: the built-in ones and plug-ins, read through one path (DESIGN §10).

A policy is a :class:`~aviary.common.declaration.Policy` value (or a tuple of them, a family) named by a
*source*, ``module:attribute`` or ``path/to/file.py:attribute``. :func:`load_source` reads one; the
built-ins are the source :data:`BUILTIN_SOURCE`, an installed plug-in an entry point of the group
:data:`ENTRY_POINT_GROUP` (whose value is a source), and ``--policy`` takes a built-in's name, an
installed plug-in's name or a source. A plug-in's cluster description holds its source beside its name
(``policy_source``), so that every process of the testbed, on this machine or another, loads the same
code (:func:`cluster_policy`); a process where it cannot be loaded fails at its start with one line.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import re
import sys
from dataclasses import replace
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ...common.cluster import Cluster, ClusterError, ProcessSpec, TomlLines, Where, local_cluster
from ...common.core import Core
from ...common.declaration import Context, Policy
from ...common.params import Param, unknown
from ...common.resources import DEFAULT_MACHINE, Resources
from .hybrid import PROBE_RATIO

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = [
    "BUILTIN_SOURCE",
    "ENTRY_POINT_GROUP",
    "POLICIES",
    "Context",
    "Policy",
    "PolicyError",
    "build_core",
    "check_params",
    "cluster_policy",
    "get_policy",
    "installed",
    "load_source",
    "policy_cluster",
]

ENTRY_POINT_GROUP = "aviary.policies"
"""The entry-point group an installed package registers its policies under; each value a source."""
BUILTIN_SOURCE = "aviary.launch.policies.builtin:BUILTIN"
"""Where the built-in policies are declared."""
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")
"""A policy name: it names results folders and flags' help, so no blank, slash or colon."""


class PolicyError(ClusterError):
    """A policy that cannot be found, loaded or used; one line naming the policy and what is wrong."""


def _import_file(path: Path) -> ModuleType:
    """The module of a Python file outside any installed package, imported once under its stem's name
    (pybatsim's ``path/to/scheduler.py``); its folder joins ``sys.path`` so that it may import its
    siblings, and so that processes and pickles find it by name."""
    if not path.is_file():
        raise PolicyError(f"{path}: no such file")
    name, folder = path.stem, path.parent
    if name == "__init__":  # a package's own file: imported as the package
        name, folder = folder.name, folder.parent
    loaded = sys.modules.get(name)
    if loaded is not None:
        if Path(getattr(loaded, "__file__", "") or "").resolve() == path:
            return loaded
        raise PolicyError(
            f"{path}: a module named {name!r} is already loaded from elsewhere (rename the file)"
        )
    if str(folder) not in sys.path:
        sys.path.append(str(folder))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def split_source(source: str) -> tuple[str, str, bool]:
    """``(module or absolute file path, attribute, is a file)`` of a source, or :class:`PolicyError`."""
    target, sep, attr = source.rpartition(":")
    if not sep or not target or not attr.isidentifier():
        raise PolicyError(
            f"policy {source!r}: expected a policy's name, module:attribute or path/to/file.py:attribute"
        )
    is_file = target.endswith(".py") or "/" in target
    if is_file:
        target = str(Path(target).expanduser().resolve())
    return target, attr, is_file


def _policies_of(obj: Any, where: str) -> list[Policy]:
    if isinstance(obj, Policy):
        return [obj]
    if isinstance(obj, (list, tuple)) and obj and all(isinstance(p, Policy) for p in obj):
        return list(obj)
    raise PolicyError(f"{where}: is a {type(obj).__name__}, not an aviary.policy.Policy (or a tuple of them)")


def _check(policy: Policy, where: str) -> None:
    """One line naming the policy's source and what its declaration gets wrong."""
    if not isinstance(policy.name, str) or not NAME.fullmatch(policy.name):
        raise PolicyError(
            f"{where}: policy name {policy.name!r} must be letters, digits and . _ + - (up to 64)"
        )
    if policy.scheduler is None and policy.central is None:
        raise PolicyError(f"{where}: policy {policy.name!r} has neither a scheduler nor a central builder")
    for role in ("scheduler", "central", "node", "router"):
        builder = getattr(policy, role)
        if builder is not None and not callable(builder):
            raise PolicyError(f"{where}: policy {policy.name!r}: {role} is not callable")
    names = [p.name for p in policy.params]
    for p in policy.params:
        if not isinstance(p, Param):
            raise PolicyError(f"{where}: policy {policy.name!r}: {p!r} is not an aviary.policy.Param")
        if names.count(p.name) > 1:
            raise PolicyError(f"{where}: policy {policy.name!r} declares parameter {p.name!r} twice")
        try:
            if p.default is not None:
                p.check(p.default)
        except ValueError as exc:
            raise PolicyError(f"{where}: policy {policy.name!r}: its default {exc}") from None


_loaded: dict[str, list[Policy]] = {}
"""The policies of each source read so far."""


def load_source(source: str, *, origin: str | None = None) -> list[Policy]:
    """The policies a source declares (read once per process), each with its ``source`` and ``origin``
    set and checked; a module or file that cannot be imported, or an attribute that is not a policy, is
    one :class:`PolicyError` line naming the source."""
    target, attr, is_file = split_source(source)
    key = f"{target}:{attr}"
    if key in _loaded:
        return _loaded[key]
    try:
        module = _import_file(Path(target)) if is_file else importlib.import_module(target)
    except PolicyError:
        raise
    except ModuleNotFoundError as exc:
        import platform

        raise PolicyError(
            f"policy {source!r}: no module named {exc.name!r} on {platform.node()} (python {sys.executable})"
        ) from None
    except Exception as exc:
        raise PolicyError(
            f"policy {source!r}: importing {target} failed: {type(exc).__name__}: {exc}"
        ) from None
    if not hasattr(module, attr):
        raise PolicyError(f"policy {source!r}: {target} has no attribute {attr!r}")
    kept = "" if key == BUILTIN_SOURCE else key
    origin = origin or (f"file {target}" if is_file else f"module {target}")
    out = []
    for policy in _policies_of(getattr(module, attr), f"policy {source!r}"):
        _check(policy, f"policy {source!r}")
        out.append(replace(policy, source=kept, origin=origin, family=policy.family or policy.name))
    _loaded[key] = out
    return out


def _register(policies: list[Policy]) -> None:
    for policy in policies:
        held = POLICIES.get(policy.name)
        if held is not None and held.source != policy.source:
            raise PolicyError(
                f"policy {policy.name!r} of {policy.origin} clashes with the one of {held.origin} (rename it)"
            )
        POLICIES[policy.name] = policy


POLICIES: dict[str, Policy] = {}
"""Every policy known to this process by name: the built-ins, then plug-ins as they are loaded."""
_register(load_source(BUILTIN_SOURCE, origin="built-in"))
BUILTIN = tuple(POLICIES)
"""The built-in policies' names."""


@cache
def entry_points() -> tuple[EntryPoint, ...]:
    """The installed packages' entry points of :data:`ENTRY_POINT_GROUP` (read once per process, and only
    when a name is not a built-in's: reading them costs every command's start ~10-30 ms)."""
    from importlib.metadata import entry_points as installed_entry_points

    return tuple(installed_entry_points(group=ENTRY_POINT_GROUP))


def _origin(ep: EntryPoint) -> str:
    dist = ep.dist
    return f"package {dist.name} {dist.version}" if dist is not None else f"entry point {ep.name}"


def load_entry_point(ep: EntryPoint) -> list[Policy]:
    """The policies of one installed entry point, registered."""
    policies = load_source(ep.value, origin=_origin(ep))
    _register(policies)
    return policies


def installed() -> tuple[list[Policy], list[str]]:
    """Every installed plug-in's policies, registered, and one line for each entry point that fails."""
    found: list[Policy] = []
    errors: list[str] = []
    for ep in entry_points():
        try:
            found += load_entry_point(ep)
        except PolicyError as exc:
            errors.append(f"{_origin(ep)}: entry point {ep.name!r}: {exc}")
    return found, errors


def get_policy(ref: str) -> Policy:
    """The policy ``ref`` names: a built-in's name, an installed plug-in's name or a source (a plug-in
    file or module, loaded and registered); else one line with the closest name."""
    policy = POLICIES.get(ref)
    if policy is not None:
        return policy
    if ":" in ref:
        policies = load_source(ref)
        if len(policies) > 1:
            names = ", ".join(p.name for p in policies)
            raise PolicyError(f"policy {ref!r} declares {len(policies)} policies ({names}): name one of them")
        _register(policies)
        return policies[0]
    for ep in entry_points():
        if ep.name == ref:
            load_entry_point(ep)
    if ref not in POLICIES:
        installed()  # a family's member, or a name to suggest
    if ref in POLICIES:
        return POLICIES[ref]
    close = difflib.get_close_matches(ref, list(POLICIES), n=1)
    hint = f"did you mean {close[0]!r}?" if close else "'aviary policy list' lists them"
    raise PolicyError(f"unknown policy {ref!r} ({hint})")


def import_root(source: str) -> Path:
    """The folder that must be on ``sys.path`` for a plug-in's source to import (its file's folder, or
    the folder holding its top-level package), as the process that loaded it sees it."""
    target, _, is_file = split_source(source)
    if is_file:
        path = Path(target)
        return path.parent.parent if path.stem == "__init__" else path.parent
    load_source(source)
    module = sys.modules[target.split(".")[0]]
    locations = list(getattr(module, "__path__", []))
    if locations:  # a package: the folder above it
        return Path(locations[0]).resolve().parent
    return Path(module.__file__ or ".").resolve().parent


def cluster_policy(cluster: Cluster) -> Policy:
    """The policy of a cluster description: a plug-in from its ``policy_source``, loaded here."""
    if not cluster.policy_source:
        return get_policy(cluster.policy)
    for policy in load_source(cluster.policy_source):
        if policy.name == cluster.policy:
            _register([policy])
            return policy
    raise PolicyError(f"policy_source {cluster.policy_source!r} declares no policy named {cluster.policy!r}")


TIME_SCALE = Param("time_scale", 1.0, "trace seconds per second of the replay clock", low=0.0, open_low=True)
COMMON_PARAMS = (TIME_SCALE.name,)
"""Parameters every cluster description holds (written by every replay): not a policy's."""

LEGACY_PARAMS = ("probe_ratio",)
"""Accepted in any policy's cluster description and unused unless the policy declares it: every
cluster file held ``probe_ratio`` before each policy declared its own parameters."""


def check_params(cluster: Cluster, source: str) -> None:
    """One line naming ``source``, the line and the field when the cluster description names a policy
    that cannot be loaded here, lacks a process its policy needs (or has one it cannot run), or
    ``[cluster.params]`` holds a name the policy does not declare or a bad value of one it declares."""
    lines = TomlLines.of(source)
    top = Where(source, lines, "cluster", label="[cluster]")
    try:
        policy = cluster_policy(cluster)
    except PolicyError as exc:
        raise top.error("policy_source" if cluster.policy_source else "policy", str(exc)) from None
    for role, builder in (("scheduler", policy.scheduler), ("central", policy.central)):
        found = [i for i, p in enumerate(cluster.processes) if p.role == role]
        if builder is not None and not found:
            raise top.error("policy", f"policy {policy.name!r} needs a process with role {role!r}")
        if builder is None and found:
            i = found[0]
            where = Where(source, lines, "process", i, f"[[process]] #{i + 1}")
            raise where.error("role", f"policy {policy.name!r} has no {role} (remove the process)")
    where = Where(source, lines, "cluster.params", label="[cluster.params]")
    held = [p for p in policy.params if p.cluster]
    bad = unknown(held, cluster.params, (*COMMON_PARAMS, *LEGACY_PARAMS))
    if bad:
        raise where.error(bad[0], f"policy {policy.name!r} has no such parameter")
    if "time_scale" in cluster.params:
        try:
            TIME_SCALE.check(cluster.params["time_scale"])
        except ValueError as exc:
            raise where.error("time_scale", str(exc)) from None
    for p in held if policy.param("probe_ratio") else [*held, PROBE_RATIO]:
        if cluster.params.get(p.name) is not None:
            try:
                p.check(cluster.params[p.name])
            except ValueError as exc:
                raise where.error(p.name, str(exc)) from None


def build_core(spec: ProcessSpec, cluster: Cluster, *, recover: bool = False) -> Core:
    """The core of one process of the cluster (frontends are built by the replay); ``recover``: a central
    scheduler restarted after a death, held back until it has rebuilt its state."""
    if recover and spec.role == "central":
        from ...central.recovery import Recovering

        return Recovering(build_core(spec, cluster))
    policy = cluster_policy(cluster)
    if spec.role == "node" and policy.node is None:
        from ...worker.node_monitor import NodeMonitorCore

        return NodeMonitorCore(spec.name, spec.slots)
    builder = {"scheduler": policy.scheduler, "central": policy.central, "node": policy.node}.get(spec.role)
    if builder is None:
        raise PolicyError(f"process {spec.name!r}: policy {policy.name!r} has no {spec.role} role")
    core = builder(Context(spec, cluster, policy.params))
    if not isinstance(core, Core):
        raise PolicyError(
            f"process {spec.name!r}: policy {policy.name!r}'s {spec.role} builder returned a "
            f"{type(core).__name__}, not an aviary.policy.Core"
        )
    return core


def policy_cluster(
    policy: str | Policy,
    *,
    nodes: int,
    slots: int = 1,
    schedulers: int = 1,
    executor: str = "timer",
    seed: int = 0,
    params: dict[str, Any] | None = None,
    short_partition: float | None = None,
    bind_ports: bool = True,
    capacity: Resources | None = None,
) -> Cluster:
    """A local cluster with the processes ``policy`` (one, or a name or source) needs: a central
    scheduler if it uses one, and ``schedulers`` distributed schedulers only if it uses them
    (``bind_ports=False`` for the simulator). ``short_partition`` (share of the nodes) defaults to the
    policy's own (17 % for Hawk and Eagle). The nodes of a multi-resource policy get ``capacity``
    (default :data:`DEFAULT_MACHINE`) and as many slots as whole cores; the other policies' nodes have
    ``slots`` and no capacity."""
    spec = policy if isinstance(policy, Policy) else get_policy(policy)
    if short_partition is None:
        short_partition = spec.short_partition
    if spec.dag:
        capacity = capacity or DEFAULT_MACHINE
        slots = max(1, int(capacity.cores))
    else:
        capacity = None
    cluster = local_cluster(
        nodes=nodes,
        slots=slots,
        schedulers=schedulers if spec.scheduler is not None else 0,
        central=spec.central is not None,
        policy=spec.name,
        executor=executor,
        seed=seed,
        params=params,
        short_partition=short_partition,
        bind_ports=bind_ports,
        capacity=capacity,
    )
    cluster.policy_source = spec.source
    return cluster
