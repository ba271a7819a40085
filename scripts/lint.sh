#!/usr/bin/env bash
# The lint step of scripts/test.sh: ruff check, ruff format --check, the import contracts, mypy and the
# documentation site (mkdocs.yml), with the tools of .venv (scripts/setup.sh). Exits non-zero, and so
# fails the test command, when any of the five fails (each is a command of its own under set -e;
# tests/test_setup_scripts.py checks that each failure fails scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d .venv/bin ] && export PATH="$PWD/.venv/bin:$PATH"

ruff check --quiet .          # the code stays ruff clean
ruff format --check --quiet . # and formatted
# the import contracts (pyproject.toml's [tool.importlinter]: layers, no import cycle, pure cores), quiet when kept
if ! contracts=$(lint-imports --no-cache 2>&1); then echo "$contracts" >&2 && exit 1; fi
# mypy on the library, and the site's API reference (the package maps to this folder, so both read it
# through a link named aviary)
link=$(mktemp -d)
trap 'rm -rf "$link"' EXIT
ln -s "$PWD" "$link/aviary"
# the site, warnings as errors (a broken link or anchor, a page left out of the nav), quiet when it builds
if ! site=$(AVIARY_DOCS_PATH="$link" mkdocs build --strict --site-dir "$link/site" 2>&1); then
  echo "$site" >&2 && exit 1
fi
config=$PWD/pyproject.toml
cd "$link"
mypy --config-file "$config" aviary
