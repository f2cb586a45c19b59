#!/usr/bin/env bash
# Builds sandshim's default images from Debian packages, with no registry: debootstrap one minimal
# bookworm base per run, copy it per image and apt-get the image's packages into the copy (twice as
# fast as one debootstrap per image, and all images share one package snapshot), import it under a
# candidate tag, smoke-test it, and only then give it its final tag, so a failed build never leaves
# a half-made image under a name the shim uses.
# Usage: install/images.sh [--only python|node|sh|wrap|host]... [--force]
# host is no Debian rootfs: the empty base of images.NAME = host (mount points and the usr-merged
# links only; the shim bind-mounts the host's /usr, the interpreter's prefix and a curated /etc).
# Reads: SANDSHIM_DEBIAN_MIRROR (default: the host's apt sources), SANDSHIM_STATE_DIR (logs, cache).
set -euo pipefail

SANDSHIM_PREFIX=sandshim-images
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source-path=SCRIPTDIR source=lib/engine.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/engine.sh"

readonly k_suite=bookworm
readonly k_names=(python node sh wrap host)
# Bump an image's version when its recipe changes, so existing images of that name get rebuilt.
declare -rA k_image_versions=([python]=2 [node]=2 [sh]=3 [wrap]=3 [host]=1)
readonly k_min_free_mb=1024
# wrap: hook.mode = wrap runs the agent's whole command in it, so it holds what agent commands use.
# pip and curl: what agents reach for first under sandbox.network = allowlist (`pip download`,
# `curl https://…`); without them the allowlist could only be used from Python or Node code.
# python3-venv: `python3 -m venv DIR` in `sandshim -c`, what a refusal of `virtualenv` names.
# bc: shell test suites compute with it (a third of one real suite's files failed without it).
declare -rA k_includes=([python]="python3 python-is-python3 python3-pip" [node]="nodejs npm" [sh]="curl ca-certificates bc"
    [wrap]="python3 python-is-python3 python3-venv nodejs git make ca-certificates curl bc" [host]="")

g_force=0
g_only=()
g_state=""
g_base=""      # debootstrapped base rootfs shared by this run's images; removed on exit
g_rootfs=""    # rootfs being built; removed on exit
g_candidate="" # candidate tag being tested; removed on exit
g_docker=""

usage() {
    cat >&2 <<'USAGE'
usage: install/images.sh [--only python|node|sh|wrap|host]... [--force]
  --only NAME   build only this image (repeatable)
  --force       rebuild even when the image already exists
Images: sandshim/python:bookworm sandshim/node:bookworm sandshim/sh:bookworm sandshim/wrap:bookworm
        sandshim/host:bookworm (the empty base of images.NAME = host)
USAGE
}

image_tag() { printf 'sandshim/%s:%s\n' "$1" "$k_suite"; }

