# shellcheck shell=bash
# A non-root user for integration tests that run the shim as an ordinary caller would.
#
#   . install/lib/testuser.sh
#   ensure_test_user sandshim-test || exit 77       # as root; idempotent; 1 with a message if it cannot
#   test_user_can_run sandshim-test "$SANDSHIM_BIN"  # e.g. a checkout under /root is out of its reach
#   run_as_test_user sandshim-test cmd args…         # with that user's HOME and groups (docker included)
# Defines say/warn/die (install/lib/common.sh): source this before defining your own.

[[ -n ${_sandshim_testuser_loaded:-} ]] && return 0
_sandshim_testuser_loaded=1

# shellcheck source-path=SCRIPTDIR source=engine.sh
. "$(dirname "${BASH_SOURCE[0]}")/engine.sh"

# Creates the user if missing and puts it in the docker group so it can reach the engine socket.
ensure_test_user() {
    local name=${1:?usage: ensure_test_user NAME}
    if [[ ! $name =~ ^[a-z_][a-z0-9_-]{0,30}$ ]]; then
        say "invalid user name '$name'"
        return 1
    fi
    if ! is_root; then
        say "creating the test user '$name' needs root; run the tests as root or create the user yourself"
        return 1
    fi
    engine_ensure_docker_group || return 1
    if ! id -u "$name" >/dev/null 2>&1; then
        useradd --create-home --user-group --shell /bin/bash "$name" || { say "useradd '$name' failed"; return 1; }
        say "created test user '$name'"
    fi
    if ! id -nG "$name" | tr ' ' '\n' | grep -qx docker; then
        usermod -aG docker "$name" || { say "cannot add '$name' to the docker group"; return 1; }
        say "added '$name' to the docker group"
    fi
}

# Creates the user if missing, outside the docker group (it must not reach the engine itself).
ensure_plain_test_user() {
    local name=${1:?usage: ensure_plain_test_user NAME}
    is_root || { say "creating the test user '$name' needs root"; return 1; }
    if ! id -u "$name" >/dev/null 2>&1; then
        useradd --create-home --user-group --shell /bin/bash "$name" || { say "useradd '$name' failed"; return 1; }
        say "created test user '$name'"
    fi
    if id -nG "$name" | tr ' ' '\n' | grep -qx docker; then
        gpasswd -d "$name" docker >/dev/null || { say "cannot take '$name' out of the docker group"; return 1; }
    fi
}

# True when the test user can execute path (every parent directory must let it through).
test_user_can_run() {
    runuser -u "${1:?usage: test_user_can_run NAME PATH}" -- test -x "${2:?usage: test_user_can_run NAME PATH}"
}

# Runs a command as the test user with a fresh group list (so docker membership applies) and its HOME.
run_as_test_user() {
    local name=${1:?usage: run_as_test_user NAME CMD...} home
    shift
    home=$(getent passwd "$name" | cut -d: -f6)
    if [[ -z $home ]]; then
        say "no user '$name'; call ensure_test_user first"
        return 1
    fi
    runuser -u "$name" -- env HOME="$home" USER="$name" LOGNAME="$name" "$@"
}
