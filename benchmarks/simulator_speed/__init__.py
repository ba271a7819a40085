"""The simulator's speed (``docs/measurements.md``, "The simulator's speed"):
``python -m aviary.benchmarks.simulator_speed WHAT [flags]``."""

WHATS = {
    "compare": "whole-sample replays against a baseline build and/or another simulator, interleaved",
    "sample": "the whole bundled sample on 5,000 nodes, in this process",
    "plugin": "what a plug-in policy costs against the same policy built in",
    "trace_convert": "the speed and memory of aviary trace convert",
    "month": "the scale of the whole Google month: a trace streamed, not loaded",
    "families": "events and tasks per second of CPU of a policy of every family, compiled and pure",
}
