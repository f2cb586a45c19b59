#!/usr/bin/env bash
# sandshim-test-alone: yes  # installs /etc/sandshim/config (broker required) and a broker on /run/sandshim, which every run on the machine reads: nothing runs beside it in CI
# The Debian package: cpack builds it from this build tree, dpkg installs it, python from the
# installed shim directory runs in a container (hostname, read-only root, audit row) through the
# broker postinst started (broker.mode = required in the shipped config, the broker as the user
# sandshim, its socket on a tmpfs, back at boot from the runlevels or systemd's socket unit), the
# config changes no other default but the warm pool, and dpkg -P removes it, leaving the system
# as it was (broker stopped, its runtime directory and runlevel links gone).
# sandshim-test-engines: docker
# (docker only: the suite tests the package, not the engine; the installed binary runs with the
# default policy, engine.name = docker, and a podman run would add nothing it checks.)
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

readonly PKG=sandshim
readonly SHIMS=/usr/libexec/sandshim/shims
BUILD=$(dirname "$SANDSHIM_BIN")
readonly BUILD
INSTALLED=0

is_root || skip_or_fail "installing a .deb with dpkg needs root"
for tool in cpack dpkg dpkg-deb dpkg-shlibdeps; do
    command -v "$tool" >/dev/null || skip_or_fail "$tool is missing (install/deps.sh installs cmake and dpkg-dev)"
done
[[ -f $BUILD/CPackConfig.cmake ]] || skip_or_fail "no CPackConfig.cmake in $BUILD (configure with cmake first)"
# This suite installs and purges the package: it must not replace what the machine already has.
if [[ $(dpkg-query -W -f='${db:Status-Abbrev}' "$PKG" 2>/dev/null) == i* ]]; then
    skip_or_fail "a $PKG package is already installed; this suite would replace and purge it"
fi
# An earlier broker's audit, key and anchor log (setup's paths, which the package shares): the
# purge would remove them. (/var/lib/sandshim alone is the broker user's home, made empty.)
for path in /usr/bin/sandshim /etc/sandshim "$SHIMS" /run/sandshim/broker.sock /etc/init.d/sandshim \
    /var/lib/sandshim/audit.db /var/lib/sandshim/keys /var/log/sandshim; do
    [[ ! -e $path ]] || skip_or_fail "$path exists; this suite would overwrite it"
done

purge_package() {
    ((INSTALLED)) || return 0
    dpkg -P "$PKG" >/dev/null 2>&1 || say "could not purge $PKG: run dpkg -P $PKG"
}
# Purges first, then lib.sh's cleanup, which reads the suite's exit status from $?.
purge_then_cleanup() {
    local rc=$?
    purge_package
    (exit "$rc")
    cleanup
}
trap purge_then_cleanup EXIT

check "cpack builds a .deb from the build tree, with shlibdeps dependencies and an engine"
(cd "$BUILD" && cpack -G DEB -B "$T/pkg") >"$T/cpack.log" 2>&1 || {
    tail -n 30 "$T/cpack.log" >&2
    fail "cpack failed (log above)"
}
DEB=$(find "$T/pkg" -maxdepth 1 -name "${PKG}_*.deb" -print -quit)
[[ -n $DEB ]] || fail "cpack wrote no ${PKG}_*.deb in $T/pkg"
depends=$(dpkg-deb -f "$DEB" Depends)
# libstdc++, Boost, SQLite, spdlog and fmt are linked in (SANDSHIM_STATIC_DEPS): shlibdeps names
# libc6 with a version, and nothing else needs to be there.
for dependency in "libc6 (>=" "docker.io | podman"; do
    [[ $depends == *"$dependency"* ]] || fail "Depends lacks $dependency: $depends"
