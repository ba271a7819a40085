#!/usr/bin/env bash
# Makes a docker engine answer on this machine, for the docker executor and its tests (DESIGN §6):
#  1. installs Debian's docker.io, busybox-static, iproute2 (`ip netns`, for the network-namespace
#     tests), openssh-server (an sshd per namespace host, for the test of `aviary up --cluster`) and
#     docker-compose (1.29, for `aviary compose up` and its test; optional: where it cannot be
#     installed, a warning) with apt-get when missing (~15 s);
#  2. mounts the cgroup hierarchies if nothing is mounted on /sys/fs/cgroup (the freezer behind
#     `docker pause` is one of them);
#  3. when no engine answers, starts `dockerd --bridge=none --iptables=false` in the background, as root,
#     logging to $AVIARY_DOCKERD_LOG (default /var/log/aviary-dockerd.log), with the overlay2 storage
#     driver, or vfs where overlay2 does not work (a root file system on overlayfs, say; the list of
#     drivers to try is $AVIARY_DOCKER_STORAGE_DRIVERS);
#  4. builds the sleep-task image (FROM scratch + busybox, nothing pulled) and runs one task in it.
# Idempotent and quick (~1 s) when all that is done already. It never fails the caller: when docker
# cannot run here (not root, no apt-get, AVIARY_NO_DOCKER=1, ...) it says why, loudly, and exits 0;
# the docker tests then skip with that reason, or fail where AVIARY_REQUIRE_DOCKER=1 (as in CI).
# Called by scripts/test.sh after scripts/setup.sh (it needs the aviary package installed).
set -uo pipefail
cd "$(dirname "$0")/.."

LOG=${AVIARY_DOCKERD_LOG:-/var/log/aviary-dockerd.log}
PYTHON=${PYTHON:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}
export DEBIAN_FRONTEND=noninteractive

say() { echo "setup-docker: $*" >&2; }
give_up() {
    say "WARNING: $* -- the docker executor cannot run on this machine and its tests will skip"
    exit 0
}

if [ "${AVIARY_NO_DOCKER:-0}" = 1 ]; then
    give_up "AVIARY_NO_DOCKER=1"
fi

# One setup at a time (two test runs may start together).
if command -v flock > /dev/null; then
    exec 9> /tmp/aviary-setup-docker.lock
    flock 9
fi

engine_answers() {
    "$PYTHON" - << 'EOF' > /dev/null 2>&1
import docker
docker.from_env(timeout=5).ping()
EOF
}

have_static_busybox() {
    "$PYTHON" -c 'from aviary.worker.dockertask import find_busybox; find_busybox()' > /dev/null 2>&1
}

