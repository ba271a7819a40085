"""The spec of ``aviary sweep`` (a TOML file), read and checked: :func:`load_sweep` -> :class:`Sweep`.

A spec has a ``[replay]`` table of the flags every cell shares (any flag of ``aviary replay --runtime
sim``, by its name with ``_`` or ``-``: ``workload``, ``jobs``, ``nodes``, ``load``, ``seed``, a policy's
parameters such as ``fair_fraction``...), a ``[grid]`` table of axes (a flag's name -> a list of values;
the cells are every combination, in the order the axes are written) and, at the top, an optional
``baseline`` (a value of the ``policy`` axis: the normalized table and figures divide by it), ``name``,
``out`` (the sweep's folder, relative to the spec file) and ``figure`` (the figure's file name in that
folder; its extension picks the format). A policy value may carry its own parameters,
``tetris:fair_fraction=0.5`` (as ``experiments/dag_sweep.py``'s variants); a ``load`` value may be
``"batch"`` (``--batch``) or ``"trace"`` (``--keep-arrivals``).

Every value is checked by the replay's own parser and every cell by
:class:`~aviary.launch.flags.spec.ReplaySpec`; a bad one is a :class:`~aviary.launch.flags.spec.UsageError`
of one line naming the file, the line and the field.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import os
import re
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..flags.parser import preload_policy
from ..flags.spec import ReplaySpec, UsageError

__all__ = ["Cell", "Sweep", "load_sweep"]

TOP = ("name", "out", "baseline", "figure", "replay", "grid")
"""The keys a spec may have at the top."""
REFUSED = {
    "runtime": "a sweep runs the simulator",
    "out": "each cell has its own folder (give 'out' at the top of the spec)",
    "connect": "a sweep runs the simulator",
    "duration": "only for real processes",
    "max_wall": "only for real processes",
    "yes": "only for real processes",
    "quiet": "a sweep's cells are always quiet",
}
"""Flags of ``aviary replay`` a spec may not give, and why."""
LOADS = {"batch": "--batch", "trace": "--keep-arrivals"}
"""``load`` values that are arrival settings rather than an offered load."""
DEFAULT_FIGURE = "normalized.png"


@dataclass(frozen=True)
class Cell:
    """One replay of the grid."""

    name: str
    """Its folder's name: the axes' values, ``drf,load=0.8,seed=0`` (the policy's alone, first)."""
    values: dict[str, Any]
    """Axis -> the cell's value, in the order of the axes."""
    flags: list[str]
    """The ``aviary replay`` flags of the cell, ``--runtime sim`` first (no ``--out``, ``--quiet``)."""

    def others(self, axis: str = "policy") -> tuple[tuple[str, str], ...]:
        """The cell's values on every axis but ``axis``, as text (the key of its baseline cell)."""
        return tuple((k, shown(v)) for k, v in self.values.items() if k != axis)


@dataclass
class Sweep:
    path: Path
    name: str
    out: Path
    base: dict[str, Any]
    """``[replay]``: the flags every cell shares."""
    axes: dict[str, list[Any]]
    cells: list[Cell]
    baseline: str | None = None
    figure: str = DEFAULT_FIGURE
    lines: dict[str, int] = field(default_factory=dict)
    traces: dict[str, str] = field(default_factory=dict)
    """Each trace file a cell reads -> where the spec names it (``s.toml: line 3: field 'replay.trace'``)."""
    out_named: str = ""
    """Where ``out`` comes from, to name in an error (the flag, the spec's line, or the default)."""

    def check_files(self) -> None:
        """Raise a one-line :class:`UsageError` unless every trace the cells read is a readable file and
        ``out`` can be written (:func:`unwritable`); ``aviary sweep`` checks this before it lists or
        runs a cell (a spec may name a trace a script makes first, so :func:`load_sweep` does not)."""
        for trace, where in self.traces.items():
            if not (Path(trace).is_file() and os.access(trace, os.R_OK)):
                missing = "no such file" if not Path(trace).exists() else "not a readable file"
                raise UsageError(f"{where}: {trace}: {missing}")
        problem = unwritable(self.out)
        if problem is not None:
            raise UsageError(f"{self.out_named or self.out}: {problem}")

    def describe(self) -> str:
        """The shared flags, one line (``workload tpch, jobs 60, nodes 20``)."""
        return ", ".join(f"{k} {shown(v)}" for k, v in self.base.items()) or "the replay's defaults"


def policy_value(value: str, folder: Path) -> tuple[str, str]:
    """``(policy, settings)`` of a spec's policy value ``REF[:key=value,...]``: REF a policy's name or a
    plug-in's source (``module:attribute``, ``path/file.py:attribute``, a path relative to the spec's
    ``folder``)."""
    ref, sep, settings = value.rpartition(":")
    if not sep or "=" not in settings:
        ref, settings = value, ""
    target, sep, attr = ref.rpartition(":")
    if sep and (target.endswith(".py") or "/" in target) and not Path(target).expanduser().is_absolute():
        ref = f"{folder / target}:{attr}"
    return ref, settings


def shown(value: Any) -> str:
    """A value as a cell name and a table show it (``0.8``, ``batch``, ``[0.5, 2.0]`` -> ``0.5:2.0``)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return ":".join(shown(v) for v in value)
    return str(value)


def _safe(text: str) -> str:
    """Text safe in a folder name: ``/``, ``:``, ``,`` and blanks become ``+``."""
    return re.sub(r"[^A-Za-z0-9._=+-]", "+", text)


def line_of(text: str, table: str | None, key: str) -> int | None:
    """The line (from 1) of ``key = ...`` in ``[table]`` (None: at the top) of a TOML text."""
    current: str | None = None
    pattern = re.compile(rf"""^\s*["']?{re.escape(key)}["']?\s*=""")
    for n, line in enumerate(text.splitlines(), 1):
        header = re.match(r"^\s*\[([^\[\]]+)\]", line)
        if header:
            current = header.group(1).strip()
        elif current == table and pattern.match(line):
            return n
    return None


class _Refusal(Exception):
    pass


def _replay_parser() -> argparse.ArgumentParser:
    from ..flags.parser import _commands, build_parser

    parser = _commands(build_parser()).choices["replay"]

    def refuse(message: str) -> Any:  # the parser's one line, as an exception
        raise _Refusal(message)

    parser.error = refuse  # type: ignore[method-assign]
    return parser


@dataclass
class _Flags:
    """The replay parser's actions by destination, and the conversion of a spec's value to flags."""

    parser: argparse.ArgumentParser = field(default_factory=_replay_parser)

    def __post_init__(self) -> None:
        self.actions = {a.dest: a for a in self.parser._actions if a.dest not in ("help",)}

    def action(self, key: str) -> argparse.Action:
        dest = key.replace("-", "_")
        if dest in REFUSED:
            raise ValueError(f"not in a sweep: {REFUSED[dest]}")
        if dest not in self.actions:
            raise ValueError("not a flag of 'aviary replay'")
        return self.actions[dest]

    def flags(self, key: str, value: Any, folder: Path) -> list[str]:
        """The flags that give ``key`` the ``value`` (checked by the replay's parser)."""
        dest = key.replace("-", "_")
        if dest == "policy" and isinstance(value, str):
            ref, settings = policy_value(value, folder)
            out = ["--policy", ref]
            self.parse(out)
            for item in filter(None, (s.strip() for s in settings.split(","))):
                param, sep, setting = item.partition("=")
                if not sep:
                    raise ValueError(f"policy variant {value!r}: expected name:key=value,...")
                out += self.flags(param.strip(), _number(setting.strip()), folder)
            return out
        if dest == "load" and value in LOADS:
            return [LOADS[value]]
        action = self.action(key)
        flag = action.option_strings[0] if action.option_strings else None
        if isinstance(action, argparse._StoreTrueAction):
            if not isinstance(value, bool):
                raise ValueError(f"expected true or false, got {value!r}")
            out = [flag] if value and flag else []
        elif action.nargs == 2:
            if not isinstance(value, list) or len(value) != 2:
                raise ValueError(f"expected a list of two numbers [LO, HI], got {value!r}")
            out = [flag or "", *map(str, value)]
        else:
            if isinstance(value, bool) or (isinstance(value, (dict, list)) and dest != "capacity"):
                raise ValueError(f"expected a number or a string, got {value!r}")
            text = ",".join(map(str, value)) if isinstance(value, list) else str(value)
            if dest == "trace":
                text = str(folder / text)
            out = [flag, text] if flag else [text]
        self.parse(out)
        return out

    def parse(self, flags: list[str]) -> argparse.Namespace:
        """``aviary replay --runtime sim FLAGS``, parsed; the parser's complaint as a ValueError."""
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                return self.parser.parse_args(["--runtime", "sim", *flags])
        except _Refusal as exc:
            raise ValueError(str(exc)) from None
        except SystemExit:  # --help or the like
            raise ValueError("not a value") from None


def _number(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def load_sweep(path: Path, out: Path | None = None) -> Sweep:
    """Read and check the spec at ``path``; ``out`` overrides its folder. A bad spec raises a one-line
    :class:`UsageError` naming the file, the line (where it can) and the field. Whether its files exist
    and its folder can be written is :meth:`Sweep.check_files`."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the sweep spec: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        at_key = re.match(
            r"""\s*["']?([\w-]+)["']?\s*=""", raw.splitlines()[line - 1].decode("utf-8", "replace")
        )
        field = f": field '{at_key.group(1)}'" if at_key else ""
        raise UsageError(
            f"{path}: line {line}{field}: not UTF-8 text (byte 0x{raw[exc.start]:02x}; TOML is UTF-8)"
        ) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML: {exc}") from None

    def where(table: str | None, key: str) -> str:
        line = line_of(text, table, key)
        at = f"{table}.{key}" if table else key
        return f"{path}: line {line}: field '{at}'" if line else f"{path}: field '{at}'"

    for key in data:
        if key not in TOP:
            raise UsageError(f"{where(None, key)}: not a key of a sweep spec (expected {', '.join(TOP)})")
    for key in ("name", "out", "baseline", "figure"):
        if key in data and not isinstance(data[key], str):
            raise UsageError(f"{where(None, key)}: expected a string, got {data[key]!r}")
    for key in ("replay", "grid"):
        if key in data and not isinstance(data[key], dict):
            raise UsageError(f"{path}: field '{key}': expected a table [{key}]")
    base: dict[str, Any] = data.get("replay", {})
    grid: dict[str, Any] = data.get("grid", {})
    folder = path.parent
    for given in (base, grid):  # plug-ins first: their parameters are flags of the replay's parser
        named = given.get("policy", [])
        for value in named if isinstance(named, list) else [named]:
            if isinstance(value, str):
                preload_policy(["--policy", policy_value(value, folder)[0]])
    conv = _Flags()
    traces: dict[str, str] = {}
    flags: dict[str, dict[str, list[str]]] = {}
    """key -> shown value -> its flags."""
    for table, values in (("replay", base), ("grid", grid)):
        for key, value in values.items():
            if table == "grid":
                if not isinstance(value, list) or not value:
                    raise UsageError(f"{where(table, key)}: expected a non-empty list of values")
                if key in base:
                    raise UsageError(f"{where(table, key)}: given in [replay] too")
                listed = value
            else:
                listed = [value]
            for v in listed:
                try:
                    flags.setdefault(key, {})[shown(v)] = conv.flags(key, v, folder)
                except ValueError as exc:
                    raise UsageError(f"{where(table, key)}: {exc}") from None
                if key.replace("-", "_") == "trace":
                    traces.setdefault(flags[key][shown(v)][-1], where(table, key))
            if table == "grid" and len(set(map(shown, listed))) != len(listed):
                raise UsageError(f"{where(table, key)}: a value is listed twice")
    figure = data.get("figure", DEFAULT_FIGURE)
    from ..results.compare import CompareError, figure_format

    try:
        figure_format(Path(figure))
    except CompareError as exc:
        raise UsageError(f"{where(None, 'figure')}: {exc}") from None
    baseline = data.get("baseline")
    if baseline is not None:
        policies = [shown(p) for p in grid.get("policy", [])]
        if baseline not in policies:
            raise UsageError(
                f"{where(None, 'baseline')}: {baseline!r} is not a value of the [grid] policy axis "
                f"({', '.join(policies) or 'none'})"
            )
    shared = [f for key, value in base.items() for f in flags[key][shown(value)]]
    cells: list[Cell] = []
    names: dict[str, Cell] = {}
    for combo in itertools.product(*grid.values()):
        values = dict(zip(grid, combo, strict=True))
        parts = [_safe(shown(values["policy"]))] if "policy" in values else []
        parts += [f"{k}={_safe(shown(v))}" for k, v in values.items() if k != "policy"]
        name = ",".join(parts) or "cell"
        cell_flags = [
            "--runtime",
            "sim",
            *shared,
            *(f for k, v in values.items() for f in flags[k][shown(v)]),
        ]
        cell = Cell(name, values, cell_flags)
        if name in names:
            raise UsageError(f"{path}: [grid]: cells {values} and {names[name].values} have one folder name")
        names[name] = cell
        try:
            args = conv.parse(cell_flags)
            from ..flags.parser import check_flags

            args.command = "replay"
            check_flags(args)
            ReplaySpec.from_args(args)
        except (ValueError, UsageError) as exc:
            raise UsageError(f"{path}: cell {name}: {exc}") from None
        cells.append(cell)
    where_out = Path(data["out"]) if "out" in data else None
    name = data.get("name", path.stem)
    if out is not None:
        named = f"argument --out: {out}"
    elif where_out is not None:
        out = folder / where_out
        named = f"{where(None, 'out')}: {out}"
    else:
        out = Path("results") / "sweeps" / name
        named = f"{path}: field 'out' (default {out})"
    return Sweep(path, name, out, base, dict(grid), cells, baseline, figure, traces=traces, out_named=named)


def unwritable(folder: Path) -> str | None:
    """Why the folder ``folder`` could not be made or written into (None: it can), found without making
    it: its nearest existing ancestor must be a folder that takes a new entry (tried with a scratch
    folder, removed at once), or ``folder`` itself one, as root too."""
    probe = folder
    while not probe.exists() and not probe.is_symlink() and probe.parent != probe:
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is not a folder"
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".aviary-probe-", dir=probe))
    except OSError as exc:
        return f"cannot write into {probe}: {exc.strerror or exc}"
    return None
