#!/usr/bin/env bash
# Installs Aviary and what its tests need into the project's own environment, a venv at .venv/, with
# the versions locked in requirements.lock: nothing is installed into the system's Python (which may
# refuse it anyway: PEP 668, as Debian 12's does), and nothing needs activating afterwards
# (.venv/bin/aviary, .venv/bin/python; scripts/test.sh and scripts/lint.sh put .venv/bin first on PATH).
#
#   bash scripts/setup.sh                  # create or update .venv (~0.1 s when it is up to date)
#   bash scripts/setup.sh --update-lock    # re-resolve pyproject.toml's dependencies + [dev] into
#                                          # requirements.lock (newest releases), then update .venv
#
# The interpreter: $AVIARY_PYTHON if set; else the system's /usr/bin/python3 when it is 3.11 or newer
# (on Debian, python3-venv is installed with apt-get when missing and we are root), so that a fresh
# clone, CI included, goes the PEP-668 way; else python3 on PATH (3.11 or newer). An existing .venv
# is kept while its python runs (rm -rf .venv to start again with another interpreter).
# Steps: python -m venv .venv; pip install -r requirements.lock (exact pins, setuptools included);
# pip install --no-deps --no-build-isolation -e . (the package itself, editable, with the locked
# setuptools), then the example plug-in examples/p2c the same way. A stamp in .venv (hash of the lock,
# pyproject.toml, the example's and the interpreter) skips the pip
# steps when nothing changed. Last, scripts/build_speedups.py compiles the simulator's hot cores with
# mypyc (~30-60 s on a fresh clone; skipped when up to date, or with AVIARY_PURE_PYTHON=1; a failure
# leaves the pure-Python path in use; speedups.py); then the package's bytecode (compileall).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv=$root/.venv
lock=$root/requirements.lock
export PIP_DISABLE_PIP_VERSION_CHECK=1

say() { echo "setup: $*" >&2; }
die() {
    say "ERROR: $*"
    exit 1
}

update_lock=0
case "${1:-}" in
    --update-lock) update_lock=1 ;;
    "") ;;
    *) die "unknown argument '$1' (usage: bash scripts/setup.sh [--update-lock])" ;;
esac

recent() { # the interpreter $1 is CPython 3.11 or newer
    "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' > /dev/null 2>&1
}
has_venv() { # ... and can make a venv with pip in it (Debian ships ensurepip in python3-venv)
    "$1" -c 'import venv, ensurepip' > /dev/null 2>&1
}