done
expect_equal "/etc/sandshim/config /etc/init.d/sandshim" "$(dpkg-deb --info "$DEB" conffiles | tr '\n' ' ' | sed 's/ $//')" conffiles
dpkg-deb -c "$DEB" >"$T/contents"
for file in ./usr/bin/sandshim ./etc/sandshim/config ./usr/share/man/man1/sandshim.1.gz \
    ./usr/share/bash-completion/completions/sandshim ./usr/share/zsh/vendor-completions/_sandshim \
    ./usr/share/fish/vendor_completions.d/sandshim.fish ./usr/share/sandshim/images.sh \
    ./usr/share/sandshim/lib/common.sh ./usr/share/sandshim/skill/SKILL.md "./usr/libexec/sandshim/shims/python " ./usr/libexec/sandshim/sandshim-gate \
    ./usr/libexec/sandshim/sandshim-forward ./usr/libexec/sandshim/sandshim-tls \
    ./usr/lib/systemd/system/sandshim.socket ./usr/lib/systemd/system/sandshim.service \
    ./etc/init.d/sandshim; do
    grep -qF -- "$file" "$T/contents" || fail "the package lacks $file"
done
expect_not_contains "./usr/bin/python" "$T/contents" # the shims never shadow the system's
if command -v lintian >/dev/null; then
    lintian --tag-display-limit 0 "$DEB" >&2 || warn "lintian reports the problems above (not enforced)"
fi

check "dpkg -i installs it; the installed binary is this build's"
INSTALLED=1
expect_exit 0 dpkg -i "$DEB"
expect_equal "install ok installed" "$(dpkg-query -W -f='${Status}' "$PKG")" "package status"
expect_equal "$("$SANDSHIM_BIN" version)" "$(/usr/bin/sandshim version)" "installed version"
expect_equal /usr/share/man/man1/sandshim.1.gz "$(man -w sandshim)" "man -w sandshim"
id -nG sandshim | tr ' ' '\n' | grep -qx docker || fail "postinst did not put the broker's user sandshim in the docker group"

check "postinst requires the broker and starts it as the user sandshim, its socket on a tmpfs"
awk '/^\[/ { section = $0 } section == "[broker]" && $0 == "mode = required" { found = 1 } END { exit !found }' \
    /etc/sandshim/config || fail "/etc/sandshim/config does not set broker.mode = required: $(grep -v '^#' /etc/sandshim/config)"
[[ -S /run/sandshim/broker.sock ]] || fail "no broker socket at /run/sandshim/broker.sock"
expect_equal tmpfs "$(stat -f -c %T /run/sandshim)" "file system of /run/sandshim"
if [[ -d /run/systemd/system ]]; then
    systemctl is-active --quiet sandshim.socket || fail "sandshim.socket is not active"
    systemctl is-enabled --quiet sandshim.socket || fail "sandshim.socket is not enabled"
else
    expect_exit 0 /etc/init.d/sandshim status
    expect_contains "the broker runs (pid " "$ERR"
    broker_pid=$(cat /run/sandshim.pid)
    expect_equal sandshim "$(stat -c %U "/proc/$broker_pid")" "the broker's user"
    compgen -G '/etc/rc2.d/S*sandshim' >/dev/null || fail "no runlevel link: the broker would not come back after a reboot"
fi
PATH=/usr/bin:/bin expect_exit 1 /usr/bin/sandshim doctor # 1: root's shims are not installed
expect_contains "ok    mode     broker mode: the broker at /run/sandshim/broker.sock runs every request (its engine, policy and audit); mode required from /etc/sandshim/config" "$OUT"
expect_contains "ok    broker   the broker at /run/sandshim/broker.sock runs as uid $(id -u sandshim) (sandshim), not yours (uid 0 (root))" "$OUT"
expect_contains "ok    engine   through the broker: docker " "$OUT"
AUDIT_DBS+=(/var/lib/sandshim/audit.db) # the broker's runs: lib.sh's cleanup removes their containers

check "every default shimmed command has a link in $SHIMS to /usr/bin/sandshim"
/usr/bin/sandshim policy show | sed -n 's/^images\.\([^ ]*\) .*/\1/p' >"$T/commands"
expect_lines 4 "$T/commands"
while read -r command; do
    expect_equal /usr/bin/sandshim "$(readlink -f "$SHIMS/$command")" "$SHIMS/$command"
done <"$T/commands"

check "the shipped /etc/sandshim/config sets only the broker mode, the warm pool and the keyed audit"
expect_contains "# memory = 512m" /etc/sandshim/config
# Without the harness's own user config (it names the engine under test): /etc and defaults only.
mkdir -p "$T/no-user-config"
env -u SANDSHIM_AUDIT_DB XDG_CONFIG_HOME="$T/no-user-config" /usr/bin/sandshim policy show >"$T/policy"
grep -v '# default$' "$T/policy" >"$T/not-default" || true
sed -E 's/ +/ /g; s/ #.*//' "$T/not-default" >"$T/set"
# The key and anchor are the broker's: a caller's view sets them aside (policy.cpp), so they show
# empty, from the system file.
expect_file_is "$T/set" "audit.key_file =
audit.anchor_file =
broker.mode = required
pool.size = 1
pool.start = launcher"

