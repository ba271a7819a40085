"""``python -m aviary.experiments.thesis_regime``."""

from aviary.experiments.thesis_regime.main import main

raise SystemExit(main())
