#!/usr/bin/env bash
# Installs the Debian packages that building, testing and running sandshim need, and the agent
# CLIs the agent suites run (pinned versions from the npm registry, in install/lib/agent_clis.sh's
# prefix). Idempotent: when everything is already installed it touches nothing and needs no root.
# Under CI=true a failed agent install fails; otherwise it warns and the agent suites skip.
# --product (install/setup.sh): only what building the product (no tests) and running it need:
# no test, lint, fuzz or packaging tools, no test fixtures, no agent CLIs unless --with-agents.
# Usage: install/deps.sh [--product] [--with-podman] [--with-gvisor] [--without-agents | --with-agents]
set -euo pipefail

SANDSHIM_PREFIX=sandshim-deps
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source-path=SCRIPTDIR source=lib/agent_clis.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/agent_clis.sh"

# What the product build (-DSANDSHIM_BUILD_TESTS=OFF) and a machine that runs it need.
readonly k_product_packages=(
    # build: the compiler, CMake, and the libraries the binary links in (SANDSHIM_STATIC_DEPS)
    build-essential cmake
    libboost-program-options-dev libboost-dev libspdlog-dev libfmt-dev libsqlite3-dev nlohmann-json3-dev
    # libboost-dev: Boost's headers, Beast and Asio among them (engine/, the Engine API client)
    # libssl-dev: TLS to a remote engine (engine.endpoint = tcp://…), linked in
    libssl-dev
    # engine and images (debootstrap verifies the Release file with this keyring)
    docker.io debootstrap debian-archive-keyring ca-certificates
    # install/setup.sh's demo (its loopback listener on the host), pidof and pkill
    python3 procps
)
# Everything install/test.sh builds and runs on top of the product's.
readonly k_packages=(
    "${k_product_packages[@]}"
    # build: the tests' libraries, the linters, clang for the fuzz and sanitizer trees
    pkg-config clang clang-format git shellcheck
    libclang-rt-dev # libFuzzer and the sanitizer runtimes for clang (only recommended by clang)
    sqlite3 catch2
    # tests and demos
    uidmap iproute2 psmisc
    # suite_network: the test CA and the TLS upstream
    openssl
    # suite_remote_ssh: an sshd beside the remote engine, and the client ssh:// engines use
    openssh-server openssh-client
    # the .deb (cpack runs dpkg-shlibdeps) and its man page check
    dpkg-dev man-db
    # the hostile corpus: host controls in Node, peak RSS by time(1), file capabilities
    nodejs time libcap2-bin
    # tests/suites: third-party test suites shipped in Debian packages, and the runner they use
    python3-mpmath libpython3.11-testsuite python3-pytest python3-attr
    python3-simplejson python3-toolz python3-bs4 python3-soupsieve python3-zope.interface
    # bench/many_calls.sh: pyflakes' own tests (python3-pyflakes), and the script they start
    pyflakes3
    # bench/latency.sh: the same call under bubblewrap, beside the container's; jq and bc for
    # the benches' figures
    bubblewrap jq bc
    # tests/agents: Claude Code's own sandbox on Linux needs bubblewrap and socat (its proxy bridge)
    socat
    # suite_ptrace: the caller's tracing attempts; the k8s manifests' YAML read back
    strace gdb python3-yaml
)
# tests/suites: npm packages whose published tarballs include their tests, each with its test-only
# dependencies, one fixture directory each (its name first, then what `npm install` gets).
readonly k_suite_npm_fixtures=(
    "minimist minimist@1.2.8 tape@5.6.6"
    "json-schema-ref-resolver json-schema-ref-resolver@3.0.1"
    "merge-json-schemas @fastify/merge-json-schemas@0.2.2"
    # engines.node >=20: the suites' project for sandbox.version_fit
    "find-my-way find-my-way@9.10.2 rfdc@1.4.1 proxyquire@2.1.3"
)
readonly k_suites_dir=${SANDSHIM_SUITES_DIR:-/var/tmp/sandshim/suites}
readonly k_update_max_age_min=360 # an apt-get update younger than this is trusted

