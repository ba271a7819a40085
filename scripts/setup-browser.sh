#!/usr/bin/env bash
# Installs Debian's chromium and chromium-driver with apt-get when missing (~30 s, ~100 MB), for the browser
# tests (tests/test_browser.py: Selenium drives a headless Chromium over `aviary report` pages). Idempotent
# and instant when both are there. It never fails the caller: when it cannot install them (not root, no
# apt-get, AVIARY_NO_BROWSER=1, ...) it says why, loudly, and exits 0; the browser tests then skip with
# that reason, or fail where AVIARY_REQUIRE_DOCKER=1 (as in CI: the system tests must run there).
# Called by scripts/test.sh after scripts/setup.sh.
set -uo pipefail

say() { echo "setup-browser: $*" >&2; }
give_up() {
    say "WARNING: $* -- the browser tests will skip"
    exit 0
}

[ "${AVIARY_NO_BROWSER:-0}" = 1 ] && give_up "AVIARY_NO_BROWSER=1"
need=()
command -v chromium > /dev/null || need+=(chromium)
command -v chromedriver > /dev/null || need+=(chromium-driver)
[ ${#need[@]} = 0 ] && exit 0
[ "$(id -u)" = 0 ] || give_up "not root: cannot install ${need[*]}"
command -v apt-get > /dev/null || give_up "no apt-get: install ${need[*]} yourself"
if command -v flock > /dev/null; then # one apt-get at a time (scripts/setup-docker.sh uses it too)
    exec 9> /tmp/aviary-setup-docker.lock
    flock 9
fi
say "installing ${need[*]} with apt-get"
started=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}"; } > /tmp/aviary-apt-browser.log 2>&1; then
    tail -20 /tmp/aviary-apt-browser.log >&2
    give_up "apt-get install ${need[*]} failed (log: /tmp/aviary-apt-browser.log)"
fi
say "installed ${need[*]} in $(($(date +%s) - started)) s"
