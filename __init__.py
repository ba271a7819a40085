"""Aviary: a testbed for datacenter schedulers (see DESIGN.md in the shared folder and README.md)."""

__version__ = "0.1.0"
