"""Kairos normalized to Eagle on the bundled Google sample, simulated (thesis §4.6, Figure 4.8).

    python -m aviary.experiments.kairos_sim [--nodes 5000 5500 6500 8000] [--baseline eagle] [--seeds 0 1 2]
                                     [--out DIR]
    python -m aviary.experiments.kairos_sim --report-only     # the report from the saved runs
    python -m aviary.experiments.kairos_sim --from-sweep results/sweeps   # from `aviary sweep` cells

Every run is ``aviary replay --runtime sim`` of the whole bundled 10,000-job Google sample at its own
arrival times (time scale 1, no task merging), on single-slot nodes as in the thesis' simulations.
Kairos uses Q = 2, W = 10,000 s and a starvation guard after 3 missed quanta (§4.6.2); the baseline
runs with its own defaults and 10 distributed schedulers, exactly as in ``hawk_eagle_sim.py``, whose
results (``experiments/results/hawk_eagle_sim/<baseline>-<nodes>/summary.json``) are reused when their
settings match (``--no-reuse`` re-runs them). The thesis simulated 15,000-23,000 nodes with the whole
Google trace; the bundled sample keeps about 4,700 single-slot nodes busy, so 5,000-8,000 nodes span a
similar range of loads (~94 % down to ~59 % offered load).

Every run is made for each seed of ``--seeds`` (default 0, 1, 2; the seed draws the schedulers' and
nodes' choices, and with Poisson arrivals the arrival times): seed 0's runs keep their folders' names
(``DIR/<policy>-<nodes>/``), seed S's end in ``-sS`` (``runs.seeded``), and the baseline's are
``hawk_eagle_sim.py``'s of the same seed. Each ratio is taken within a seed (both runs with the same
seed); the tables show its median over the seeds [min, max], how many seeds a row has (fewer than
``--seeds``: marked, with the seeds it has) and where the seeds disagree on which policy is better; the
thesis' claims are judged on the medians, and the report says where a seed's verdict differs. The
measurements by submission time and task size, and the instrumented runs, are seed 0's.

Writes ``DIR/kairos_sim.md`` (short and long p50/p90/p99 of Kairos divided by the baseline's, the raw
values and each run's utilization) and ``DIR/kairos_sim.png`` (the bars of Figure 4.8: the medians, the
whiskers the seeds' range), and keeps each run's ``summary.json`` and ``jobs.csv`` under
``DIR/<policy>-<nodes>/`` (``jobs.csv``, 10,000 rows, is not committed; seed 0's feed the measurements of
the report). The report also has, for each size, an
instrumented Kairos run (the central queue, when short jobs leave it, suspensions of long tasks by
task size: ``DIR/kairos-<nodes>/measure.json``, ``--force-measure`` repeats it), a control without the
sample's burst (both policies with Poisson arrivals at the sample's mean load on 8,000 and 5,000 nodes,
``DIR/<policy>-<nodes>-poisson/``), which thesis claim holds where (on the medians over the seeds)
and a discussion of where the numbers agree with the thesis. ``--report-only`` runs nothing but a
missing instrumented run: a seed without both runs of a size or control is left out of its row.
If the baseline policy is not registered (Eagle lands with its own issue), the script says so and
uses ``sparrow`` instead.

``--from-sweep DIR`` runs nothing: the tables, the measurements from ``jobs.csv``, the controls and the
plot come from the cells of ``aviary sweep experiments/sweeps/kairos_sim*.toml`` under DIR
(``DIR/<spec name>/<cell>/``; the sweeps' default DIR: ``results/sweeps``; the specs have seed 0 only,
so the rows say so); the instrumented runs are
not sweep cells (they need the simulator's observer hook), so their sections read the ``measure.json``
the script saved under ``--out`` or say they are absent.

The package: ``cells.py`` says what a run is (its flags, folder or sweep cell, the reuse of
``hawk_eagle_sim``'s baseline runs, the Poisson controls), ``measure.py`` is the instrumented Kairos run,
``report.py`` builds the report and the figure from the runs (the discussion in ``discussion.md``), and
``main.py`` is the command.
"""
