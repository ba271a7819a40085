"""The launcher: everything between what the user types and the cores. Grouped by the question a reader
brings, each group a package that imports only the groups below it (pyproject.toml's ``launch-groups``
contract, checked by ``lint-imports``), from the top:

- :mod:`.cli`: what each ``aviary`` command does (the entry point, the demo, the bench);
- :mod:`.sweep`: a grid of replays (a spec, estimates, cells run locally or on Dask);
- :mod:`.results`: what results mean (``aviary compare``, ``aviary report``);
- :mod:`.replay`: what a replay is (its spec resolved once, its jobs, prediction, provenance, progress);
- :mod:`.drivers`: where cores run: the simulator on virtual time, or real processes (local, over SSH,
  in containers), with the live dashboard;
- :mod:`.flags`: what the user types (the grammar and the typed :class:`~.flags.spec.ReplaySpec`);
- :mod:`.policies`: which processes and cores each policy needs (the registry).
"""
