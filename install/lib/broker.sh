# shellcheck shell=bash
# The broker's system user, its directories, and a broker started detached where systemd is absent
# (CI, containers). Stops only the broker this shell started.
#
#   . install/lib/broker.sh
#   broker_ensure_user || die "..."                          # as root; idempotent
#   on_exit broker_stop_if_started
#   broker_start /path/to/sandshim SOCKET STATE_DIR [broker flags...] || die "..."
#
# The broker runs as the system user `sandshim` (member of the engine's group `docker`, not root),
# with a fixed environment: HOME and the audit database in STATE_DIR, no variable of the caller's.

[[ -n ${_sandshim_broker_loaded:-} ]] && return 0
_sandshim_broker_loaded=1

# shellcheck source-path=SCRIPTDIR source=engine.sh
. "$(dirname "${BASH_SOURCE[0]}")/engine.sh"

readonly k_broker_user=sandshim
readonly k_broker_home=/var/lib/sandshim
readonly k_broker_socket_dir=/run/sandshim
# The installed broker's policy beyond the audit (setup's system file; the bench's broker copies
# it): only the administrator's file decides the mode, so no environment variable of a user's
# reaches the engine directly; one warm container per image, workspace and policy, started
# through sandshim's launcher (pool.* in policy/policy.cpp); bash in the wrap image, which the
# hooks' wrap mode asks for (a user may name the floor's own image, never another).
readonly k_broker_default_policy=$'[broker]\nmode = required\n[pool]\nsize = 1\nstart = launcher\n[images]\nbash = sandshim/wrap:bookworm\n'

_broker_pid="" # the broker this shell started

# Creates the system user `sandshim` (home /var/lib/sandshim, no login) in the engine's group.
broker_ensure_user() {
    is_root || { say "creating the broker's user needs root"; return 1; }
    engine_ensure_docker_group || return 1
    if ! id -u "$k_broker_user" >/dev/null 2>&1; then
        useradd --system --user-group --home-dir "$k_broker_home" --shell /usr/sbin/nologin \
            "$k_broker_user" || { say "useradd $k_broker_user failed"; return 1; }
        say "created the system user $k_broker_user"
    fi
    id -nG "$k_broker_user" | tr ' ' '\n' | grep -qx docker ||
        usermod -aG docker "$k_broker_user" || { say "cannot add $k_broker_user to docker"; return 1; }
    broker_own_dir "$k_broker_home" 0700
    broker_own_dir "$k_broker_socket_dir" 0755
}

# A directory owned by the broker's user with that mode (its audit, its socket).
broker_own_dir() { # DIR MODE
    install -d -o "$k_broker_user" -g "$k_broker_user" -m "$2" "$1"
}

# The programs a broker's sandshim runs beside it (found beside its binary or in
# ../libexec/sandshim): the workspace gate and the warm containers' launcher, which the broker
# mounts into containers, the allowlist's forwarder, and the TLS relay to remote engines.
readonly k_broker_companions=(sandshim-gate sandshim-launch sandshim-forward sandshim-tls)

# Installs the companions built beside BUILT_BIN root-owned into DIR.
broker_install_companions() { # BUILT_BIN DIR
    local built program
    built="$(dirname "$(readlink -f "$1")")"
    for program in "${k_broker_companions[@]}"; do
        [[ -x $built/$program ]] || { say "$built/$program is missing; build the sandshim target"; return 1; }
    done
    install -d -m 0755 "$2"
    for program in "${k_broker_companions[@]}"; do
        install -m 0755 "$built/$program" "$2/$program"
    done
}

# Writes the broker's system config FILE (root:root 0644 in a root-owned directory, as the
# policy's ownership check requires): the audit database and the chain's key in STATE_DIR (the key
# in a directory only the broker's user may enter), the anchor log in ANCHOR_DIR (root-owned; the
# file root:sandshim 0660, append-only where the file system supports it), then TAIL text.
broker_write_system_config() { # FILE STATE_DIR ANCHOR_DIR [TAIL]
    local file=$1 state=$2 anchors=$3 tail_text=${4:-}
    broker_own_dir "$state" 0700
    broker_own_dir "$state/keys" 0700
    install -d -o root -g root -m 0755 "$(dirname "$file")" "$anchors"
    [[ -e $anchors/anchor.log ]] || install -o root -g "$k_broker_user" -m 0660 /dev/null "$anchors/anchor.log"
    chattr +a "$anchors/anchor.log" 2>/dev/null || true # not every file system has the attribute
    printf '[audit]\ndb = %s\nkey_file = %s\nanchor_file = %s\n%s' "$state/audit.db" \
        "$state/keys/chain.key" "$anchors/anchor.log" "$tail_text" >"$file.tmp"
    chown root:root "$file.tmp"
    chmod 0644 "$file.tmp"
    mv "$file.tmp" "$file"
}

# Starts `sandshim broker` detached as the broker's user, log in STATE_DIR/broker.log, and waits
# until its socket answers; 1 with the log's tail when it does not.
broker_start() { # BIN SOCKET STATE_DIR [FLAGS...]
    local bin=$1 socket=$2 state=$3 i
    shift 3
    broker_own_dir "$state" 0700
    broker_own_dir "$(dirname "$socket")" 0755
    setsid setpriv --reuid="$k_broker_user" --regid="$k_broker_user" --init-groups \
        env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME="$state" \
        XDG_CONFIG_HOME="$state/config" XDG_STATE_HOME="$state/state" XDG_CACHE_HOME="$state/cache" \
        XDG_DATA_HOME="$state/data" SANDSHIM_AUDIT_DB="$state/audit.db" SANDSHIM_BROKER=off \
        SANDSHIM_LOG="${SANDSHIM_BROKER_LOG:-info}" \
        "$bin" broker --socket "$socket" "$@" >>"$state/broker.log" 2>&1 </dev/null &
    _broker_pid=$!
    for ((i = 0; i < 100; i++)); do
        [[ -S $socket ]] && return 0
        kill -0 "$_broker_pid" 2>/dev/null || break
        sleep 0.05
    done
    say "the broker did not start; its log ($state/broker.log):"
    tail -n 5 "$state/broker.log" >&2
    return 1
}

# The pid of the broker this shell started (empty when none).
broker_started_pid() { printf '%s\n' "$_broker_pid"; }

# Stops the broker this shell started; a no-op otherwise.
broker_stop_if_started() {
    [[ -n $_broker_pid ]] || return 0
    kill "$_broker_pid" 2>/dev/null || true # it may have died already (a test kills it)
    wait "$_broker_pid" 2>/dev/null || true
    _broker_pid=""
}
