"""``python -m aviary.experiments.kairos_sim``."""

from aviary.experiments.kairos_sim.main import main

raise SystemExit(main())
