"""The cells of the specs in ``experiments/sweeps/`` as the experiment scripts' analyses read them
(their ``--from-sweep DIR``): ``aviary sweep SPEC.toml --out DIR/<name>`` (or the spec's default folder,
``results/sweeps/<name>/``, with ``DIR = results/sweeps``) leaves one folder per cell; a script finds the
folder of one of its cells by the cell's values (the spec's ``[replay]`` flags and the cell's axes, as
the sweep shows them: ``policy = "hawk:stealers=general"``, ``nodes = 5000``, ``load = "trace"``).
Only finished cells count (:func:`aviary.launch.sweep.run.cell_done`: a ``summary.json`` recording the
spec's flags)."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aviary.launch.sweep.run import cell_done
from aviary.launch.sweep.spec import Sweep, load_sweep, shown

SPECS = Path(__file__).resolve().parent / "sweeps"


def policy_value(policy: str, flags: Sequence[str] = ()) -> str:
    """A policy run with more replay flags as a spec's policy value: ``("hawk", ["--stealers",
    "general"])`` -> ``hawk:stealers=general`` (a flag and its value at a time)."""
    pairs = [
        f"{flags[i].removeprefix('--').replace('-', '_')}={flags[i + 1]}" for i in range(0, len(flags), 2)
    ]
    return policy + (":" + ",".join(pairs) if pairs else "")


@functools.cache
def sweep(name: str, root: Path) -> Sweep:
    """The spec ``experiments/sweeps/<name>.toml`` with its folder under ``root`` (``root/<its name>``)."""
    loaded = load_sweep(SPECS / f"{name}.toml")
    loaded.out = root / loaded.name
    return loaded


@functools.cache
def done_cells(names: tuple[str, ...], root: Path) -> list[tuple[dict[str, str], Path]]:
    """Every finished cell of the specs ``names`` under ``root``: its values (shared flags and axes, as
    text) and its folder, in the specs' order."""
    out = []
    for name in names:
        s = sweep(name, root)
        base = {k: shown(v) for k, v in s.base.items()}
        for cell in s.cells:
            folder = s.out / cell.name
            if cell_done(folder, cell):
                out.append(({**base, **{k: shown(v) for k, v in cell.values.items()}}, folder))
    return out


def same(have: str | None, want: Any) -> bool:
    """Whether a cell's value ``have`` (as text; None: the cell does not set it) is ``want``: None for
    a value the cell must not set (the replay's default), else equal as text or, part by part, as
    numbers (``0.5`` is ``0.50``, ``1:1`` is ``[1.0, 1.0]``)."""
    if want is None or have is None:
        return want is None and have is None
    text = shown(want)
    if have == text:
        return True
    a, b = have.split(":"), text.split(":")
    try:
        return len(a) == len(b) and all(float(x) == float(y) for x, y in zip(a, b, strict=True))
    except ValueError:
        return False


def find(names: Sequence[str], root: Path, **want: Any) -> Path | None:
    """The folder of the first finished cell of the specs ``names`` under ``root`` whose values include
    ``want`` (``policy="eagle", nodes=5000``; ``plan_ahead=None``: a cell that does not set it); None if
    there is none."""
    for values, folder in done_cells(tuple(names), root):
        if all(same(values.get(k), v) for k, v in want.items()):
            return folder
    return None


def from_sweep_flag(
    parser: argparse.ArgumentParser, specs: str, what: str = "the report", more: str = ""
) -> None:
    """The scripts' ``--from-sweep DIR``: ``what`` from the cells of ``experiments/sweeps/<specs>.toml``."""
    parser.add_argument(
        "--from-sweep",
        type=Path,
        metavar="DIR",
        help=f"no runs: {what} from the cells of `aviary sweep experiments/sweeps/{specs}.toml` under DIR "
        f"(DIR/<spec name>/<cell>/; the sweeps' default DIR: results/sweeps){more}",
    )
