# hostile: resources | the classic shell fork bomb; the peak of the kernel's count of the sandbox's processes (gVisor's: its /proc)
# expect: exit=73 status=error
# control: policy sandbox.pids=256 sandbox.cpus=2 exit=42
# gap: runsc exit=73/2 status=error | gVisor (Debian's runsc, 2022, ptrace platform) keeps the bomb at 64 processes, but its host threads can grow while the bomb churns at the cap (3,000 in 12 s seen, none past 1,280 in 120 s another time), and at the host's backstop (16 x pids + 256) its kernel dies and the run ends with exit 2: which comes first, the probe's last read or that, is a race
# shellcheck shell=sh disable=SC1091 # _probe.sh sources the harness's params
. ./_probe.sh
# The count is the pids cgroup's (v1 or v2), read with builtins only: no fork is left to spare, and
# a glob of /proc is no snapshot under this churn (dead and new pids are both listed). gVisor
# (runsc) has no pids cgroup inside: there the count is its /proc's pid entries (gVisor lists its
# own task table, which sandbox.pids caps as RLIMIT_NPROC).
count=""
for file in /sys/fs/cgroup/pids/pids.current /sys/fs/cgroup/pids.current; do
    [ -r "$file" ] && count=$file && break
done
[ -n "$count" ] || [ -d /proc/self ] || { echo "neither pids.current nor /proc to read"; exit 3; }
current() {
    if [ -n "$count" ]; then
        read -r now <"$count"
    else
        set -- /proc/[0-9]*
        now=$#
    fi
}
# shellcheck disable=SC2264 # a fork bomb, on purpose
bomb() { bomb | bomb & }
{ bomb; } 2>/dev/null & # one fork: the shell exits if a fork of its own fails
# Whole seconds since boot, read with builtins only (no fork to spare).
uptime_s() {
    read -r up _ </proc/uptime
    up=${up%.*}
}
most=0
rounds=0
uptime_s
until=$((up + 5))
# Past the cap, stop at once: 256 bombs leave this loop little of its CPU. The control has two
# CPUs (cpus = 1 pins a run to one CPU, where the bombs and this loop take turns).
# Enough reads, and at least 5 s, for the control's bombs to pass 64 even on a loaded machine:
# 5,000 reads alone once ended with the bombs still at 9 (CI, every tier running).
while [ "$rounds" -lt 5000 ] || [ "$up" -lt "$until" ]; do
    current
    [ "$now" -gt "$most" ] && most=$now
    [ "$most" -gt 64 ] && escaped "$most processes at once"
    rounds=$((rounds + 1))
    uptime_s
done
# The reader is one process among hundreds of busy bombs and may never be scheduled at the peak:
# starts the cgroup refused mean the count reached its pids.max, which is then the peak.
if [ -n "$count" ]; then
    events=${count%/*}/pids.events
    limit_file=${count%/*}/pids.max
    refused=0
    if [ -r "$events" ] && [ -r "$limit_file" ]; then
        while read -r key value; do [ "$key" = max ] && refused=$value; done <"$events"
        read -r limit <"$limit_file"
        [ "$refused" -gt 0 ] && [ "$limit" != max ] && [ "$limit" -gt "$most" ] && most=$limit
    fi
    [ "$most" -gt 64 ] && escaped "$most processes at once"
fi
blocked "at most $most processes at once"
