#!/usr/bin/env bash
# Mutation testing of the multi-resource cores with mutmut (docs/mutation.md). Slow (~30 min on two
# cores): NOT part of scripts/test.sh, and CI does not run it.
#
# mutmut names a mutant after its file's path (central/packing.py -> module central.packing) and copies
# the code to mutate into mutants/; the tests import aviary.central.packing, and the package is the
# repository root. So it runs in a staged copy, build/mutation/ (ignored by git, ruff and mypy): the
# package's Python files in a folder named aviary, the tests, and pyproject.toml, whose [tool.mutmut]
# section says what to mutate (the eight cores) and which tests to run (tests/test_packing.py only).
#
#   bash scripts/mutation.sh                          # every mutant of the eight cores
#   bash scripts/mutation.sh 'aviary.central.drf.*'   # only these mutants (mutmut's name globs)
#
# MUTMUT_CHILDREN: parallel test processes (default 2). Afterwards, in build/mutation:
# `mutmut show NAME` prints a mutant's diff, `mutmut results` lists the survivors, `mutmut browse`.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
stage=build/mutation
command -v mutmut >/dev/null || {
    echo "mutmut is missing: bash scripts/setup.sh, then PATH=\"\$PWD/.venv/bin:\$PATH\"" >&2
    exit 1
}

rm -rf "$stage"
mkdir -p "$stage/aviary" "$stage/tests"
# The package's Python files (every sub-package: the tests import the simulator and the frontend).
for dir in __init__.py common worker distributed central launch experiments; do
    find "$dir" -name '*.py' -not -path '*/__pycache__/*' -exec cp --parents {} "$stage/aviary/" \;
done
cp tests/conftest.py tests/test_packing.py tests/test_carbyne.py tests/test_dlwl.py "$stage/tests/"
cp pyproject.toml "$stage/"

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
