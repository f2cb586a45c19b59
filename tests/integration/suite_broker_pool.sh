#!/usr/bin/env bash
# The warm pool grows through the broker as it does in direct mode: back-to-back runs of a user
# NOT in the engine's group grow a broker's pool of 1 up to pool.max = 3 (every run warm, never
# past the cap), and `pool drain` as the broker's user removes the grown pool, pending starts
# included. suite_pool.sh proves the same in direct mode; this is the installed default's path.
# Needs root (users, the broker as `sandshim`). About 30 s.
# sandshim-test-engines: docker  # the launcher is docker's (pool.start = launcher)
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=broker_lib.sh
. "$SOURCE_DIR/tests/integration/broker_lib.sh"

broker_suite_setup sandshim-brokerpool-nd \
    $'[sandbox]\ntimeout = 20s\n[pool]\nsize = 1\nmax = 3\nidle_ttl = 2m\nshrink_after = 10m\nclaim_wait = 60s\nstart = launcher\n'
mkdir -p "$U/ws"
chown -R "$ND_USER:" "$U/ws"
start_warm_broker brokerpool

# Idle entries plus starts pending in the broker's pools, from the pools' own state.
pool_state_count() {
    find "$POOL" -mindepth 2 -maxdepth 2 -type f \( -regex '.*/[0-9a-f]+$' -o -name '.starting-*' \) \
        -not -path '*/claimed/*' 2>/dev/null | wc -l
}
idle_count() {
    find "$POOL" -mindepth 2 -maxdepth 2 -type f -regex '.*/[0-9a-f]+$' -not -path '*/claimed/*' 2>/dev/null | wc -l
}
# `sandshim pool drain` as the broker's user, in the broker's own state (how an operator drains
# the installed broker's pools).
drain_as_broker() {
    setpriv --reuid=sandshim --regid=sandshim --init-groups env -i PATH=/usr/bin:/bin HOME="$BSTATE" \
        XDG_STATE_HOME="$BSTATE/state" XDG_CONFIG_HOME="$BSTATE/config" XDG_CACHE_HOME="$BSTATE/cache" \
        SANDSHIM_BROKER=off "$T/bin/sandshim" pool drain
}

check "control: a first run through the broker is cold, and its refill leaves one idle container"
expect_exit 0 as_nd "$U/ws" sh -c 'true'
expect_equal false "$(broker_row "$(last_broker_run)" warm)" "warm of the first run"
has_idle() { (($(idle_count) >= 1)); }
wait_until 60 "an idle warm container after the first run's refill" has_idle

check "growth: 12 back-to-back runs of a user outside the docker group grow the pool to pool.max = 3, every run warm"
counts=()
warm_runs=0
for ((i = 0; i < 12; i++)); do
    expect_exit 0 as_nd "$U/ws" sh -c 'true'
    [[ $(broker_row "$(last_broker_run)" warm) == true ]] && warm_runs=$((warm_runs + 1))
    counts+=("$(pool_state_count)")
done
expect_equal 12 "$warm_runs" "warm runs of 12 back to back"
peak=0
for count in "${counts[@]}"; do
    ((count <= 3)) || fail "the broker's pool held $count idle or starting containers, over pool.max = 3: ${counts[*]}"
    ((count > peak)) && peak=$count
done
((peak >= 2)) || fail "the broker's pool never grew past pool.size = 1: ${counts[*]}"
say "12 back-to-back runs through the broker, $warm_runs warm; idle + starting after each: ${counts[*]}"

check "growth: pool drain as the broker's user removes the grown pool, pending starts included"
expect_exit 0 as_nd "$U/ws" sh -c 'true'
drain_as_broker >"$T/drain.out" 2>&1 || fail "pool drain failed: $(cat "$T/drain.out")"
expect_contains "removed" "$T/drain.out"
pool_gone() { [[ -z $(broker_pool_containers) ]]; }
wait_until 30 "no container of the broker's pool after the drain" pool_gone
expect_equal 0 "$(idle_count)" "idle entries after the drain"

suite_done
