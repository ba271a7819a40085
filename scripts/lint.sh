#!/usr/bin/env bash
# The lint step of scripts/test.sh: ruff check, ruff format --check, the import contracts and mypy,
# with the tools of .venv (scripts/setup.sh). Exits non-zero, and so fails the test command, when any
# of the four fails (each is a command of its own under set -e; tests/test_setup_scripts.py checks
# that each failure fails scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d .venv/bin ] && export PATH="$PWD/.venv/bin:$PATH"

ruff check --quiet .          # the code stays ruff clean
ruff format --check --quiet . # and formatted
# the import contracts (pyproject.toml's [tool.importlinter]: layers, no import cycle, pure cores), quiet when kept
if ! contracts=$(lint-imports --no-cache 2>&1); then echo "$contracts" >&2 && exit 1; fi
# mypy on the library (the package maps to this folder, so it is checked through a link named aviary)
link=$(mktemp -d)
trap 'rm -rf "$link"' EXIT
ln -s "$PWD" "$link/aviary"
config=$PWD/pyproject.toml
cd "$link"
mypy --config-file "$config" aviary
