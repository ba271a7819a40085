"""The wire (``docs/measurements.md``, "The wire"): ``python -m aviary.benchmarks.wire WHAT [flags]``."""

WHATS = {
    "messages": "messages per task of every policy, simulated; and the codec's table (--codec-only)",
    "codec": "encode + decode time per message kind, today's codec against an earlier revision's",
}
