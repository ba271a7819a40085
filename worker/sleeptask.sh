# The docker executor's task: a sleep that counts only its own running time (DESIGN §6).
#
#   busybox sh /sleeptask.sh DURATION_US ORIGIN_US TICK_US SLACK_US [GO]
#
# Runs inside a FROM-scratch container that holds nothing but Debian's static busybox (see
# aviary/worker/dockertask.py). Times are integers in microseconds; ORIGIN_US and the times in the
# messages below are on the host's CLOCK_REALTIME, which containers share ($EPOCHREALTIME here). It
# prints "done ..." and exits 0 once it has run DURATION_US; exit code 2 means bad arguments, 3 that
# its standard input closed (the executor that attached to it is gone). With GO=1 it first reads
# messages, blocking, up to a line "g": the executor writes the suspensions requested while the
# container was being created, then "g", before it starts the container, so that the task knows of
# them whatever the delay with which the engine passes its input on.
#
# Running time = wall time since ORIGIN_US (the launch: the container's start-up counts, as the slot
# was busy during it) minus the suspensions, which it learns of in two ways:
#
# 1. Messages on standard input, written by the executor when it is asked to suspend or resume the
#    task, before it pauses or unpauses the container: "s T" (suspended at T) and "r T" (resumed at
#    T). The task subtracts exactly [s T, r T], whenever the messages reach it and however long the
#    engine takes to apply the freeze and the thaw (15-30 ms, jittery): a suspension requested for
#    X s delays the finish by X s to the rounding of its ticks (~1 ms).
# 2. A freeze it was not told of (a plain `docker pause`: the cgroup freezer sends no signal), seen
#    as a tick that lasted longer than planned + SLACK_US, not counting the time the task spent
#    runnable but waiting for a CPU (/proc/self/schedstat: a busy host delays ticks too, but does not
#    freeze them). It was frozen at an unknown moment of that tick (uniformly, so half a tick on
#    average), and a tick whose deadline passed during the freeze ends right after the thaw; so such
#    a tick counts as half a planned tick (plus the wait for a CPU), and one suspension shifts the
#    finish by at most +-TICK_US/2 around "exactly the suspension later". A freeze shorter than
#    SLACK_US goes unnoticed (it counts as running time).
#
# 3. With a share of a core (the executor's ``suspended_share``, as the Kairos testbed's ``--cpus 0.1``), a
#    suspension is "q T PPM" instead of "s T": the executor lowers the container's CPU quota instead of
#    pausing it, and the task goes on counting its ticks at PPM millionths of their time from T until
#    "r T" (a sleep is not slowed by a CPU quota, so the task itself applies the share).
#
# Otherwise each tick counts the time it really took (oversleep, loop overhead and start-up
# included, so an unsuspended task finishes after exactly DURATION_US). A tick is `read -t` on
# standard input: a sleep without a child process that a message cuts short. Cost per tick: one
# poll(), two small reads, some shell arithmetic: 0.1-0.2 ms of CPU on a busy host, so ~2 % of a core
# with the executor's 10 ms ticks.

d=$1 origin=$2 tick=$3 slack=$4 go=${5:-0}
for v in "$d" "$origin" "$tick" "$slack" "$go"; do
  case $v in
    '' | *[!0-9]*)
      echo "sleeptask: usage: DURATION_US ORIGIN_US TICK_US SLACK_US [GO] (integers), got: $*" >&2
      exit 2
      ;;
  esac
done
[ "$tick" -ge 1000 ] || tick=1000     # `read -t` has millisecond resolution,
[ "$tick" -le 999000 ] || tick=999000 # and a tick is written as 0.NNN seconds

now=${EPOCHREALTIME/./}
done=$((now - origin))
[ "$done" -ge 0 ] || done=0
last=$now
sched=/proc/self/schedstat # its 2nd field: ns spent runnable but waiting for a CPU (/proc/self is us:
[ -r $sched ] || sched=/dev/null # `read` is a builtin); without it, starved=0
waited_last=0
read -r _ waited_last _ < $sched
ticks=0 frozen=0 suspensions=0 quick=0
rate=1000000 # millionths of its wall time that count as running: all, or a share while throttled
while :; do
  cmd='' at=''
  if [ "$go" = 1 ]; then # messages only, up to "g" (its start-up goes on meanwhile)
    read -r cmd at || exit 3
    [ "$cmd" = g ] && go=0
    ms=0
  elif [ "$done" -ge "$d" ]; then
    read -t 0 || break                         # finished, unless a message is waiting
    read -r cmd at || [ -n "$cmd" ] || break # (its input closed: finished all the same)
    ms=0
  else
    ms=$((((d - done) * 1000000 / rate + 999) / 1000))
    [ $((ms * 1000)) -le "$tick" ] || ms=$((tick / 1000))
    if [ "$ms" -lt 10 ]; then
      t=0.00$ms
    elif [ "$ms" -lt 100 ]; then
      t=0.0$ms
    else
      t=0.$ms
    fi
    # One byte with a timeout, then the rest of the line without: `read -t` gives up in the middle of
    # a line that arrives just as it times out, and drops what it has read of it.
    read -r -n 1 -t "$t" cmd && [ -n "$cmd" ] && read -r at
  fi
  now=${EPOCHREALTIME/./}
  ran=$((now - last))
  waited=0
  read -r _ waited _ < $sched
  starved=$(((waited - waited_last) / 1000))
  waited_last=$waited
  ticks=$((ticks + 1))
  case $cmd$at in
    s[0-9]*) # suspended at $at: it ran up to then (less than counted already, if it came late)
      done=$((done + at - last))
      suspensions=$((suspensions + 1))
      while :; do
        cmd='' at=''
        read -r cmd at || exit 3
        case $cmd$at in r[0-9]*) break ;; g) go=0 ;; esac
      done
      now=${EPOCHREALTIME/./}
      done=$((done + now - at)) # resumed at $at: it has run since then
      ;;
    q[0-9]*) # throttled at ${at%% *} to ${at##* } millionths: it ran fully up to then, slowly since
      t_at=${at%% *} rate=${at##* }
      done=$((done + t_at - last + (now - t_at) * rate / 1000000))
      suspensions=$((suspensions + 1))
      ;;
    r[0-9]*) # resumed at $at after a throttle: slowly up to then, fully since
      if [ "$rate" -lt 1000000 ]; then
        done=$((done + (at - last) * rate / 1000000 + now - at))
        rate=1000000
      elif [ "$ran" -gt 0 ]; then # "r" while running: the tick counts as it ran
        done=$((done + ran))
      fi
      ;;
    '')
      if [ "$((ran - starved))" -gt $((ms * 1000 + slack)) ]; then # frozen without being told
        done=$((done + (ms * 500 + starved) * rate / 1000000))
        frozen=$((frozen + 1))
      else
        if [ "$ran" -lt $((ms * 500)) ]; then # `read` failed at once: 3 times in a row = input closed
          quick=$((quick + 1))
          [ "$quick" -lt 3 ] || exit 3
        else
          quick=0
        fi
        [ "$ran" -gt 0 ] && done=$((done + ran * rate / 1000000))
      fi
      ;;
    *) # an unknown message, or "r" while running: the tick counts as it ran
      [ "$ran" -gt 0 ] && done=$((done + ran))
      ;;
  esac
  last=$now
done
echo "done ticks=$ticks frozen=$frozen suspensions=$suspensions"
