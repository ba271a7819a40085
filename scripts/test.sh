#!/usr/bin/env bash
# The test command: set up, lint, then the whole default suite (unit, integration on loopback, system),
# all with the project's environment .venv (scripts/setup.sh); arguments go to pytest.
# Every step is a command of its own under set -e: a failure of any one (a lint error included) fails
# the command. scripts/setup-docker.sh may leave a dockerd running: docker/README.md says how to stop it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH" # python, aviary, ruff, mypy of .venv, for these scripts and the tests
PYTHON=$PWD/.venv/bin/python bash scripts/setup-docker.sh # the docker engine and image (never fails: see it)
bash scripts/setup-browser.sh      # chromium and chromium-driver for the browser tests (never fails: see it)
bash scripts/lint.sh               # ruff check, ruff format --check, import contracts, mypy, the docs site
python -m pytest -q "$@"
