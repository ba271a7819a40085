"""Aviary: a testbed for datacenter schedulers (see DESIGN.md in the shared folder and README.md)."""

__version__ = "0.1.0"

# The compiled build of the simulator's hot cores, or the pure-Python sources (speedups.py). Only as
# the package: pytest, whose root folder this is, also loads this file as a module of its own.
if __package__:
    from .speedups import choose as _choose

    _choose(__package__)

_API = ("replay", "compare", "rebuild", "Run", "ReplaySpec", "UsageError", "RunFailed", "AviaryWarning")


def __getattr__(name: str) -> object:
    """``from aviary import replay, compare, Run, ReplaySpec`` (:mod:`aviary.api`), imported on first use:
    a node process, which imports this package, never loads the launcher for it."""
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'aviary' has no attribute {name!r}")
