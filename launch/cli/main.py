"""The ``aviary`` command: parse the command line (:mod:`aviary.launch.flags.parser`, what the user
types) and run the command (:mod:`.commands`), turning a usage error into one line and exit status 2."""

from __future__ import annotations

import gc
import os
import shlex
import sys

from ...common.cluster import ClusterError
from ..flags.parser import build_parser, check_flags, command_list, given_flags, preload_policy
from ..flags.spec import RunFailed, UsageError


def main(argv: list[str] | None = None) -> int:
    if argv is not None:
        return _main(argv)
    try:
        return _main(sys.argv[1:])
    finally:
        # The process ends here: what it holds needs no collection at exit (a simulated replay of the
        # bundled sample on 12,500 nodes spent about 1 s of CPU on it).
        gc.freeze()


def _main(argv: list[str]) -> int:
    preload_policy(argv)  # a plug-in's parameters are flags too
    try:
        parser = build_parser()
    except ClusterError as exc:  # a plug-in whose parameter takes a flag of aviary's
        print(f"aviary: error: {exc}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    if args.command is None:  # bare ``aviary``
        print(command_list(parser))
        return 0
    from ...common.addresses import raise_open_files
    from . import commands

    raise_open_files()  # the launcher's frontend reaches every process
    try:
        if args.command in ("replay", "up"):
            args.given = given_flags(argv)  # a replay --connect refuses testbed flags given
            args.command_line = "aviary " + shlex.join(argv)  # what summary.json records
        for warning in check_flags(args):
            print(f"aviary {args.command}: warning: {warning}", file=sys.stderr)
        return commands.COMMANDS[args.command](args)
    except (UsageError, ClusterError) as exc:
        print(f"aviary {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except RunFailed as exc:
        print(f"aviary {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("aviary: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of the output went away (`aviary sweep --dry-run | head`)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 141
