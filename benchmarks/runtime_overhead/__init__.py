"""The real runtime's overhead (``docs/measurements.md``, "The real runtime's overhead"; ``aviary bench``
gives it at a glance): ``python -m aviary.benchmarks.runtime_overhead WHAT [flags]``."""

WHATS = {
    "hops": "the round trip, hop by hop (with the hop log)",
    "transport": "one hop: ZeroMQ against plain TCP, Aviary's transports with and without keys",
    "dashboard": "what the live dashboard costs a real replay",
    "journal": "what the results journal costs (--what tasks: the task table)",
    "links": "what the link layer costs a replay without faults of the network, against a baseline tree",
    "docker_executor": "what the docker executor costs a task (docker/README.md)",
}
