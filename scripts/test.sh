#!/usr/bin/env bash
# The test command: set up, then the whole default suite (unit, integration on loopback, system).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/setup-docker.sh # the docker executor's engine and image (never fails: see the script)
ruff check --quiet . # the code stays ruff clean (two commands: set -e ignores a failure left of &&)
ruff format --check --quiet .
# mypy on the library (the package maps to this folder, so it is checked through a link named aviary)
link=$(mktemp -d)
ln -s "$PWD" "$link/aviary"
(cd "$link" && mypy --config-file "$OLDPWD/pyproject.toml" aviary)
rm -rf "$link"
python3 -m pytest -q "$@"
