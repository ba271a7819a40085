"""Benchmarks: what Aviary itself costs and how fast it runs, one module per question that
``docs/measurements.md`` answers (the papers' reproductions are ``experiments/``). Each is one command:

- ``python -m aviary.benchmarks.runtime_overhead WHAT``: the real runtime's overhead (``hops``,
  ``transport``, ``dashboard``, ``journal``, ``docker_executor``);
- ``python -m aviary.benchmarks.scale_and_memory WHAT``: scale and memory (``nodes``: a thousand real node
  monitors; ``soak``);
- ``python -m aviary.benchmarks.wire WHAT``: the wire (``messages``: messages per task, and the codec;
  ``codec``);
- ``python -m aviary.benchmarks.simulator_speed WHAT``: the simulator's speed (``compare``, ``sample``,
  ``plugin``, ``trace_convert``, ``month``);
- ``python -m aviary.benchmarks.estimates``: how right a replay's estimate of its wall time is;
- ``python -m aviary.benchmarks.agreement``: the agreement of simulator and real runtime;
- ``python -m aviary.benchmarks.central_policies WHAT``: the centralized policies' cost (``packing``,
  ``tetrisched``);
- ``python -m aviary.benchmarks.floors``: the machine's floors.

A question with several measurements is a package: ``python -m aviary.benchmarks.QUESTION`` lists them,
and ``python -m aviary.benchmarks.QUESTION.WHAT`` runs one as well. ``aviary bench`` (the real runtime at a
glance, against Dask) is a command of its own (``launch/cli/bench.py``). Results they commit stay in
``experiments/results/``.
"""
