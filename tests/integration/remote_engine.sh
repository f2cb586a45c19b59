# shellcheck shell=bash
# A second Docker engine standing in for another machine: its own dockerd (data root, exec root,
# pid file and unix socket in a directory of its own) in a network namespace the suite makes,
# reached only over TLS at an address of that namespace through a veth pair, and in a mount
# namespace where the suite's directory ($T, which holds the workspace) is an empty tmpfs, so a
# run can only work with a workspace that travelled. Source it after lib.sh; needs root, dockerd,
# ip and openssl. Traffic goes only between the pair's two addresses (10.213.N.1 and .2/30);
# the engine touches no network of the host's (--bridge=none, no iptables, no ip6tables).
#
#   REMOTE_ENGINE_ENDPOINT  tcp://ADDRESS:2376, for sandshim's engine.endpoint
#   REMOTE_ENGINE_CERTS     the client's ca.pem, cert.pem, key.pem (engine.tls_cert_path)
#
# remote_engine_stop (run it from the suite's exit trap) stops the daemon by its pid (and what a
# killed one left of its containerd) and removes the namespace and the files. remote_engine_kill
# kills the daemon at once; remote_engine_launch starts it again on the same data.
#
# Several engines: set REMOTE_ENGINE_INDEX (0, 1, …) before each remote_engine_start, which then
# gets a namespace, veth pair and /30 of its own (10.213.N.4I+1 and .4I+2) and its own CA;
# remote_engine_save NAME keeps the variables above under NAME, remote_engine_use NAME makes
# NAME's the current ones again (every function works on the current engine).

REMOTE_ENGINE_INDEX=${REMOTE_ENGINE_INDEX:-0}
REMOTE_ENGINE_DIR=""
REMOTE_ENGINE_NETNS=""
REMOTE_ENGINE_ENDPOINT=""
REMOTE_ENGINE_CERTS=""
REMOTE_ENGINE_SOCKET=""

# The engine's client on its local socket (inside its namespaces, where that socket lives).
remote_docker() { docker -H "unix://$REMOTE_ENGINE_SOCKET" "$@"; }

remote_engine_pid() { cat "$REMOTE_ENGINE_DIR/dockerd.pid" 2>/dev/null || true; }

remote_engine_save() { # NAME
    local v from
    for v in DIR NETNS ENDPOINT CERTS SOCKET; do
        from=REMOTE_ENGINE_$v
        printf -v "REMOTE_ENGINE_${1}_$v" '%s' "${!from-}"
    done
}

remote_engine_use() { # NAME
    local v from
    for v in DIR NETNS ENDPOINT CERTS SOCKET; do
        from=REMOTE_ENGINE_${1}_$v
        printf -v "REMOTE_ENGINE_$v" '%s' "${!from-}"
    done
}