parse_args() {
    while (($#)); do
        case $1 in
            --force) g_force=1 ;;
            --only)
                [[ -n ${2:-} && -v k_includes[$2] ]] || die "--only takes one of: ${k_names[*]}"
                g_only+=("$2")
                shift
                ;;
            -h | --help) usage; exit 0 ;;
            *) usage; die "unknown option '$1'" ;;
        esac
        shift
    done
    ((${#g_only[@]})) || g_only=("${k_names[@]}")
}

# True when the image exists and was made by the current recipe version of image NAME ($2).
image_is_current() {
    local version
    version=$("$g_docker" image inspect -f '{{ index .Config.Labels "org.sandshim.image.version" }}' "$1" 2>/dev/null) || return 1
    [[ $version == "${k_image_versions[$2]}" ]]
}

# Prints the first deb URI for bookworm in the host's apt sources (one-line and deb822 formats),
# else the first one whose path ends in /debian, so no mirror host is written in this repo.
host_mirror() {
    local files=() f
    (($#)) || set -- /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources
    for f in "$@"; do
        [[ -f $f ]] && files+=("$f")
    done
    ((${#files[@]})) || return 0
    awk -v suite="$k_suite" '
        function consider(uri, suites,   n, s, i) {
            n = split(suites, s, /[ \t]+/)
            for (i = 1; i <= n; i++) {
                if (s[i] == suite && found == "") found = uri
                if (s[i] !~ /-/ && uri ~ /\/debian\/?$/ && fallback == "") fallback = uri
            }
        }
        function flush() {
            if (types ~ /(^|[ \t])deb([ \t]|$)/ && tolower(enabled) !~ /^(no|false)$/ && uris != "") {
                split(uris, u, /[ \t]+/)
                consider(u[1], suites)
            }
            types = uris = suites = enabled = ""
        }
        FNR == 1 { flush() }
        FILENAME ~ /\.sources$/ {
            if ($0 ~ /^[ \t]*$/) { flush(); next }
            if ($0 ~ /^[ \t#]/ || index($0, ":") == 0) next
            key = tolower(substr($0, 1, index($0, ":") - 1))
            val = substr($0, index($0, ":") + 1)
            gsub(/^[ \t]+|[ \t]+$/, "", val)
            if (key == "types") types = val
            else if (key == "uris") uris = val
            else if (key == "suites") suites = val
            else if (key == "enabled") enabled = val
            next
        }
        { sub(/#.*/, "") }
        $1 == "deb" {
            i = 2
            if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
            consider($i, $(i + 1))
        }
        END { flush(); print (found != "" ? found : fallback) }
    ' "${files[@]}"
}

debian_mirror() {
    local mirror=${SANDSHIM_DEBIAN_MIRROR:-}
    [[ -n $mirror ]] || mirror=$(host_mirror)
    [[ -n $mirror ]] || die "no Debian $k_suite mirror in /etc/apt/sources*; set SANDSHIM_DEBIAN_MIRROR=<mirror URL>"
    [[ $mirror =~ ^(https?|file):/ ]] || die "mirror '$mirror' is not an http(s) or file URL; set SANDSHIM_DEBIAN_MIRROR"
    printf '%s\n' "$mirror"
}

# debootstrap fetches with wget, which knows only the environment's proxy, not apt's.
export_apt_proxy() {
    local http_proxy_apt="" https_proxy_apt=""
    eval "$(apt-config shell http_proxy_apt Acquire::http::Proxy https_proxy_apt Acquire::https::Proxy)"
    if [[ -z ${http_proxy:-} && -n $http_proxy_apt && $http_proxy_apt != DIRECT ]]; then
        export http_proxy=$http_proxy_apt
    fi
    if [[ -z ${https_proxy:-} && -n $https_proxy_apt && $https_proxy_apt != DIRECT ]]; then
        export https_proxy=$https_proxy_apt
    fi
}

check_free_space() {
    local free_mb
    free_mb=$(df -Pm -- "$g_state" | awk 'NR == 2 { print $4 }')
    ((free_mb >= k_min_free_mb)) ||
        die "only ${free_mb} MiB free under $g_state; building needs ${k_min_free_mb} MiB (set SANDSHIM_STATE_DIR elsewhere)"
}

g_step=""   # "2/3" while building the second of three images, for the progress lines
g_started=0 # SECONDS when the builds began

progress() { say "[$1${g_step:+ $g_step}] $2 (${3}s)"; }

# Says what will be built and where the logs go, before the first slow step.
announce_builds() {
    say "building ${#@} image(s): $*; logs in $g_state (images-base.log, images-NAME.log)"
    g_started=$SECONDS
}

# Builds each image in turn, numbering the steps, and ends with the total time and the logs.
build_all() {
    local mirror=$1 name i=0
    shift
    announce_builds "$@"
    for name in "$@"; do
        i=$((i + 1))
        g_step="$i/$#"
        build_image "$name" "$mirror"
    done
    g_step=""
    say "built $# image(s) in $((SECONDS - g_started))s; logs in $g_state"
}

# debootstrap may die with proc/sys still mounted inside; unmount before deleting anything.
remove_rootfs() {
    local dir=$1 mnt
    [[ -n $dir && -d $dir ]] || return 0
    while read -r mnt; do
        umount -l -- "$mnt" 2>/dev/null || true
    done < <(awk -v d="$dir/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r)
    rm -rf --one-file-system -- "$dir"
}

cleanup() {
    remove_rootfs "$g_rootfs"
    remove_rootfs "$g_base"
    if [[ -n $g_candidate ]]; then
        "$g_docker" rmi "$g_candidate" >/dev/null 2>&1 || true
    fi
}

# Makes the minbase rootfs (dash, bash, coreutils, apt) that every image starts from.
make_base() {
    local mirror=$1 log="$g_state/images-base.log" start=$SECONDS
    : >"$log"
    say "[base] debootstrap $k_suite minbase from $mirror (log: $log)"
    g_base=$(mktemp -d "$g_state/rootfs-base.XXXXXX")
    chmod 0755 "$g_base" # becomes the image's /; mktemp's 0700 would lock out non-root users
    mkdir -p -- "$g_state/debootstrap-cache"
    if ! debootstrap --variant=minbase --components=main "--cache-dir=$g_state/debootstrap-cache" \
        "$k_suite" "$g_base" "$mirror" >>"$log" 2>&1; then
        say "last lines of $log:"
        tail -n 15 -- "$log" | sed 's/^/    /' >&2
        die "debootstrap failed (full log: $log); check the mirror or set SANDSHIM_DEBIAN_MIRROR"
    fi
    rm -f -- "$g_base"/var/cache/apt/archives/*.deb # kept in the cache dir; each copy would carry them
    progress base "debootstrap done" $((SECONDS - start))
}

# Installs packages into a copy of the base with the rootfs's own apt, from the same package lists.
chroot_install() {
    local dir=$1 log=$2 cache="$g_state/apt-archives" rc=0
    shift 2
    mkdir -p -- "$cache"
    cp -l -n -- "$cache"/*.deb "$dir/var/cache/apt/archives/" 2>/dev/null || true
    # No package may start a service on the host while we install into the chroot.
    printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
    chmod 0755 "$dir/usr/sbin/policy-rc.d"
    mount -t proc proc "$dir/proc"
    chroot "$dir" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
        ${http_proxy:+"http_proxy=$http_proxy"} ${https_proxy:+"https_proxy=$https_proxy"} \
        apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-unsafe-io "$@" \
        >>"$log" 2>&1 || rc=$?
    umount "$dir/proc"
    rm -f -- "$dir/usr/sbin/policy-rc.d"
    cp -l -n -- "$dir"/var/cache/apt/archives/*.deb "$cache/" 2>/dev/null || true
    ((rc == 0)) || die "apt-get install $* failed in the image rootfs (log: $log); check the mirror (SANDSHIM_DEBIAN_MIRROR) and re-run"
}

# Records what the image was built from, inside it: the Release date and every package version.
write_manifest() {
    local dir=$1 out=$1/etc/sandshim-image release
    mkdir -p -- "$out"
    release=$(find "$dir/var/lib/apt/lists" -maxdepth 1 -name "*_dists_${k_suite}_*Release" -print -quit)
    sed -n 's/^Date: *//p' "${release:-/dev/null}" | head -n 1 >"$out/debian-release-date"
    dpkg-query --admindir="$dir/var/lib/dpkg" -W -f='${Package}\t${Version}\t${Architecture}\n' |
        sort >"$out/packages.tsv"
}

# Drops what a single-use container never reads: package lists and caches, docs, man pages, logs.
trim_rootfs() {
    local dir=$1
    rm -rf -- "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/* "$dir"/var/cache/debconf/*-old \
        "$dir"/usr/share/doc/* "$dir"/usr/share/man/* "$dir"/usr/share/info/* \
        "$dir"/usr/share/lintian "$dir"/var/log/* "$dir"/tmp/* "$dir"/var/tmp/* "$dir"/debootstrap
    # debootstrap copied these from the host; the engine mounts its own at run time.
    : >"$dir/etc/resolv.conf"
    : >"$dir/etc/hostname"
    find "$dir/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf -- {} +
}

check_rootfs() {
    local name=$1 dir=$2 tool
    case $name in
        python) for tool in python3 python pip3 pip; do [[ -x $dir/usr/bin/$tool ]] || die "$name image: /usr/bin/$tool missing from the rootfs"; done ;;
        node) for tool in node npm npx; do [[ -x $dir/usr/bin/$tool ]] || die "$name image: /usr/bin/$tool missing from the rootfs"; done ;;
        sh) for tool in sh bash timeout curl bc; do [[ -x $dir/usr/bin/$tool ]] || die "$name image: /usr/bin/$tool missing from the rootfs"; done ;;
        wrap) for tool in sh bash python3 node git make curl bc; do [[ -x $dir/usr/bin/$tool ]] || die "$name image: /usr/bin/$tool missing from the rootfs"; done ;;
    esac
}

import_rootfs() {
    local name=$1 dir=$2 tag=$3 log=$4 date sha
    date=$(cat "$dir/etc/sandshim-image/debian-release-date")
    date=$(date -u -d "$date" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || printf unknown)
    sha=$(sha256sum <"$dir/etc/sandshim-image/packages.tsv" | cut -d' ' -f1)
    local changes=(
        --change 'CMD ["/bin/sh"]'
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
        --change 'ENV LANG=C.UTF-8'
        --change "LABEL org.sandshim.image=$name"
        --change "LABEL org.sandshim.image.version=${k_image_versions[$name]}"
        --change "LABEL org.sandshim.debian.suite=$k_suite"
        --change "LABEL org.sandshim.debian.release-date=$date"
        --change "LABEL org.sandshim.debian.packages-sha256=$sha"
    )
    tar -C "$dir" --numeric-owner -cf - . | "$g_docker" import "${changes[@]}" - "$tag" >>"$log" 2>&1 ||
        die "docker import failed for $name (log: $log); check that the engine answers (docker info) and has disk space, then re-run"
}

# Runs a command in the image under the hardening the shim uses, and checks what it prints.
smoke_expect() {
    local tag=$1 want=$2 got
    shift 2
    got=$(timeout 120 "$g_docker" run --rm --network none --read-only --cap-drop ALL \
        --security-opt no-new-privileges --user 65534:65534 --label org.sandshim.smoke=1 \
        "$tag" "$@" 2>&1) || die "smoke test failed in $tag: '$*' said: $got; the candidate is removed and the old image kept: re-run with --force"
    [[ $got == "$want" ]] || die "smoke test failed in $tag: '$*' printed '$got', expected '$want'; the candidate is removed and the old image kept: re-run with --force"
}

smoke_test() {
    local name=$1 tag=$2
    case $name in
        python)
            smoke_expect "$tag" ok python3 -c 'import socket, json, subprocess, ssl, sqlite3; print("ok")'
            smoke_expect "$tag" 3 python -c 'import sys; print(sys.version_info[0])'
            smoke_expect "$tag" ok sh -c 'HOME=/tmp pip --version >/dev/null && echo ok'
            ;;
        node)
            smoke_expect "$tag" ok node -e 'require("net"); console.log("ok")'
            # npm is a script run by node: proves the node image runs `npm`/`npx` as the host does.
            smoke_expect "$tag" ok sh -c 'HOME=/tmp npm --version >/dev/null && HOME=/tmp npx --version >/dev/null && echo ok'
            ;;
        sh)
            smoke_expect "$tag" ok sh -c 'timeout 5 true && bash -c "echo ok"'
            smoke_expect "$tag" ok sh -c 'curl --version >/dev/null && echo ok'
            # shellcheck disable=SC2016 # $t expands inside the container
            smoke_expect "$tag" ok sh -c 'for t in cat env id ls mkdir mktemp rm sleep timeout; do command -v $t >/dev/null || exit 1; done; echo ok'
            ;;
        wrap)
            # shellcheck disable=SC2016 # $t expands inside the container
            smoke_expect "$tag" ok bash -c 'for t in sh python3 python node git make curl cat sed awk grep find xargs tar timeout; do command -v $t >/dev/null || exit 1; done; echo ok'
            smoke_expect "$tag" ok python3 -c 'import json, sqlite3, ssl; print("ok")'
            smoke_expect "$tag" ok node -e 'require("net"); console.log("ok")'
            ;;
    esac
}

# Gives the tested candidate the final tag and drops the image it replaces, when nothing uses it.
promote() {
    local candidate=$1 tag=$2 old
    old=$("$g_docker" image inspect -f '{{.Id}}' "$tag" 2>/dev/null || true)
    "$g_docker" tag "$candidate" "$tag"
    "$g_docker" rmi "$candidate" >/dev/null
    g_candidate=""
    if [[ -n $old && $old != "$("$g_docker" image inspect -f '{{.Id}}' "$tag")" ]]; then
        "$g_docker" rmi "$old" >/dev/null 2>&1 || true
    fi
}

# The base of images.NAME = host: no files, only the directories the engine mounts over and the
# links of a usr-merged system (Debian 12), so everything that runs comes from the host read-only.
build_host_base() {
    local tag=$1 log=$2
    g_rootfs=$(mktemp -d "$g_state/rootfs-host.XXXXXX")
    chmod 0755 "$g_rootfs"
    # /sbin stays a directory: docker puts its init at /sbin/docker-init, which a link into the
    # read-only /usr could not take (the shim mounts the host's ldconfig there).
    mkdir -p -- "$g_rootfs"/{usr,etc,tmp,proc,sys,dev,sbin}
    chmod 1777 "$g_rootfs/tmp"
    local link
    for link in bin lib lib64; do ln -s "usr/$link" "$g_rootfs/$link"; done
    g_candidate="sandshim/host:candidate-$$"
    tar -C "$g_rootfs" --numeric-owner -cf - . | "$g_docker" import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' --change 'LABEL org.sandshim.image=host' \
        --change "LABEL org.sandshim.image.version=${k_image_versions[host]}" - "$g_candidate" >>"$log" 2>&1 ||
        die "docker import failed for host (log: $log); check that the engine answers (docker info), then re-run"
    remove_rootfs "$g_rootfs"
    g_rootfs=""
    promote "$g_candidate" "$tag"
    progress host "ready: $tag (empty base)" 0
}

build_image() {
    local name=$1 mirror=$2 tag log start=$SECONDS size include
    tag=$(image_tag "$name")
    log="$g_state/images-$name.log"
    : >"$log"
    if [[ $name == host ]]; then
        build_host_base "$tag" "$log"
        return
    fi
    [[ -n $g_base ]] || make_base "$mirror"
    start=$SECONDS
    say "[$name] building $tag (log: $log)"
    g_rootfs=$(mktemp -d "$g_state/rootfs-$name.XXXXXX")
    cp -a -- "$g_base/." "$g_rootfs/"
    chmod 0755 "$g_rootfs"
    include=${k_includes[$name]}
    if [[ -n $include ]]; then
        # shellcheck disable=SC2086 # a space-separated package list
        chroot_install "$g_rootfs" "$log" $include
        progress "$name" "installed $include" $((SECONDS - start))
    fi
    check_rootfs "$name" "$g_rootfs"
    write_manifest "$g_rootfs"
    trim_rootfs "$g_rootfs"
    g_candidate="sandshim/$name:candidate-$$"
    import_rootfs "$name" "$g_rootfs" "$g_candidate" "$log"
    remove_rootfs "$g_rootfs"
    g_rootfs=""
    progress "$name" "imported" $((SECONDS - start))
    smoke_test "$name" "$g_candidate"
    promote "$g_candidate" "$tag"
    size=$("$g_docker" image inspect -f '{{.Size}}' "$tag")
    progress "$name" "ready: $tag, $((size / 1024 / 1024)) MiB" $((SECONDS - start))
}

# A run killed with SIGKILL leaves its rootfs and candidate tag; holding the lock, nobody else uses them.
remove_leftovers() {
    local dir tag
    for dir in "$g_state"/rootfs-*; do
        [[ -d $dir ]] || continue
        say "removing the rootfs of an interrupted run: $dir"
        remove_rootfs "$dir"
    done
    while read -r tag; do
        "$g_docker" rmi "$tag" >/dev/null 2>&1 || true
    done < <("$g_docker" images --format '{{.Repository}}:{{.Tag}}' --filter 'reference=sandshim/*:candidate-*')
}

# podman keeps its own image store: copies each requested image from docker into it, under the
# same id (so a copy that is current is skipped, and the old one is dropped when replaced). A no-op
# when podman is not installed.
sync_podman_images() {
    local podman name tag want have
    podman=$(command -v podman) || return 0
    for name in "${g_only[@]}"; do
        tag=$(image_tag "$name")
        want=$("$g_docker" image inspect -f '{{.Id}}' "$tag" 2>/dev/null) || continue
        have=$("$podman" image inspect -f '{{.Id}}' "$tag" 2>/dev/null || true)
        if [[ -n $have && sha256:${have#sha256:} == "$want" ]]; then
            say "[$name] podman already has $tag"
            continue
        fi
        say "[$name] copying $tag into podman's image store"
        "$g_docker" save "$tag" | "$podman" load -q >/dev/null ||
            die "podman load of $tag failed; check \`podman info\`"
        [[ -z $have ]] || "$podman" rmi "$have" >/dev/null 2>&1 || true
    done
}

# Prints the names of the requested images that need building.
images_to_build() {
    local name
    for name in "${g_only[@]}"; do
        if ((g_force)) || ! image_is_current "$(image_tag "$name")" "$name"; then
            printf '%s\n' "$name"
        else
            say "[$name] $(image_tag "$name") already exists; skipping (use --force to rebuild)"
        fi
    done
}

main() {
    local args=("$@") todo mirror lockfd
    parse_args "$@"
    g_docker=$(command -v docker) || die "no docker client on PATH; run install/deps.sh"
    on_exit engine_stop_if_started
    engine_ensure_running || die "no Docker engine to import the images into (see above)"
    mapfile -t todo < <(images_to_build 2>/dev/null)
    ((${#todo[@]})) || { images_to_build >/dev/null; sync_podman_images; return 0; }
    reexec_as_root "$(realpath "${BASH_SOURCE[0]}")" "${args[@]}"
    command -v debootstrap >/dev/null 2>&1 || die "debootstrap is not installed; run install/deps.sh"
    g_state=$(state_dir)
    exec {lockfd}>"$g_state/images.lock"
    flock -w 1800 "$lockfd" || die "another install/images.sh has held $g_state/images.lock for 30 minutes; wait for it, or kill it, then re-run"
    # Decide again under the lock: a run we waited for may have built some of them.
    mapfile -t todo < <(images_to_build)
    on_exit cleanup
    remove_leftovers
    check_free_space
    mirror=$(debian_mirror)
    export_apt_proxy
    build_all "$mirror" "${todo[@]}"
    sync_podman_images
}

# Sourcing (for tests) defines the functions without running anything.
[[ ${BASH_SOURCE[0]} != "$0" ]] || main "$@"
