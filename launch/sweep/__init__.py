"""``aviary sweep``: a grid of simulated replays. :mod:`.spec` reads and checks the TOML spec,
:mod:`.estimate` says how long its cells take, :mod:`.run` runs them (local cores or Dask) and combines
the tables and figures. Imports :mod:`..results`, :mod:`..replay` and the groups below them."""