# CA, server certificate for ADDRESS (an IP SAN), client certificate: made here, used here only.
remote_engine_certs() { # ADDRESS DIR
    local address=$1 dir=$2
    mkdir -p "$dir/server" "$dir/client"
    (
        cd "$dir"
        openssl req -x509 -newkey rsa:2048 -nodes -keyout ca-key.pem -out ca.pem -days 2 \
            -subj "/CN=sandshim test CA" 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -keyout server/key.pem -out server.csr \
            -subj "/CN=$address" 2>/dev/null
        printf 'subjectAltName=IP:%s\nextendedKeyUsage=serverAuth\n' "$address" >server.ext
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial \
            -out server/cert.pem -days 2 -extfile server.ext 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -keyout client/key.pem -out client.csr \
            -subj "/CN=sandshim" 2>/dev/null
        printf 'extendedKeyUsage=clientAuth\n' >client.ext
        openssl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial \
            -out client/cert.pem -days 2 -extfile client.ext 2>/dev/null
        cp ca.pem server/ca.pem
        cp ca.pem client/ca.pem
        chmod 644 client/*.pem
    ) || fail "openssl could not make the test certificates"
}

# Starts the engine and loads IMAGE... into it from the shared engine.
remote_engine_start() { # IMAGE...
    [[ $(id -u) == 0 ]] || skip_or_fail "a second dockerd in its own namespaces needs root"
    local tool
    for tool in dockerd ip openssl unshare nsenter; do
        command -v "$tool" >/dev/null || skip_or_fail "no $tool to start a remote engine with"
    done
    local n=$(($$ % 250 + 1)) i=$REMOTE_ENGINE_INDEX
    local host_address=10.213.$n.$((4 * i + 1)) address=10.213.$n.$((4 * i + 2))
    local host_link=srt$$${i}h engine_link=srt$$${i}e
    REMOTE_ENGINE_DIR=$(mktemp -d /tmp/sandshim-re.XXXXXX)
    REMOTE_ENGINE_NETNS=sandshim-re-$$-$i
    REMOTE_ENGINE_SOCKET=$REMOTE_ENGINE_DIR/docker.sock
    REMOTE_ENGINE_ENDPOINT=tcp://$address:2376
    REMOTE_ENGINE_CERTS=$REMOTE_ENGINE_DIR/tls/client
    chmod 755 "$REMOTE_ENGINE_DIR"
    remote_engine_certs "$address" "$REMOTE_ENGINE_DIR/tls"
    chmod 755 "$REMOTE_ENGINE_DIR/tls"
    ip netns add "$REMOTE_ENGINE_NETNS"
    ip link add "$host_link" type veth peer name "$engine_link"
    ip link set "$engine_link" netns "$REMOTE_ENGINE_NETNS"
    ip addr add "$host_address/30" dev "$host_link"
    ip link set "$host_link" up
    ip netns exec "$REMOTE_ENGINE_NETNS" ip addr add "$address/30" dev "$engine_link"
    ip netns exec "$REMOTE_ENGINE_NETNS" ip link set "$engine_link" up
    ip netns exec "$REMOTE_ENGINE_NETNS" ip link set lo up
    echo '{}' >"$REMOTE_ENGINE_DIR/daemon.json" # never /etc/docker/daemon.json
    remote_engine_launch
    local image
    for image in "$@"; do
        docker save "$image" | remote_docker load >/dev/null || fail "cannot load $image into the remote engine"
    done
}

# Starts the daemon in the namespaces remote_engine_start made (again, after remote_engine_kill:
# the same data root, so its images are still there) and waits until it answers over TLS.
remote_engine_launch() {
    local address=${REMOTE_ENGINE_ENDPOINT#tcp://}
    address=${address%:2376}
    local dir=$REMOTE_ENGINE_DIR tls=$REMOTE_ENGINE_DIR/tls/server
    # setsid: the daemon ignores the suite's process group and terminal signals.
    # nsenter, not `ip netns exec`: that one remounts /sys, hiding the host's cgroup mounts.
    setsid nsenter --net="/run/netns/$REMOTE_ENGINE_NETNS" unshare --mount --propagation private -- \
        sh -c 'mount -t tmpfs -o size=1m,mode=755 sandshim-hidden "$1" && shift && exec "$@"' sh "$T" \
        dockerd --config-file "$dir/daemon.json" --data-root "$dir/data" --exec-root "$dir/exec" \
        --pidfile "$dir/dockerd.pid" -H "unix://$REMOTE_ENGINE_SOCKET" -H "tcp://$address:2376" \
        --tlsverify --tlscacert "$tls/ca.pem" --tlscert "$tls/cert.pem" --tlskey "$tls/key.pem" \
        --bridge=none --iptables=false --ip6tables=false --ip-masq=false --ip-forward=false \
        >>"$dir/dockerd.log" 2>&1 </dev/null &
    disown
    local until=$((SECONDS + 90)) started=$EPOCHREALTIME
    until [[ -s $dir/dockerd.pid ]] && timeout 5 docker -H "$REMOTE_ENGINE_ENDPOINT" --tlsverify \
        --tlscacert "$REMOTE_ENGINE_CERTS/ca.pem" --tlscert "$REMOTE_ENGINE_CERTS/cert.pem" \
        --tlskey "$REMOTE_ENGINE_CERTS/key.pem" version >/dev/null 2>&1; do
        if ((SECONDS > until)); then
            tail -20 "$dir/dockerd.log" >&2
            fail "the remote dockerd did not answer over TLS within 90 s (log: $dir/dockerd.log)"
        fi
        sleep 0.25
    done
    say "remote dockerd answered at $REMOTE_ENGINE_ENDPOINT after $(ms_since "$started") ms"
}

# The engine dies at once (SIGKILL to dockerd's pid): its containers' processes are left to its
# containerd, which a later remote_engine_launch takes back.
remote_engine_kill() {
    local pid
    pid=$(remote_engine_pid)
    [[ -n $pid ]] || fail "the remote dockerd has no pid file"
    kill -KILL "$pid"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
    rm -f "$REMOTE_ENGINE_DIR/dockerd.pid"
}

# The pids of the containerd and shims a killed dockerd left behind: their command lines name this
# engine's own directory.
remote_engine_orphans() {
    local proc cmd
    [[ -n $REMOTE_ENGINE_DIR ]] || return 0
    for proc in /proc/[0-9]*; do
        { cmd=$(tr '\0' ' ' <"$proc/cmdline"); } 2>/dev/null || continue
        [[ $cmd == *containerd*"$REMOTE_ENGINE_DIR/"* ]] && echo "${proc#/proc/}"
    done
    return 0
}

# True when no `sandshim run` of this suite is left: a run's guardian removes its container again
# until the run's deadline has passed, and one whose engine has gone goes on for minutes. Only
# processes whose working directory is in the suite's $T count (another suite's are not ours).
remote_runs_ended() {
    local proc cmd cwd
    for proc in /proc/[0-9]*; do
        { cmd=$(tr '\0' ' ' <"$proc/cmdline"); } 2>/dev/null || continue
        [[ $cmd == "$SANDSHIM_BIN run "* ]] || continue
        cwd=$(readlink "$proc/cwd" 2>/dev/null) || continue
        [[ $cwd != "$T"/* ]] || return 1
    done
}

# Stops the daemon by its pid (TERM, then KILL after 20 s), then removes the namespace and files.
remote_engine_stop() {
    local dir=$REMOTE_ENGINE_DIR pid _
    [[ -n $dir && -d $dir ]] || return 0
    pid=$(remote_engine_pid)
    if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
        remote_docker ps -aq 2>/dev/null | xargs -r docker -H "unix://$REMOTE_ENGINE_SOCKET" rm -f >/dev/null 2>&1 || true
        kill -TERM "$pid"
        for _ in $(seq 200); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        ! kill -0 "$pid" 2>/dev/null || kill -KILL "$pid"
    fi
    remote_engine_orphans | xargs -r kill -KILL 2>/dev/null || true
    [[ -z $REMOTE_ENGINE_NETNS ]] || ip netns del "$REMOTE_ENGINE_NETNS" 2>/dev/null || true
    rm -rf "$dir" || true
}
