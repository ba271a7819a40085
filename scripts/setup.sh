#!/usr/bin/env bash
# Installs Aviary and what its tests need on a fresh machine (Debian with CPython 3.11+).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -e '.[dev]'
