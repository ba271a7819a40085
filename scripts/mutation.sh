#!/usr/bin/env bash
# Mutation testing of the policy cores with mutmut (docs/mutation.md). Slow (~30 min on two cores for
# the multi-resource cores): NOT part of scripts/test.sh, and CI does not run it.
#
# mutmut names a mutant after its file's path (central/packing.py -> module central.packing) and copies
# the code to mutate into mutants/; the tests import aviary.central.packing, and the package is the
# repository root. So it runs in a staged copy (ignored by git, ruff and mypy): the package's Python
# files in a folder named aviary, the tests, and pyproject.toml, whose [tool.mutmut] section says what
# to mutate and which tests to run. Without --set, that section as it is (the multi-resource cores,
# Carbyne and DLWL against tests/test_packing.py, test_carbyne.py and test_dlwl.py), in build/mutation/.
# With `--set NAME`, only_mutate, the test selection and pytest_add_cli_args come from
# [tool.mutmut.sets.NAME], the files its `stage` key lists are staged too, and the run is in
# build/mutation-NAME/ (the results of different sets do not overwrite each other).
#
#   bash scripts/mutation.sh                          # every mutant of the multi-resource cores
#   bash scripts/mutation.sh 'aviary.central.drf.*'   # only these mutants (mutmut's name globs)
#   bash scripts/mutation.sh --set probe              # the probe-based cores: Hawk, Eagle, Kairos, ...
#   bash scripts/mutation.sh --set probe 'aviary.worker.stealing.*'
#
# MUTATION_TESTS="tests/a.py tests/b.py": run only these test files instead of the set's selection (with
# mutant names from an earlier run: which of its survivors new tests kill; a mutant killed once stays
# killed when tests are only added), e.g.
#   MUTATION_TESTS=tests/test_probe_cores.py bash scripts/mutation.sh --set probe $(cat survivors.txt)
# MUTATION_STAGE=build/NAME: the stage folder (default build/mutation or build/mutation-SET); one run at a
# time per folder (a lock file beside it).
# MUTMUT_CHILDREN: parallel test processes (default 2). Afterwards, in the stage folder:
# `mutmut show NAME` prints a mutant's diff, `mutmut results` lists the survivors, `mutmut browse`.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
stage=build/mutation
command -v mutmut >/dev/null || {
    echo "mutmut is missing: bash scripts/setup.sh, then PATH=\"\$PWD/.venv/bin:\$PATH\"" >&2
    exit 1
}
set_name=
if [ "${1:-}" = --set ]; then
    [ -n "${2:-}" ] || {
        echo "usage: bash scripts/mutation.sh [--set NAME] [MUTANT_GLOB...]" >&2
        exit 2
    }
    set_name=$2
    stage=build/mutation-$set_name
    shift 2
fi
stage=${MUTATION_STAGE:-$stage}
# One run per stage folder: a second one would delete the first one's mutants under it.
mkdir -p build
exec 9>"$stage.lock"
flock -n 9 || {
    echo "mutation.sh: a run in $stage is going on (MUTATION_STAGE=build/other to run beside it)" >&2
    exit 1
}

# The staged pyproject.toml: the [tool.mutmut] tables replaced by one with the chosen set's keys. Prints
# what to copy besides the package: "tests PATH" per test file of the selection, "stage PATH" per extra.
plan=$(mktemp -d)
trap 'rm -rf "$plan"' EXIT
python3 - "$set_name" pyproject.toml "$plan/pyproject.toml" >"$plan/copy" <<'PY'
import json
import os
import re
import sys
import tomllib

name, source, target = sys.argv[1:]
text = open(source, encoding="utf-8").read()
section = tomllib.loads(text)["tool"]["mutmut"]
sets = section.pop("sets", {})
extra = []
if name:
    if name not in sets:
        sys.exit(f"mutation.sh: no set '{name}' in pyproject.toml (sets: {', '.join(sorted(sets)) or 'none'})")
    chosen = dict(sets[name])
    extra = chosen.pop("stage", [])
    section.update(chosen)
if os.environ.get("MUTATION_TESTS"):  # only these tests (e.g. new ones, against the survivors of a run)
    section["pytest_add_cli_args_test_selection"] = os.environ["MUTATION_TESTS"].split()
lines, skip = [], False
for line in text.splitlines():
    if line.startswith("["):
        skip = re.match(r"\[tool\.mutmut[].]", line) is not None
    if not skip:
        lines.append(line)
lines += ["", "[tool.mutmut]", *(f"{k} = {json.dumps(v, ensure_ascii=False)}" for k, v in section.items())]
open(target, "w", encoding="utf-8").write("\n".join(lines) + "\n")
selection = section.get("pytest_add_cli_args_test_selection", [])
tests = sorted({arg.split("::")[0] for arg in selection if arg.startswith("tests/")})
print("\n".join([*(f"tests {t}" for t in tests), *(f"stage {p}" for p in extra)]))
PY

rm -rf "$stage"
mkdir -p "$stage/aviary" "$stage/tests"
# The package's Python files (every sub-package: the tests import the simulator and the frontend), and
# speedups.py: without it, `aviary` would import the repository's own through the editable install, whose
# finder loads the compiled modules' sources (or builds) from the repository, not the mutated copies.
for dir in __init__.py speedups.py common worker distributed central launch experiments; do
    find "$dir" -name '*.py' -not -path '*/__pycache__/*' -exec cp --parents {} "$stage/aviary/" \;
done
cp tests/conftest.py tests/helpers.py "$stage/tests/" # helpers: what the test files share
while read -r kind path; do
    case $kind in
        tests) cp "$path" "$stage/tests/" ;;
        stage) cp -r --parents "$path" "$stage/aviary/" ;;
    esac
done <"$plan/copy"
cp "$plan/pyproject.toml" "$stage/"

cd "$stage"
mutmut run --max-children "${MUTMUT_CHILDREN:-2}" "$@" || echo "mutmut run exited with $?" >&2

# The summary: counts per module, then every mutant that is not killed.
mutmut results --all true >results.txt
python3 - results.txt <<'EOF'
import collections
import re
import sys

counts = collections.defaultdict(collections.Counter)
others = []
for line in open(sys.argv[1]):
    name, sep, status = line.strip().rpartition(": ")
    if not sep:
        continue
    module = re.split(r"\.x[_ǁ]", name, maxsplit=1)[0]
    counts[module][status] += 1
    if status != "killed":
        others.append(f"{status:12} {name}")
columns = ["killed", "survived", "timeout", "no tests", "suspicious", "not checked", "skipped"]
print(f"\n{'module':28}" + "".join(f"{c:>12}" for c in columns) + f"{'total':>8}")
for module in sorted(counts):
    c = counts[module]
    print(f"{module:28}" + "".join(f"{c[k]:12d}" for k in columns) + f"{sum(c.values()):8d}")
total = sum(counts.values(), collections.Counter())
print(f"{'all':28}" + "".join(f"{total[k]:12d}" for k in columns) + f"{sum(total.values()):8d}")
print("\nNot killed:")
print("\n".join(sorted(others)) or "(none)")
EOF
echo "Staged run in $root/$stage; 'cd $stage && mutmut show NAME' shows a mutant."
