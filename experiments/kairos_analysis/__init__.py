"""Why our Table 4.1 reproduction disagrees with the thesis (Fig. 4.4, 4.6, 4.7): simulator measurements.

    python -m aviary.experiments.kairos_analysis [--published FILE] [--out experiments/results/kairos_real]

The same cores as ``kairos_real.py`` (30 nodes x 4 slots, Q = 4, W = 50 s, trace seconds), driven on
the simulator by a small frontend of this script that can submit a job as stages (a reduce stage when
its map stage is done). The simulator's observer hook records when each task is placed and when it
finishes and, for Kairos, which dispatch decisions had a real choice between tied nodes (each dispatch
round replayed from its placements: no private method of a core is replaced). The sections of
``DIR/analysis.md``:

1. does the tie-break have a choice? (every task of a job has the same duration and a job has >= 30
   tasks, so a count level is filled one task per node);
2. head-of-line blocking in the central FIFO queue: time in the central queue vs on nodes, per category;
3. our workload model vs the thesis' YARN testbed: load, arrival process, map -> reduce barrier,
   heterogeneous task durations, Q and W (Fig. 4.7), the starvation guard, Q = infinity;
4. (with ``--published``) the job sequence of the workload file published with the thesis' code.

Its summary is copied into ``kairos_real.md`` by ``kairos_real.py``. One process, one simulation at a
time (~0.3 s each, ~320 in all).

The package: ``staged.py`` is the simulation (the workload and its variants, the staged frontend, the
observer that counts ties), ``report.py`` writes the sections from its runs, ``main.py`` is the command.
"""
