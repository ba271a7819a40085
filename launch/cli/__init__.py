"""What each ``aviary`` command does: :mod:`.main` (the entry point: a usage error is one line and exit
status 2), :mod:`.commands` (one function per sub-command), :mod:`.demo`, :mod:`.bench` and
:mod:`.bench_dask` (``aviary bench --peer dask``). The top group: it may import every other group."""
