"""``aviary trace convert`` and ``aviary trace sample`` (``docs/traces.md``)."""

from __future__ import annotations

import argparse

from ..flags.spec import UsageError


def convert(args: argparse.Namespace) -> int:
    raise UsageError(f"convert {args.format}: not yet")


def sample(args: argparse.Namespace) -> int:
    raise UsageError("sample: not yet")
