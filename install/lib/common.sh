# shellcheck shell=bash
# Helpers shared by the install/ scripts: messages on stderr, failure, root, state dir, exit hooks.
# A script sets SANDSHIM_PREFIX (e.g. sandshim-setup) before sourcing this file.

[[ -n ${_sandshim_common_loaded:-} ]] && return 0
_sandshim_common_loaded=1

: "${SANDSHIM_PREFIX:=sandshim}"

# Messages go to stderr: stdout belongs to whatever the caller pipes (ctest, the demo).
say() { printf '%s: %s\n' "$SANDSHIM_PREFIX" "$*" >&2; }
warn() { say "warning: $*"; }
die() {
    say "error: $*"
    exit 1
}

is_root() { [[ $(id -u) -eq 0 ]]; }

# Re-runs the calling script under sudo when not root, keeping the sandshim variables;
# without sudo it fails with the command to run.
reexec_as_root() {
    local script=$1
    shift
    is_root && return 0
    if command -v sudo >/dev/null 2>&1; then
        say "not root: re-running with sudo"
        # Through bash, so a copy that lost its exec bit still runs.
        exec sudo --preserve-env=SANDSHIM_STATE_DIR,SANDSHIM_AGENTS_PREFIX,SANDSHIM_DEBIAN_MIRROR,SANDSHIM_ENGINE_TIMEOUT,SANDSHIM_DOCKERD_ARGS,CI,http_proxy,https_proxy,no_proxy \
            -- bash "$script" "$@"
    fi
    die "this step needs root and sudo is not installed; run as root: bash $script $*"
}

# Per-user state dir for logs and caches; root writes into it, so it must be ours and no symlink.
state_dir() {
    local dir
    if [[ -n ${SANDSHIM_STATE_DIR:-} ]]; then
        dir=$SANDSHIM_STATE_DIR
    elif is_root; then
        dir=/var/tmp/sandshim
    else
        dir=/var/tmp/sandshim-$(id -u)
    fi
    [[ $dir == /* ]] || die "SANDSHIM_STATE_DIR must be an absolute path, got '$dir'"
    mkdir -p -- "$dir" || die "cannot create state directory '$dir'"
    if [[ -L $dir || ! -O $dir ]]; then
        die "state directory '$dir' is a symlink or not owned by $(id -un); remove it or set SANDSHIM_STATE_DIR"
    fi
    printf '%s\n' "$dir"
}

# One EXIT trap for the whole script; hooks run last-registered first and never change the exit code.
_sandshim_exit_hooks=()
on_exit() {
    _sandshim_exit_hooks+=("$*")
    trap _sandshim_run_exit_hooks EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}
_sandshim_run_exit_hooks() {
    local i
    set +e
    for ((i = ${#_sandshim_exit_hooks[@]} - 1; i >= 0; i--)); do
        eval "${_sandshim_exit_hooks[i]}"
    done
}

# Absolute path of the repository root (install/ lives directly under it).
repo_root() { (cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd); }
