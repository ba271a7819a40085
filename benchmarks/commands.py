"""The command of a question that several measurements answer:
``python -m aviary.benchmarks.QUESTION WHAT [flags]`` runs the module ``WHAT`` of that question's package
with ``flags``, exactly as ``python -m aviary.benchmarks.QUESTION.WHAT [flags]`` would; without ``WHAT``
it lists them."""

from __future__ import annotations

import importlib
import sys
from typing import Any


def run(package: str, whats: dict[str, str], argv: list[str] | None = None) -> Any:
    """Run ``package``'s module named by ``argv``'s first word with the rest; ``whats`` maps each name to
    what it measures. The module's ``main`` result is the exit status (None: 0)."""
    argv = sys.argv[1:] if argv is None else argv
    prog = f"python -m {package}"
    if not argv or argv[0] in ("-h", "--help"):
        print(f"usage: {prog} WHAT [flags]   ({prog} WHAT --help: its flags)\n")
        width = max(map(len, whats))
        for name, what in whats.items():
            print(f"  {name:<{width}}  {what}")
        return 0 if argv else 2
    what, rest = argv[0], argv[1:]
    if what not in whats:
        print(f"{prog}: no measurement {what!r} (one of: {', '.join(whats)})", file=sys.stderr)
        return 2
    sys.argv[0] = f"{prog} {what}"  # the usage line of the modules whose parser takes its name from argv
    return importlib.import_module(f"{package}.{what}").main(rest)