# 1. Packages.
need=()
command -v dockerd > /dev/null || engine_answers || need+=(docker.io)
have_static_busybox || need+=(busybox-static)
command -v ip > /dev/null || need+=(iproute2)
[ -x /usr/sbin/sshd ] || need+=(openssh-server) # the sshd of the multi-host test's namespace hosts
# docker-compose is optional: without it `aviary compose up` uses the docker SDK (a warning, no give-up).
optional=()
command -v docker-compose > /dev/null || optional+=(docker-compose)
if [ ${#optional[@]} -gt 0 ] && [ ${#need[@]} = 0 ] \
    && { [ "$(id -u)" != 0 ] || ! command -v apt-get > /dev/null; }; then
    say "WARNING: cannot install docker-compose (not root, or no apt-get): aviary compose up uses the docker SDK"
    optional=()
fi
need+=("${optional[@]}")
if [ ${#need[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || give_up "not root: cannot install ${need[*]}"
    command -v apt-get > /dev/null || give_up "no apt-get: install ${need[*]} yourself"
    say "installing ${need[*]} with apt-get"
    started=$(date +%s)
    # No service may start during the installation: dockerd starts below, with our flags.
    guard=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
        guard=/usr/sbin/policy-rc.d
    fi
    apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}" > /tmp/aviary-apt.log 2>&1
    status=$?
    [ -n "$guard" ] && rm -f "$guard"
    if [ $status != 0 ]; then
        tail -20 /tmp/aviary-apt.log >&2
        if [ "${need[*]}" = "${optional[*]}" ]; then # docker-compose alone: the SDK does its work
            say "WARNING: apt-get install ${need[*]} failed (log: /tmp/aviary-apt.log): aviary compose up uses the docker SDK"
        else
            give_up "apt-get install ${need[*]} failed (log: /tmp/aviary-apt.log)"
        fi
    else
        say "installed ${need[*]} in $(($(date +%s) - started)) s"
    fi
fi

# 2. Control groups: docker needs them, `docker pause` needs the freezer (v1) or cgroup v2.
if ! mountpoint -q /sys/fs/cgroup && [ ! -e /sys/fs/cgroup/cgroup.controllers ] \
    && [ ! -d /sys/fs/cgroup/freezer ] && [ "$(id -u)" = 0 ]; then
    if grep -qw cgroup2 /proc/filesystems; then
        say "mounting cgroup2 on /sys/fs/cgroup"
        mount -t cgroup2 none /sys/fs/cgroup
    else
        say "mounting the cgroup v1 hierarchies under /sys/fs/cgroup"
        mount -t tmpfs -o uid=0,gid=0,mode=0755 cgroup /sys/fs/cgroup
        for ss in $(awk '!/^#/ { if ($4 == 1) print $1 }' /proc/cgroups); do
            mkdir -p "/sys/fs/cgroup/$ss"
            mountpoint -q "/sys/fs/cgroup/$ss" || mount -n -t cgroup -o "$ss" cgroup "/sys/fs/cgroup/$ss" || true
        done
    fi
fi
if [ ! -e /sys/fs/cgroup/cgroup.controllers ] && [ ! -e /sys/fs/cgroup/freezer/freezer.state ] \
    && [ ! -e /sys/fs/cgroup/freezer ]; then
    say "WARNING: no cgroup freezer: docker pause will fail here"
fi

# 3. The engine.
check_image() { # builds the task image if needed and runs one task in it
    "$PYTHON" -m aviary.worker.dockertask --check
}

if engine_answers; then
    check_image > /dev/null || give_up "the engine answers but cannot run the task image"
    exit 0
fi
[ "$(id -u)" = 0 ] || give_up "no docker engine answers and only root can start one"
command -v dockerd > /dev/null || give_up "dockerd is not installed"

# A dockerd that is still starting (or stuck) holds the pid file: wait for it, or give up on it.
if [ -s /var/run/docker.pid ] && kill -0 "$(cat /var/run/docker.pid)" 2> /dev/null; then
    say "a dockerd (pid $(cat /var/run/docker.pid)) is running: waiting for it to answer"
    for _ in $(seq 150); do
        engine_answers && break
        sleep 0.2
    done
    engine_answers || give_up "the running dockerd (pid $(cat /var/run/docker.pid)) does not answer; see its log"
    check_image > /dev/null || give_up "the engine answers but cannot run the task image"
    exit 0
fi

for driver in ${AVIARY_DOCKER_STORAGE_DRIVERS:-overlay2 vfs}; do
    say "starting dockerd --bridge=none --iptables=false --storage-driver=$driver (log: $LOG)"
    mkdir -p "$(dirname "$LOG")"
    echo "=== $(date -Is) aviary setup-docker: dockerd with $driver" >> "$LOG"
    setsid nohup dockerd --bridge=none --iptables=false --storage-driver="$driver" >> "$LOG" 2>&1 < /dev/null 9>&- &
    pid=$!
    for _ in $(seq 150); do # up to 30 s
        engine_answers && break
        kill -0 "$pid" 2> /dev/null || break
        sleep 0.2
    done
    if engine_answers && check_image > /dev/null; then
        say "dockerd (pid $pid) answers, storage driver $driver"
        exit 0
    fi
    say "dockerd with $driver does not work here; last lines of $LOG:"
    tail -5 "$LOG" >&2
    if kill "$pid" 2> /dev/null; then
        for _ in $(seq 100); do
            kill -0 "$pid" 2> /dev/null || break
            sleep 0.1
        done
    fi
done
give_up "dockerd did not start with overlay2 nor vfs (log: $LOG)"