usage() {
    cat >&2 <<'USAGE'
usage: install/deps.sh [--product] [--with-podman] [--with-gvisor] [--without-agents | --with-agents]
  --product         only what building (without tests) and running sandshim need: no test tools,
                    no test fixtures, no agent CLIs (install/setup.sh)
  --with-podman     also install podman (alternative engine)
  --with-gvisor     also install runsc and register it with docker (sandbox.runtime = runsc)
  --without-agents  skip the agent CLIs (Claude Code, Codex, Gemini CLI) the agent suites run
  --with-agents     install them even with --product
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

# openssh-server is here for its sshd binary alone (suite_remote_ssh starts its own, on a test
# namespace's address): the system sshd its package starts and enables, listening on every
# address, is stopped and disabled again, and the line says so.
keep_sshd_off() {
    if [[ -d /run/systemd/system ]]; then
        systemctl disable --now ssh.service ssh.socket >/dev/null 2>&1 || true
    else
        [[ ! -x /etc/init.d/ssh ]] || /etc/init.d/ssh stop >/dev/null 2>&1 || true
        update-rc.d ssh disable >/dev/null 2>&1 || true
    fi
    say "openssh-server is for the tests' own sshd: the system's ssh service is stopped and disabled (re-enable it with systemctl enable --now ssh, or update-rc.d ssh enable)"
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

# ---------------------------------------------------------------------------------------------
# The agent CLIs.

# True when every pinned CLI is installed, its native binary included, and node can run the rest.
agent_clis_present() {
    local agent
    for agent in "${!AGENT_CLI_PACKAGES[@]}"; do
        agent_cli_version_ok "$agent" || return 1
    done
    # Claude Code and Codex are native binaries from optional dependencies: --version proves them.
    for agent in claude codex; do
        [[ $("$(agent_cli_bin "$agent")" --version 2>/dev/null) == "${AGENT_CLI_VERSION_LINES[$agent]}" ]] || return 1
    done
    [[ -n $(agent_clis_node_dir) ]]
}

# The prefix's package.json: exactly the pinned CLIs (and a node for Gemini CLI when needed).
write_agent_manifest() {
    local specs=("${AGENT_CLI_PACKAGES[@]}") node_major spec sep=""
    node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
    ((node_major >= AGENT_CLIS_NODE_MIN_MAJOR)) || specs+=("$AGENT_CLIS_NODE_PACKAGE")
    mkdir -p "$AGENT_CLIS_PREFIX"
    {
        printf '{\n  "name": "sandshim-agent-clis",\n  "private": true,\n  "dependencies": {'
        for spec in "${specs[@]}"; do
            printf '%s\n    "%s": "%s"' "$sep" "${spec%@*}" "${spec##*@}"
            sep=,
        done
        printf '\n  }\n}\n'
    } >"$AGENT_CLIS_PREFIX/package.json"
}

agent_install_failed() {
    if [[ ${CI:-} == true ]]; then
        die "$* (CI=true: the agent suites need the agent CLIs)"
    fi
    warn "$*; the agent suites will skip (re-run install/deps.sh, or --without-agents)"
}

install_agent_clis() {
    if agent_clis_present; then
        say "agent CLIs present in $AGENT_CLIS_PREFIX (${AGENT_CLI_PACKAGES[*]})"
        return 0
    fi
    # Debian's nodejs comes without npm (NodeSource's has it: never ask apt for a second one).
    command -v npm >/dev/null 2>&1 || apt_install npm
    write_agent_manifest
    say "npm install in $AGENT_CLIS_PREFIX: ${AGENT_CLI_PACKAGES[*]}"
    # Optional dependencies carry the native binaries: never omit them.
    if ! npm install --prefix "$AGENT_CLIS_PREFIX" --include=optional --no-audit --no-fund \
        --no-update-notifier --loglevel=error >&2; then
        agent_install_failed "npm install of the agent CLIs failed (see above)"
        return 0
    fi
    agent_clis_present || agent_install_failed "the agent CLIs are installed but not as pinned (native binary missing?)"
}

# The npm fixtures of tests/suites with a package missing from their directory's node_modules.
missing_suite_fixtures() {
    local fixture spec
    for fixture in "${k_suite_npm_fixtures[@]}"; do
        for spec in ${fixture#* }; do
            if [[ ! -f $k_suites_dir/${fixture%% *}/node_modules/${spec%@*}/package.json ]]; then
                printf '%s\n' "$fixture"
                break
            fi
        done
    done
}

# Fetches the missing npm fixtures of tests/suites, one `npm install` each, with the npm client and
# its configured registry.
fetch_suite_fixtures() {
    local fixture dir specs
    command -v npm >/dev/null 2>&1 || apt_install npm
    while read -r fixture; do
        dir=$k_suites_dir/${fixture%% *}
        read -r -a specs <<<"${fixture#* }"
        say "npm install ${specs[*]} into $dir (tests/suites fixtures)"
        mkdir -p -- "$dir"
        npm install --no-save --no-audit --no-fund --prefix "$dir" "${specs[@]}" >&2 ||
            die "npm install of the tests/suites fixture ${specs[*]} failed; check npm's registry access, then re-run install/deps.sh"
        chmod -R a+rX -- "$dir"
    done < <(missing_suite_fixtures)
}

# docker knows a runtime only from daemon.json: add runsc there (keeping every other setting) and
# let dockerd reload it with SIGHUP, which restarts nothing; a dockerd started later reads it at
# start. Idempotent: nothing is written or reloaded when both entries are already as below.
# podman takes the binary's path.
register_gvisor() {
    local config=/etc/docker/daemon.json
    if python3 - "$config" check <<<"$k_gvisor_runtimes_py"; then
        return 0
    fi
    reexec_as_root "$(realpath "${BASH_SOURCE[0]}")" --with-gvisor --without-agents
    python3 - "$config" write <<<"$k_gvisor_runtimes_py"
    if pid=$(pidof dockerd); then
        kill -HUP "$pid"
        say "registered runsc with docker ($config); dockerd reloaded it"
    else
        say "registered runsc with docker ($config); it applies when dockerd starts"
    fi
}

# daemon.json's runtimes for gVisor: `check` exits 0 when they are there as wanted, `write` adds them.
readonly k_gvisor_runtimes_py='
import json, os, sys
path, mode = sys.argv[1], sys.argv[2]
config = json.load(open(path)) if os.path.exists(path) and os.path.getsize(path) else {}
# --oci-seccomp: without it runsc ignores the container'"'"'s seccomp profile.
wanted = {
    "runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--oci-seccomp"]},
    # sandbox.network = none: runsc without a network stack of its own (sandshim picks it).
    "runsc-nonet": {"path": "/usr/bin/runsc", "runtimeArgs": ["--oci-seccomp", "--network=none"]},
}
runtimes = config.setdefault("runtimes", {})
if mode == "check":
    sys.exit(0 if all(runtimes.get(name) == entry for name, entry in wanted.items()) else 1)
runtimes.update(wanted)
with open(path + ".new", "w") as out:
    json.dump(config, out, indent=2)
os.replace(path + ".new", path)
'

main() {
    local args=("$@") packages=() extras=() missing agents=1 gvisor=0 product=0
    while (($#)); do
        case $1 in
            --product) product=1 ;;
            # tini: the same init as docker's (exit codes 126/127); the rest for rootless podman.
            --with-podman) extras+=(podman tini catatonit fuse-overlayfs slirp4netns) ;;
            # golang-github-containers-common: the seccomp profile sandshim derives for runsc runs
            --with-gvisor) extras+=(runsc golang-github-containers-common) gvisor=1 ;;
            --without-agents) agents=0 ;;
            --with-agents) agents=2 ;;
            -h | --help) usage; exit 0 ;;
            *) usage; die "unknown option '$1'" ;;
        esac
        shift
    done
    if ((product)); then
        packages=("${k_product_packages[@]}" "${extras[@]}")
        if ((agents == 2)); then
            packages+=(nodejs) # the agent CLIs run on the host's node
        else
            agents=0
        fi
    else
        packages=("${k_packages[@]}" "${extras[@]}")
    fi
    command -v dpkg-query >/dev/null 2>&1 || die "dpkg-query not found: install/deps.sh supports Debian 12 (bookworm) and derivatives only"
    mapfile -t missing < <(missing_packages "${packages[@]}")
    if ((${#missing[@]} == 0)); then
        say "all ${#packages[@]} packages already installed"
    else
        reexec_as_root "$(realpath "${BASH_SOURCE[0]}")" "${args[@]}"
        apt_install "${missing[@]}"
        [[ " ${missing[*]} " != *" openssh-server "* ]] || keep_sshd_off
        mapfile -t missing < <(missing_packages "${packages[@]}")
        ((${#missing[@]} == 0)) || die "still not installed after apt-get: ${missing[*]}"
        say "installed; all ${#packages[@]} packages present"
    fi
    if ((!product)) && [[ -n $(missing_suite_fixtures) ]]; then
        reexec_as_root "$(realpath "${BASH_SOURCE[0]}")" "${args[@]}"
        fetch_suite_fixtures
    fi
    ((gvisor == 0)) || register_gvisor
    ((agents)) || return 0
    if ! agent_clis_present; then
        reexec_as_root "$(realpath "${BASH_SOURCE[0]}")" "${args[@]}"
    fi
    install_agent_clis
}

main "$@"
