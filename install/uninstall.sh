#!/usr/bin/env bash
# Undoes what install/setup.sh changed on the system, as its record (/etc/sandshim/setup.record,
# written by install/broker_setup.sh) lists it, last change first: puts the users it took out of
# the docker group back, stops and removes the broker's service (systemd units, or the init script
# and its runlevel links), unmounts the tmpfs it mounted, removes the binaries it installed and the
# system file it wrote (kept when changed since: then it is the administrator's). The broker's
# audit (/var/lib/sandshim, /var/log/sandshim) and its system user stay, as a package's purge
# would decide; --purge removes the audit too. The invoking user's shim links to the removed
# binary go too (each would stop `python3` with "No such file or directory" while the shim
# directory is first on PATH); their PATH line is theirs to remove.
# Usage: install/uninstall.sh [--root DIR] [--purge]
set -euo pipefail

SANDSHIM_PREFIX=sandshim-uninstall
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source-path=SCRIPTDIR source=lib/setup_record.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/setup_record.sh"

g_root=""
g_purge=0

usage() {
    cat >&2 <<'USAGE'
usage: install/uninstall.sh [--root DIR] [--purge]
  --root DIR  undo a set-up made with install/broker_setup.sh --root DIR
  --purge     also remove the broker's audit database, key and anchor log
USAGE
}

# The shim links of the user who ran set-up (SUDO_USER under sudo) that pointed at the binary
# this undid, now dangling; only those.
remove_dangling_shims() {
    local user=${SUDO_USER:-$(id -un)} dir link removed=0
    if [[ -n ${SUDO_USER:-} ]]; then
        dir=$(getent passwd "$user" | cut -d: -f6)/.local/share/sandshim/bin
    else
        dir=${XDG_DATA_HOME:-$HOME/.local/share}/sandshim/bin
    fi
    [[ -d $dir ]] || return 0
    for link in "$dir"/*; do
        [[ -L $link && ! -e $link && $(readlink "$link") == "$g_root/usr/local/bin/sandshim" ]] || continue
        rm -f -- "$link"
        removed=$((removed + 1))
    done
    ((removed)) || return 0
    rmdir --ignore-fail-on-non-empty -- "$dir"
    say "removed $user's shim links to the removed binary in $dir ($removed); remove the shim directory's PATH line from the shell profile too"
}

undo_systemd_units() {
    systemctl disable --now sandshim.socket sandshim.service >/dev/null 2>&1 || true
    rm -f /etc/systemd/system/sandshim.socket /etc/systemd/system/sandshim.service
    systemctl daemon-reload || true
    say "stopped and removed the systemd units sandshim.socket and sandshim.service"
}

undo_init_script() { # PATH
    if [[ -x $1 ]]; then
        "$1" stop || true
    fi
    rm -f -- "$1"
    if [[ -z $g_root ]]; then
        update-rc.d -f sandshim remove >/dev/null || true
        say "stopped the broker, removed $1 and its runlevel links"
    else
        say "stopped the broker, removed $1"
    fi
}

undo_config() { # PATH DIGEST
    if [[ -e $1 && $(sha256sum -- "$1" | cut -d' ' -f1) != "$2" ]]; then
        say "kept $1: changed since set-up wrote it"
        return 0
    fi
    rm -f -- "$1"
    say "removed $1"
}

undo_line() { # KIND ARGS...
    case $1 in
        docker-group)
            gpasswd -a "$2" docker >/dev/null && say "put $2 back into the docker group (gpasswd -a $2 docker)" ;;
        systemd-units) undo_systemd_units ;;
        init-script) undo_init_script "$2" ;;
        tmpfs) ! mountpoint -q "$2" || { umount "$2" && say "unmounted the tmpfs on $2"; } ;;
        config) undo_config "$2" "$3" ;;
        file) rm -f -- "$2" && say "removed $2" ;;
        *) warn "unknown line in the record: $*" ;;
    esac
}

main() {
    local record lines i
    reexec_as_root "${BASH_SOURCE[0]}" "$@"
    while (($#)); do
        case $1 in
            --root) g_root=${2%/}; shift ;;
            --purge) g_purge=1 ;;
            -h | --help) usage; exit 0 ;;
            *) usage; die "unknown option '$1'" ;;
        esac
        shift
    done
    record=$g_root/etc/sandshim/setup.record
    [[ -f $record ]] || die "no $record: install/setup.sh did not set this system up (or it was undone)"
    mapfile -t lines < <(grep -v '^#' "$record")
    # Last change first; a tmpfs after everything, as the broker's socket keeps it busy until it stops.
    for ((i = ${#lines[@]} - 1; i >= 0; i--)); do
        # shellcheck disable=SC2086 # a record line is words: KIND ARGS
        [[ ${lines[i]} == tmpfs\ * ]] || undo_line ${lines[i]}
    done
    for ((i = ${#lines[@]} - 1; i >= 0; i--)); do
        # shellcheck disable=SC2086
        [[ ${lines[i]} != tmpfs\ * ]] || undo_line ${lines[i]}
    done
    rm -f -- "$record"
    remove_dangling_shims
    rmdir --ignore-fail-on-non-empty -- "$g_root/etc/sandshim" "$g_root/usr/local/libexec/sandshim" 2>/dev/null || true
    if ((g_purge)); then
        chattr -a "$g_root/var/log/sandshim/anchor.log" 2>/dev/null || true # set-up made it append-only
        rm -rf -- "$g_root/var/lib/sandshim" "$g_root/var/log/sandshim"
        say "removed the broker's audit ($g_root/var/lib/sandshim, $g_root/var/log/sandshim)"
    else
        say "kept the broker's audit in $g_root/var/lib/sandshim and $g_root/var/log/sandshim (--purge removes them)"
    fi
}

main "$@"
