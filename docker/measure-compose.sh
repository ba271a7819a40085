#!/usr/bin/env bash
# The N-node emulation in containers, measured (docker/README.md, docs/measurements.md):
#   bash docker/measure-compose.sh [NODES] [-- REPLAY FLAGS]     (default 100 nodes, 2 schedulers)
#   PACK=10 bash docker/measure-compose.sh 100                   (10 node monitors per container)
#   TRANSPORT=tcp bash docker/measure-compose.sh 100             (the plain-TCP wire: no ZeroMQ loaded)
#   FLOOR=1 bash docker/measure-compose.sh 100                   (the engine's own floor: NODES containers
#                                                                 of busybox sleep, no Python, up and down)
# writes the testbed, starts it with `aviary compose up` (docker-compose where installed; AVIARY_SDK=1:
# the docker SDK), prints the start time, the containers' memory (the sum of `docker stats`, and the
# host's used memory before and after), replays against it and brings it down. Needs the engine
# (scripts/setup-docker.sh) and the aviary package.
set -euo pipefail
NODES=${1:-100}
shift || true
[ "${1:-}" = -- ] && shift
REPLAY=("$@")
[ ${#REPLAY[@]} -gt 0 ] || REPLAY=(--jobs 200 --load 0.8 --quiet)
DIR=${DIR:-/tmp/aviary-compose-$NODES}
UP_FLAGS=()
[ "${AVIARY_SDK:-0}" = 1 ] && UP_FLAGS=(--sdk)

used() { free -b | awk '/^Mem:/ { print $3 }'; }
mib() { awk -v b="$1" 'BEGIN { printf "%.0f MiB", b / 1048576 }'; }

if [ "${FLOOR:-0}" = 1 ]; then # what docker-compose and the engine take for NODES do-nothing containers
    image=$("${PYTHON:-python3}" -m aviary.worker.dockertask) # the task image: FROM scratch + busybox
    mkdir -p "$DIR-floor"
    { echo "version: '2.4'"; echo "services:"
      for i in $(seq 0 $((NODES - 1))); do
          printf "  n%d:\n    image: %s\n    entrypoint: [/bin/busybox, sleep, '3600']\n    network_mode: host\n" "$i" "$image"
      done; } > "$DIR-floor/docker-compose.yml"
    start=$(date +%s.%N)
    docker-compose -f "$DIR-floor/docker-compose.yml" -p aviary-floor up -d > /dev/null 2>&1
    echo "floor: $(docker ps -q --filter name=aviary-floor | wc -l) busybox containers up in $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
    docker-compose -f "$DIR-floor/docker-compose.yml" -p aviary-floor down -t 0 > /dev/null 2>&1
    exit 0
fi
aviary compose down "$DIR" > /dev/null 2>&1 || true
aviary compose write "$DIR" --nodes "$NODES" --schedulers 2 --time-scale 40000 --nodes-per-process "${PACK:-1}" \
    --transport "${TRANSPORT:-zmq}"
before=$(used)
start=$(date +%s.%N)
aviary compose up "$DIR" "${UP_FLAGS[@]}"
echo "up: $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s (command to every process listening)"
sleep 5 # the processes settle
after=$(used)
mapfile -t ids < <(docker ps -q --filter "label=aviary.testbed=$DIR")
stats=$(docker stats --no-stream --format '{{.MemUsage}}' "${ids[@]}" | awk '
    { split($1, a, /[A-Za-z]+/); v = a[1]; u = $1; sub(/^[0-9.]+/, "", u)
      f = (u == "KiB" || u == "kB") ? 1024 : (u == "MiB" || u == "MB") ? 1048576 : (u == "GiB" || u == "GB") ? 1073741824 : 1
      s += v * f; n++; if (v * f > m) m = v * f }
    END { printf "%.0f %d %.0f", s, n, m }')
read -r sum count max <<< "$stats"
echo "memory: $count containers, docker stats sum $(mib "$sum") (largest $(mib "$max"), $(mib $((sum / NODES))) per node monitor); host used $(awk -v b=$((after - before)) 'BEGIN { printf "%+.0f MiB", b / 1048576 }')"
start=$(date +%s.%N)
status=0
aviary replay --connect "$DIR/cluster.toml" "${REPLAY[@]}" --out "$DIR/run" --force || status=$?
echo "replay: exit $status in $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
"${PYTHON:-python3}" -c 'import json, sys; s = json.load(open(sys.argv[1])); print("replay:", s["finished"], "of", s["jobs"], "jobs finished, tasks", s["counters"]["tasks_finished"], "of", s["tasks"])' "$DIR/run/summary.json"
start=$(date +%s.%N)
aviary compose down "$DIR"
echo "down: $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s; left: $(docker ps -aq --filter "label=aviary.testbed=$DIR" | wc -l) containers"
exit $status
