"""``python -m aviary.launch.cli ...``: the ``aviary`` command (:mod:`.main`)."""

import sys

from .main import main

sys.exit(main())