choose_python() {
    if [ -n "${AVIARY_PYTHON:-}" ]; then
        recent "$AVIARY_PYTHON" || die "AVIARY_PYTHON=$AVIARY_PYTHON is not a Python 3.11 or newer"
        has_venv "$AVIARY_PYTHON" || die "AVIARY_PYTHON=$AVIARY_PYTHON has no venv/ensurepip module"
        echo "$AVIARY_PYTHON"
        return
    fi
    if [ -x /usr/bin/python3 ] && recent /usr/bin/python3; then
        if ! has_venv /usr/bin/python3 && [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
            say "installing python3-venv with apt-get (the system python has no venv module)"
            export DEBIAN_FRONTEND=noninteractive
            { apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-venv; } \
                > /tmp/aviary-apt-venv.log 2>&1 || say "apt-get install python3-venv failed (/tmp/aviary-apt-venv.log)"
        fi
        if has_venv /usr/bin/python3; then
            echo /usr/bin/python3
            return
        fi
        say "/usr/bin/python3 cannot make a venv (python3-venv missing): trying python3 on PATH"
    fi
    local py
    py=$(command -v python3) || die "no python3 found: install Python 3.11 or newer"
    recent "$py" || die "$py is $("$py" -V 2>&1): Aviary needs Python 3.11 or newer (or set AVIARY_PYTHON)"
    has_venv "$py" || die "$py cannot make a venv: install its venv module (Debian: apt-get install python3-venv)"
    echo "$py"
}

# One set-up of this .venv at a time (two test runs may start together).
if command -v flock > /dev/null; then
    exec 8> "/tmp/aviary-setup-$(echo "$root" | sha256sum | cut -c1-12).lock"
    flock 8
fi

if [ -x "$venv/bin/python" ] && recent "$venv/bin/python"; then
    :
else
    python=$(choose_python)
    [ -e "$venv" ] && say "removing $venv (its python does not run)" && rm -rf "$venv"
    say "creating $venv with $python ($("$python" -V 2>&1))"
    "$python" -m venv "$venv"
fi
py=$venv/bin/python

if [ $update_lock = 1 ]; then
    # Resolve in a scratch venv made from the same interpreter, so that the lock holds exactly what
    # pyproject.toml's dependencies and [dev] extra pull in, plus the build backend.
    scratch=$(mktemp -d)
    trap 'rm -rf "$scratch"' EXIT
    base=$("$py" -c 'import sys; print(sys._base_executable)')
    say "resolving the dependencies in a scratch venv ($base)"
    "$base" -m venv "$scratch/venv"
    "$scratch/venv/bin/python" -m pip install -qq --upgrade pip
    "$py" - > "$scratch/requirements.in" << 'EOF'
import tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
print("\n".join([*project["dependencies"], *project["optional-dependencies"]["dev"], "setuptools>=68"]))
EOF
    "$scratch/venv/bin/python" -m pip install -qq -r "$scratch/requirements.in"
    {
        echo "# The exact versions of Aviary's dependencies and development tools (pyproject.toml's"
        echo "# dependencies + the dev extra + setuptools, the build backend), installed by scripts/setup.sh into"
        echo "# .venv. Regenerate with: bash scripts/setup.sh --update-lock"
        echo "# Resolved with $("$scratch/venv/bin/python" -V) on $(uname -sm)."
        "$scratch/venv/bin/python" -m pip freeze --all --exclude aviary --exclude pip --exclude wheel
    } > "$lock.new"
    mv "$lock.new" "$lock"
    say "wrote $lock ($(grep -vc '^#' "$lock") packages)"
fi

[ -f "$lock" ] || die "$lock is missing (bash scripts/setup.sh --update-lock makes it)"
stamp=$venv/.aviary-setup-stamp
# The compiled build of the simulator's hot cores (speedups.py): mypyc, from the locked mypy, with gcc
# and the Python headers; rebuilt when one of its sources changed (else ~0.1 s). A failed build is one
# line and the pure-Python sources are used; AVIARY_PURE_PYTHON=1 skips the build (and, at run time,
# ignores an existing one).
speedups() {
    if [ "${AVIARY_PURE_PYTHON:-0}" != 0 ]; then
        return 0
    fi
    "$py" "$root/scripts/build_speedups.py" \
        || say "the compiled build failed (log: build/speedups.log): Aviary runs on the pure-Python sources"
}

# The package's bytecode, written once here: where PYTHONDONTWRITEBYTECODE is set (as on CI machines) no
# import writes it, and every process (each node monitor, each command) would compile every module of the
# editable package from its source at its start, ~0.1 s each. A module edited later is compiled from its
# source again (the cache is checked against it), until the next set-up.
bytecode() {
    "$py" -m compileall -q -x '/(\.venv|\.git|build|mutants|tests)/' "$root" > /dev/null \
        || say "compileall failed: the package is compiled at each import instead"
}

want=$(cat "$lock" pyproject.toml examples/p2c/pyproject.toml <("$py" -VV) | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2> /dev/null)" = "$want" ] && [ -x "$venv/bin/aviary" ]; then
    speedups
    bytecode
    exit 0
fi
rm -f "$stamp"
started=$(date +%s)
say "installing requirements.lock and the project (editable) into .venv"
"$py" -m pip install -qq -r "$lock"
"$py" -m pip install -qq --no-deps --no-build-isolation -e "$root"
# The example plug-in (a policy outside the package, docs/plugins.md), installed as a user installs theirs.
"$py" -m pip install -qq --no-deps --no-build-isolation -e "$root/examples/p2c"
# pip check: the locked set is consistent with what pyproject.toml asks for.
"$py" -m pip check > /dev/null || {
    "$py" -m pip check >&2
    die "the installed packages do not satisfy pyproject.toml: bash scripts/setup.sh --update-lock"
}
echo "$want" > "$stamp"
speedups
bytecode
say "done in $(($(date +%s) - started)) s: run .venv/bin/aviary (or bash scripts/test.sh)"
