#!/usr/bin/env bash
# What sandbox.network = allowlist costs a download: the same Python client fetches from an HTTP
# server on 127.0.0.1, once directly on the host and once from a sandboxed run through the
# forwarder and sandshim's egress proxy (the trusted config maps a test name to 127.0.0.1).
# Side by side, the order alternating each round:
#   - latency: ms per request of N small GETs (each a new connection; timed inside the client,
#     so the container's start is not counted), p50 of the rounds;
#   - throughput: MiB/s of one 100 MiB download.
# Asserts nothing; traffic stays on loopback.
#
#   bench/egress.sh [BUILD_DIR]            (default: build)
#   ROUNDS=3 N=200 SIZE_MIB=100 bench/egress.sh
set -euo pipefail

build=${1:-build}
bin=$(realpath "${SANDSHIM_BIN:-$build/sandshim}")
rounds=${ROUNDS:-3}
n=${N:-200}
size_mib=${SIZE_MIB:-100}
python=${PYTHON:-/usr/bin/python3}
engine=${ENGINE:-docker}
[[ -x $bin ]] || {
  echo "egress.sh: $bin is missing: build the sandshim and sandshim-forward targets first" >&2
  exit 2
}

work=$(mktemp -d /tmp/sandshim-egress-bench.XXXXXX)
server_pid=
cleanup() {
  [[ -z $server_pid ]] || kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
export HOME=$work/home XDG_CONFIG_HOME=$work/config XDG_STATE_HOME=$work/state
export SANDSHIM_AUDIT_DB=$work/audit.db
mkdir -p "$HOME" "$XDG_CONFIG_HOME/sandshim" "$work/www" "$work/ws"
git -C "$work/ws" init -q
chmod 755 "$work" "$work/ws"
printf 'ok\n' >"$work/www/small.txt"
head -c "$((size_mib << 20))" /dev/zero >"$work/www/big.bin"

"$python" - "$work" <<'EOF' &
import functools, http.server, os, sys
base = sys.argv[1]
http.server.SimpleHTTPRequestHandler.log_message = lambda *_: None
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=base + "/www")
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
open(base + "/port.tmp", "w").write(str(server.server_address[1]))
os.rename(base + "/port.tmp", base + "/port")
server.serve_forever()
EOF
server_pid=$!
for _ in $(seq 100); do [[ -s $work/port ]] && break; sleep 0.1; done
port=$(cat "$work/port")

cat >"$XDG_CONFIG_HOME/sandshim/config" <<EOF
[engine]
name = $engine
[sandbox]
network = allowlist
timeout = 10m
memory = 1g
[network]
allow = bench-upstream.example:$port
resolve = bench-upstream.example=127.0.0.1
EOF

cat >"$work/ws/client.py" <<'EOF'
# client.py latency URL N | throughput URL: prints ms per request, or MiB/s.
import sys, time, urllib.request
mode, url = sys.argv[1], sys.argv[2]
if mode == "latency":
    n = int(sys.argv[3])
    urllib.request.urlopen(url).read()  # warm
    start = time.perf_counter()
    for _ in range(n):
        urllib.request.urlopen(url).read()
    print(f"{(time.perf_counter() - start) * 1000 / n:.3f}")
else:
    start = time.perf_counter()
    total = 0
    with urllib.request.urlopen(url) as reply:
        while chunk := reply.read(1 << 20):
            total += len(chunk)
    print(f"{total / (1 << 20) / (time.perf_counter() - start):.1f}")
EOF

direct() { (cd "$work/ws" && env -u http_proxy -u HTTP_PROXY "$python" client.py "$@"); }
proxied() { (cd "$work/ws" && "$bin" run -- python3 client.py "$@"); }

declare -A results
for ((round = 0; round < rounds; ++round)); do
  order=(direct proxied)
  ((round % 2 == 0)) || order=(proxied direct)
  for way in "${order[@]}"; do
    results[$way.latency]+="$($way latency "http://$([[ $way == direct ]] && echo 127.0.0.1 || echo bench-upstream.example):$port/small.txt" "$n") "
    results[$way.throughput]+="$($way throughput "http://$([[ $way == direct ]] && echo 127.0.0.1 || echo bench-upstream.example):$port/big.bin") "
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '%-10s %22s %24s\n' "path" "ms/request (p50 rounds)" "MiB/s, ${size_mib} MiB (p50)"
for way in direct proxied; do
  printf '%-10s %22s %24s   rounds: %s| %s\n' "$way" \
    "$(median <<<"${results[$way.latency]}")" "$(median <<<"${results[$way.throughput]}")" \
    "${results[$way.latency]}" "${results[$way.throughput]}"
done
echo "(direct: the host's python3 to 127.0.0.1; proxied: a sandboxed run, forwarder -> unix socket -> proxy; $n requests, $rounds rounds)"
