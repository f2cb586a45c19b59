# shellcheck shell=bash
# What install/broker_setup.sh changed on the system, one line each, so install/uninstall.sh can
# undo exactly that (last first) and nothing else. The record is root:root 0644.
#
#   record_open /etc/sandshim/setup.record
#   record_add "docker-group alice"        # once, however often set-up runs
#   record_file /etc/sandshim/config       # with its digest: changed since, it is the administrator's
#   record_owns_file /etc/sandshim/config  # true when set-up wrote it and nobody changed it since
#
# Lines: `file PATH`, `config PATH SHA256`, `docker-group USER`, `systemd-units`,
# `init-script PATH`, `tmpfs PATH`.

[[ -n ${_sandshim_setup_record_loaded:-} ]] && return 0
_sandshim_setup_record_loaded=1

_record=""

record_open() { # FILE
    _record=$1
    install -d -m 0755 "$(dirname "$_record")"
    [[ -e $_record ]] || printf '# changed by install/broker_setup.sh; install/uninstall.sh undoes it\n' >"$_record"
    chmod 0644 "$_record"
}

record_add() { # LINE
    grep -qxF -- "$1" "$_record" || printf '%s\n' "$1" >>"$_record"
}

record_file() { # PATH
    local digest
    digest=$(sha256sum -- "$1" | cut -d' ' -f1)
    if ! grep -q -- "^config $1 " "$_record"; then
        record_add "config $1 $digest"
        return 0
    fi
    # In its place: the undo order stays the order of the first set-up.
    awk -v path="$1" -v line="config $1 $digest" '$1 == "config" && $2 == path { $0 = line } { print }' \
        "$_record" >"$_record.tmp"
    chmod 0644 "$_record.tmp"
    mv "$_record.tmp" "$_record"
}

record_owns_file() { # PATH
    local digest
    [[ -e $1 ]] || return 1
    digest=$(sha256sum -- "$1" | cut -d' ' -f1)
    grep -qxF -- "config $1 $digest" "$_record"
}