check "control: python from the system PATH runs on the host"
[[ $(/usr/bin/python3 -c 'import socket; print(socket.gethostname())') != sandbox ]] ||
    fail "the host is called sandbox: the check below would prove nothing"

check "python from the installed shim directory runs in a container through the broker: hostname, read-only root, audit"
expect_equal "$SHIMS/python" "$(PATH=$SHIMS:$PATH command -v python)" "python on PATH"
# (Without the harness's user config: engine.name is the broker's system file's alone.)
PATH=$SHIMS:$PATH XDG_CONFIG_HOME="$T/no-user-config" expect_exit 42 python -c '
import os, socket, sys
print(socket.gethostname(), os.getuid())
try:
    open("/installed-package-probe", "w")
except OSError as e:
    print(e.strerror)
sys.exit(42)'
expect_contains "sandbox 65534" "$OUT"
expect_contains "Read-only file system" "$OUT"
# The row is in the broker's audit (root reads all of it through the broker), not the suite's.
/usr/bin/sandshim audit list --limit 1 --json >"$T/row"
expect_equal "error 42 sandshim/python:bookworm $(id -u)" "$("$HOST_PY" -c 'import json, sys
r = json.load(open(sys.argv[1]))[0]
print(r["status"], r["exit_code"], r["image"], r["uid"])' "$T/row")" "the broker's audit row"

check "the broker keys its chain (setup's key and anchor paths) and anchors its head"
expect_contains "key_file = /var/lib/sandshim/keys/chain.key" /etc/sandshim/config
expect_contains "anchor_file = /var/log/sandshim/anchor.log" /etc/sandshim/config
expect_equal "sandshim 400" "$(stat -c '%U %a' /var/lib/sandshim/keys/chain.key 2>&1)" "the chain's key"
expect_equal "root sandshim 660" "$(stat -c '%U %G %a' /var/log/sandshim/anchor.log 2>&1)" "the anchor log"
[[ -s /var/log/sandshim/anchor.log ]] || miss "the anchor log is empty after a run"
expect_exit 0 /usr/bin/sandshim audit verify
expect_contains "keyed" "$OUT"

check "the installed binary finds images.sh and its libraries in /usr/share/sandshim"
expect_exit 1 /usr/bin/sandshim images build --only bogus
expect_contains "--only takes one of: python node sh" "$ERR"

check "the installed bash completion completes subcommands"
expect_equal verify "$(bash -c 'source /usr/share/bash-completion/completions/sandshim
COMP_WORDS=(sandshim audit ver); COMP_CWORD=2; _sandshim; echo "${COMPREPLY[*]}"')" "completion"

check "dpkg -P removes every file the package installed, /etc/sandshim included"
dpkg -L "$PKG" >"$T/files"
expect_exit 0 dpkg -P "$PKG"
INSTALLED=0
[[ $(dpkg-query -W -f='${db:Status-Abbrev}' "$PKG" 2>/dev/null) != i* ]] || fail "$PKG is still installed"
while read -r path; do
    [[ -d $path && ! -L $path ]] && continue # shared directories (/usr/bin) stay
    [[ ! -e $path && ! -L $path ]] || fail "$path is still there after dpkg -P"
done <"$T/files"
for path in /etc/sandshim /usr/libexec/sandshim /usr/share/sandshim /etc/init.d/sandshim /run/sandshim \
    /var/lib/sandshim /var/log/sandshim; do
    [[ ! -e $path ]] || fail "$path is still there after dpkg -P"
done
! compgen -G '/etc/rc?.d/[SK]*sandshim' >/dev/null || fail "runlevel links left after dpkg -P: $(ls /etc/rc?.d/*sandshim)"
[[ -z ${broker_pid:-} || ! -e /proc/$broker_pid ]] || fail "the broker (pid $broker_pid) still runs after dpkg -P"

suite_done
