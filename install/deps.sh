#!/usr/bin/env bash
# Installs the Debian packages that building, testing and running sandshim need.
# Idempotent: when every package is already installed it touches nothing and needs no root.
# Usage: install/deps.sh [--with-podman] [--with-gvisor]
set -euo pipefail

SANDSHIM_PREFIX=sandshim-deps
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

readonly k_packages=(
    # build
    build-essential cmake pkg-config clang clang-format git
    libclang-rt-dev # libFuzzer and the sanitizer runtimes for clang (only recommended by clang)
    libboost-program-options-dev libspdlog-dev libfmt-dev libsqlite3-dev sqlite3
    catch2 nlohmann-json3-dev libssl-dev
    # engine and images (debootstrap verifies the Release file with this keyring)
    docker.io debootstrap debian-archive-keyring ca-certificates
    # tests and demos
    python3 uidmap iproute2 procps psmisc
    # the .deb (cpack runs dpkg-shlibdeps) and its man page check
    dpkg-dev man-db
    # the hostile corpus: host controls in Node, peak RSS by time(1), file capabilities
    nodejs time libcap2-bin
)
readonly k_update_max_age_min=360 # an apt-get update younger than this is trusted

usage() {
    cat >&2 <<'USAGE'
usage: install/deps.sh [--with-podman] [--with-gvisor]
  --with-podman   also install podman (alternative engine)
  --with-gvisor   also install runsc and register it with docker (sandbox.runtime = runsc)
USAGE
}

# Prints the packages of "$@" that are not fully installed.
missing_packages() {
    local pkg
    for pkg in "$@"; do
        if [[ $(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null) != ii* ]]; then
            printf '%s\n' "$pkg"
        fi
    done
}

# True when our stamp says apt-get update ran recently (list mtimes come from the mirror, not from us).
lists_are_fresh() {
    local stamp
    stamp="$(state_dir)/apt-update.stamp"
    [[ -n $(find "$stamp" -mmin "-$k_update_max_age_min" -print 2>/dev/null) ]] &&
        [[ -n $(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -print -quit 2>/dev/null) ]]
}

apt_update() {
    say "apt-get update"
    apt-get update -q >&2 || die "apt-get update failed; check the apt sources and network, then re-run install/deps.sh"
    touch "$(state_dir)/apt-update.stamp"
}

apt_get_install() {
    apt-get install -y -q --no-install-recommends \
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "$@" >&2
}

# Updates the lists once when they are stale, or once more when an install from trusted lists fails.
apt_install() {
    local updated=0
    # CI has no stdin and no terminal: never let apt or debconf ask.
    export DEBIAN_FRONTEND=noninteractive
    if ! lists_are_fresh; then
        apt_update
        updated=1
    fi
    say "apt-get install: $*"
    apt_get_install "$@" && return 0
    ((updated)) && die "apt-get install failed (see above); fix apt, then re-run install/deps.sh"
    warn "apt-get install failed; refreshing the package lists and retrying once"
    apt_update
    apt_get_install "$@" || die "apt-get install failed (see above); fix apt, then re-run install/deps.sh"
}

# docker knows a runtime only from daemon.json: add runsc there (keeping every other setting) and
# let dockerd reload it with SIGHUP, which restarts nothing. podman takes the binary's path.
register_gvisor() {
    local config=/etc/docker/daemon.json
    if [[ -s $config ]] && python3 -c 'import json, sys; sys.exit(0 if "runsc" in json.load(open(sys.argv[1])).get("runtimes", {}) else 1)' "$config"; then
        return 0
    fi
    reexec_as_root "$(realpath "${BASH_SOURCE[0]}")" --with-gvisor
    python3 - "$config" <<'PY'
import json, os, sys
path = sys.argv[1]
config = json.load(open(path)) if os.path.exists(path) and os.path.getsize(path) else {}
# --oci-seccomp: without it runsc ignores the container's seccomp profile.
config.setdefault("runtimes", {})["runsc"] = {"path": "/usr/bin/runsc", "runtimeArgs": ["--oci-seccomp"]}
with open(path + ".new", "w") as out:
    json.dump(config, out, indent=2)
os.replace(path + ".new", path)
PY
    if pid=$(pidof dockerd); then
        kill -HUP "$pid"
        say "registered runsc with docker ($config); dockerd reloaded it"
    else
        say "registered runsc with docker ($config); it applies when dockerd starts"
    fi
}

main() {
    local args=("$@") packages=("${k_packages[@]}") missing gvisor=0
    while (($#)); do
        case $1 in
            # tini: the same init as docker's (exit codes 126/127); the rest for rootless podman.
            --with-podman) packages+=(podman tini catatonit fuse-overlayfs slirp4netns) ;;
            --with-gvisor) packages+=(runsc) gvisor=1 ;;
            -h | --help) usage; exit 0 ;;
            *) usage; die "unknown option '$1'" ;;
        esac
        shift
    done
    command -v dpkg-query >/dev/null 2>&1 || die "dpkg-query not found: install/deps.sh supports Debian 12 (bookworm) and derivatives only"
    mapfile -t missing < <(missing_packages "${packages[@]}")
    if ((${#missing[@]} == 0)); then
        say "all ${#packages[@]} packages already installed"
        ((gvisor == 0)) || register_gvisor
        return 0
    fi
    reexec_as_root "$(realpath "${BASH_SOURCE[0]}")" "${args[@]}"
    apt_install "${missing[@]}"
    mapfile -t missing < <(missing_packages "${packages[@]}")
    ((${#missing[@]} == 0)) || die "still not installed after apt-get: ${missing[*]}"
    say "installed; all ${#packages[@]} packages present"
    ((gvisor == 0)) || register_gvisor
}

main "$@"
