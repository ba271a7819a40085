"""What a replay is. :mod:`.run` (``aviary replay``) resolves a :class:`~..flags.spec.ReplaySpec` once
into :class:`.resolved.ReplaySetup` (the policy, the cluster, the jobs), then hands that to a driver and
writes the results. Beside it: :mod:`.jobs` and :mod:`.gshet` (the workload), :mod:`.predict` (the
simulator's forecast of a real replay), :mod:`.provenance` (what was replayed, exactly),
:mod:`.progress`, :mod:`.folder` (where results go), :mod:`.connect` (checks of ``--connect``).
Imports :mod:`..drivers`, :mod:`..flags`, :mod:`..policies`."""
