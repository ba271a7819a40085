"""Aviary: a testbed for datacenter schedulers (see DESIGN.md in the shared folder and README.md)."""

__version__ = "0.1.0"

# The compiled build of the simulator's hot cores, or the pure-Python sources (speedups.py). Only as
# the package: pytest, whose root folder this is, also loads this file as a module of its own.
if __package__:
    from .speedups import choose as _choose

    _choose(__package__)
