"""``python -m aviary.experiments.kairos_analysis``."""

from aviary.experiments.kairos_analysis.main import main

raise SystemExit(main())
