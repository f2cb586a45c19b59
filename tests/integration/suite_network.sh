#!/usr/bin/env bash
# sandbox.network = allowlist: the container keeps only loopback, and its proxy variables lead to
# sandshim's filtering proxy on the host, which lets through only the names in network.allow.
# Traffic only ever goes to loopback: the upstream servers listen on 127.0.0.1 and are reached
# only because the suite's trusted config maps a test name to that exact address
# (network.resolve). Each refusal is proven beside the allowed request it differs from: Python
# urllib, curl (HTTP proxy and SOCKS5), `pip download` from a PEP 503 index and `npm install`
# from a registry stand-in, all served from $T/www.
# sandshim-test-engines: docker podman
# sandshim-test-labels: network
# shellcheck disable=SC2016 # single-quoted scripts are expanded inside the sandbox
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v openssl >/dev/null || skip_or_fail "openssl is missing (install/deps.sh installs it)"

# --- upstream servers: HTTP and TLS on 127.0.0.1, with a test CA made now ----------------------
mkdir -p "$T/www" "$WS/probe"
printf 'hello through network.allow\n' >"$T/www/hello.txt"
"$HOST_PY" -c 'import sys; sys.stdout.write("x" * (1 << 20))' >"$T/www/big.bin"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
    -subj /CN=sandshim-test-ca -keyout "$T/ca.key" -out "$T/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=egress-test.example \
    -keyout "$T/server.key" -out "$T/server.csr" 2>/dev/null
printf 'subjectAltName=DNS:egress-test.example\n' >"$T/san.ext"
openssl x509 -req -in "$T/server.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial -days 1 \
    -extfile "$T/san.ext" -out "$T/server.pem" 2>/dev/null
cp "$T/ca.pem" "$WS/probe/test-ca.crt" # not *.pem: sandbox.hide masks those

# A PEP 503 simple index holding one tiny wheel, and an npm registry stand-in (the package's
# metadata document and its tarball, laid out as npm packs it), served by the upstreams below.
"$HOST_PY" - "$T/www" <<'EOF'
import base64, hashlib, io, json, os, sys, tarfile, zipfile
www = sys.argv[1]
def write(path, data):
    os.makedirs(os.path.dirname(os.path.join(www, path)), exist_ok=True)
    with open(os.path.join(www, path), "wb") as f:
        f.write(data)
def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"
files = {"sandshim_probe/__init__.py": b"ANSWER = 42\n",
         "sandshim_probe-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: sandshim-probe\nVersion: 1.0\n",
         "sandshim_probe-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: sandshim-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
record = "\n".join(record_line(n, d) for n, d in files.items()) + "\nsandshim_probe-1.0.dist-info/RECORD,,\n"
wheel = io.BytesIO()
with zipfile.ZipFile(wheel, "w") as z:
    for name, data in {**files, "sandshim_probe-1.0.dist-info/RECORD": record.encode()}.items():
        z.writestr(name, data)
whl = "sandshim_probe-1.0-py3-none-any.whl"
write("files/" + whl, wheel.getvalue())
sha = hashlib.sha256(wheel.getvalue()).hexdigest()
write("simple/index.html", b'<a href="sandshim-probe/">sandshim-probe</a>\n')
write("simple/sandshim-probe/index.html", f'<a href="../../files/{whl}#sha256={sha}">{whl}</a>\n'.encode())
tgz = io.BytesIO()
with tarfile.open(fileobj=tgz, mode="w:gz") as t:
    for name, data in {"package/package.json": b'{"name": "sandshim-probe-pkg", "version": "1.0.0", "main": "index.js"}\n',
                       "package/index.js": b"module.exports = 42;\n"}.items():
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(data), 0o644
        t.addfile(info, io.BytesIO(data))
write("npm-tarballs/sandshim-probe-pkg-1.0.0.tgz", tgz.getvalue())
integrity = "sha512-" + base64.b64encode(hashlib.sha512(tgz.getvalue()).digest()).decode()
version = {"name": "sandshim-probe-pkg", "version": "1.0.0", "main": "index.js",
           "dist": {"tarball": "TARBALL_BASE/npm-tarballs/sandshim-probe-pkg-1.0.0.tgz",
                    "shasum": hashlib.sha1(tgz.getvalue()).hexdigest(), "integrity": integrity}}
write("npm-template.json", json.dumps({"name": "sandshim-probe-pkg", "dist-tags": {"latest": "1.0.0"},
                                       "versions": {"1.0.0": version}}).encode())
EOF

"$HOST_PY" - "$T" <<'EOF' &
import functools, http.server, os, ssl, sys, threading
base = sys.argv[1]
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=base + "/www")
class Quiet(http.server.ThreadingHTTPServer):
    def handle_error(self, *_): pass
plain = Quiet(("127.0.0.1", 0), handler)
tls = Quiet(("127.0.0.1", 0), handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(base + "/server.pem", base + "/server.key")
tls.socket = context.wrap_socket(tls.socket, server_side=True)
http.server.SimpleHTTPRequestHandler.log_message = lambda *_: None
for server in (plain, tls):
    threading.Thread(target=server.serve_forever, daemon=True).start()
with open(base + "/ports.tmp", "w") as f:
    f.write(f"{plain.server_address[1]} {tls.server_address[1]}\n")
os.rename(base + "/ports.tmp", base + "/ports")
threading.Event().wait(600)
EOF
BG_PIDS+=($!)
for _ in $(seq 100); do
    [[ -s $T/ports ]] && break
    sleep 0.1
done
read -r HTTP_PORT TLS_PORT <"$T/ports"
start_loopback_listener # another loopback port of the host: LISTEN_PORT

cat >"$WS/probe/fetch.py" <<'EOF'
# fetch.py URL [direct]: 42 and the body when the fetch worked; 73 and the error otherwise.
# `direct`: NO_PROXY is dropped, so even 127.0.0.1 goes to the proxy.
import os, ssl, sys, urllib.error, urllib.request
if sys.argv[2:] == ["direct"]:
    for name in ("NO_PROXY", "no_proxy"):
        os.environ.pop(name, None)
context = ssl.create_default_context(cafile=os.path.join(os.path.dirname(__file__), "test-ca.crt"))
try:
    with urllib.request.urlopen(sys.argv[1], timeout=10, context=context) as reply:
        sys.stdout.write(reply.read().decode())
    sys.exit(42)
except urllib.error.HTTPError as e:
    print(f"HTTP {e.code} {e.reason}: {e.read().decode().strip()}")
except Exception as e:
    print(f"{type(e).__name__}: {e}")
sys.exit(73)
EOF
cat >"$WS/probe/connect_via_proxy.py" <<'EOF'
# connect_via_proxy.py HOST:PORT: 42 when the proxy opens the tunnel, 73 (and its answer) if not.
import os, socket, sys
proxy = os.environ["HTTPS_PROXY"].rsplit(":", 1)
s = socket.create_connection(("127.0.0.1", int(proxy[1])), timeout=10)
s.sendall(f"CONNECT {sys.argv[1]} HTTP/1.1\r\nHost: {sys.argv[1]}\r\n\r\n".encode())
answer = s.recv(4096).decode(errors="replace")
print(answer.splitlines()[0] if answer else "no answer")
sys.exit(42 if answer.startswith("HTTP/1.1 200") else 73)
EOF
cat >"$WS/probe/raw.py" <<'EOF'
# raw.py dns NAME | tcp ADDRESS PORT: 42 when it worked, 73 (and the error) when it failed.
import socket, sys
try:
    if sys.argv[1] == "dns":
        socket.getaddrinfo(sys.argv[2], 443)
    else:
        socket.create_connection((sys.argv[2], int(sys.argv[3])), timeout=5).close()
except OSError as e:
    print(f"{type(e).__name__}: {e}")
    sys.exit(73)
sys.exit(42)
EOF

# The suite's trusted user config: the allowlist and the mapping of the test name to loopback.
allow_config() { # EXTRA-ALLOW-WORDS...
    write_user_config <<EOF
[sandbox]
network = allowlist
timeout = 30s
[network]
allow = egress-test.example:$HTTP_PORT egress-test.example:$TLS_PORT localhost:$HTTP_PORT $*
resolve = egress-test.example=127.0.0.1 mapped-test.example=127.0.0.1
EOF
}
allow_config
HTTP_URL=http://egress-test.example:$HTTP_PORT
TLS_URL=https://egress-test.example:$TLS_PORT

check "allowed name, plain HTTP: Python urllib fetches through the proxy"
expect_exit 42 sandshim run -- python3 probe/fetch.py "$HTTP_URL/hello.txt"
expect_file_is "$OUT" "hello through network.allow"
expect_run last error 42

check "allowed name, TLS (CONNECT) with the test CA"
expect_exit 42 sandshim run -- python3 probe/fetch.py "$TLS_URL/hello.txt"
expect_file_is "$OUT" "hello through network.allow"

# What agents run: curl (sh image), pip (python image), npm (node image), each through the
# proxy to an allowed name, and refused for a name the allowlist does not hold (mapped-test.example
# resolves to the same upstream through network.resolve, so only network.allow tells them apart).
# Each script exits 42 when the tool did its part, 73 when the tool failed, 3 when the image lacks it.
# pip gets one retry: its retry warning is where it prints the proxy's refusal.
CURL='command -v curl >/dev/null || { echo "no curl in the image: rebuild it with install/images.sh"; exit 3; }
curl -sS --fail-with-body --cacert probe/test-ca.crt "$1" && exit 42 || exit 73'
check "curl: plain HTTP and HTTPS to an allowed name through the proxy"
expect_exit 42 sandshim run --image sandshim/sh:bookworm -- sh -c "$CURL" curl "$HTTP_URL/hello.txt"
expect_file_is "$OUT" "hello through network.allow"
expect_exit 42 sandshim run --image sandshim/sh:bookworm -- sh -c "$CURL" curl "$TLS_URL/hello.txt"
expect_file_is "$OUT" "hello through network.allow"

check "curl: an unlisted name is refused, and the refusal names network.allow"
expect_exit 73 sandshim run --image sandshim/sh:bookworm -- sh -c "$CURL" curl "http://mapped-test.example:$HTTP_PORT/hello.txt"
expect_contains "sandshim: mapped-test.example:$HTTP_PORT is not in network.allow" "$OUT"
expect_contains "The requested URL returned error: 403" "$ERR"
# For a refused CONNECT curl prints only the status code; sandshim's own line names the key.
expect_exit 73 sandshim run --image sandshim/sh:bookworm -- sh -c "$CURL" curl "https://mapped-test.example:$TLS_PORT/hello.txt"
expect_contains "CONNECT tunnel failed, response 403" "$ERR"
expect_contains "only the names in network.allow are reachable" "$ERR"
expect_not_contains "hello" "$OUT"

# SOCKS5 on the proxy's port: socks5h sends the name (checked like CONNECT's), socks5 an address.
SOCKS='curl -sS --fail-with-body --noproxy "" --cacert probe/test-ca.crt --proxy "$1://127.0.0.1:${HTTPS_PROXY##*:}" "$2" && exit 42 || exit 73'
check "SOCKS5: curl to an allowed name works; an unlisted name and an IP address are refused"
expect_exit 42 sandshim run --image sandshim/sh:bookworm -- sh -c "$SOCKS" curl socks5h "$TLS_URL/hello.txt"
expect_file_is "$OUT" "hello through network.allow"
expect_exit 73 sandshim run --image sandshim/sh:bookworm -- sh -c "$SOCKS" curl socks5h "https://mapped-test.example:$TLS_PORT/hello.txt"
expect_contains "SOCKS5" "$ERR"
expect_contains "only the names in network.allow are reachable" "$ERR"
expect_exit 73 sandshim run --image sandshim/sh:bookworm -- sh -c "$SOCKS" curl socks5 "http://127.0.0.1:$HTTP_PORT/hello.txt"
audit_cmd connections --run "$(last_run_id)" --jsonl >"$T/socks.jsonl"
expect_contains '"method":"SOCKS5","name":"127.0.0.1"' "$T/socks.jsonl"
expect_contains "never IP addresses" "$T/socks.jsonl"

mkdir -p "$T/www/npm"
sed "s|TARBALL_BASE|$TLS_URL|" "$T/www/npm-template.json" >"$T/www/npm/sandshim-probe-pkg"
PIP='command -v pip >/dev/null || { echo "no pip in the image: rebuild it with install/images.sh"; exit 3; }
pip download --no-cache-dir --retries 1 --timeout 10 --disable-pip-version-check --cert probe/test-ca.crt \
    --index-url "$1/simple/" -d "$TMPDIR/dl" sandshim-probe || exit 73
ls "$TMPDIR/dl"; exit 42'
# A package tool through the proxy: from a stand-in on the allowed name it works (PROOF in its
# output); from the same stand-in on the unlisted name it fails, printing REFUSAL.
expect_tool_fetch() { # IMAGE SCRIPT TOOL PROOF REFUSAL
    check "$3 from a local stand-in on an allowed name (HTTPS, the test CA)"
    expect_exit 42 sandshim run --image "$1" -- sh -c "$2" "$3" "$TLS_URL"
    expect_contains "$4" "$OUT"
    check "$3 from the same stand-in on an unlisted name is refused, and says so"
    expect_exit 73 sandshim run --image "$1" -- sh -c "$2" "$3" "https://mapped-test.example:$TLS_PORT"
    expect_not_contains "$4" "$OUT"
    expect_contains "$5" "$ERR"
    expect_contains "only the names in network.allow are reachable" "$ERR"
}
REFUSED="403 Forbidden (sandshim: mapped-test.example:$TLS_PORT is not in network.allow"
# pip download (a PEP 503 index, into a writable directory)
expect_tool_fetch sandshim/python:bookworm "$PIP" pip sandshim_probe-1.0-py3-none-any.whl \
    "Tunnel connection failed: $REFUSED"

NPM='command -v npm >/dev/null || { echo "no npm in the image: rebuild it with install/images.sh"; exit 3; }
export npm_config_cache=$TMPDIR/npm-cache
npm install --prefix "$TMPDIR/app" --registry "$1/npm/" --cafile probe/test-ca.crt --fetch-retries 0 \
    --no-audit --no-fund --no-update-notifier sandshim-probe-pkg || exit 73
cd "$TMPDIR/app" && node -e "process.exit(require(\"sandshim-probe-pkg\"))"'
# npm install (a registry stand-in: the metadata document and the tarball)
expect_tool_fetch sandshim/node:bookworm "$NPM" npm "added 1 package" "$REFUSED"

check "control: the same fetch under sandbox.network = none reaches nothing"
expect_exit 73 sandshim run --network none -- python3 probe/fetch.py "$HTTP_URL/hello.txt"
expect_not_contains "hello" "$OUT"

check "unlisted name: refused with a 403 naming network.allow; listed (and mapped), it works"
expect_exit 73 sandshim run -- python3 probe/fetch.py "http://mapped-test.example:$HTTP_PORT/hello.txt"
expect_contains "HTTP 403" "$OUT"
expect_contains "mapped-test.example:$HTTP_PORT is not in network.allow" "$OUT"
expect_contains "sandbox.network = allowlist: only the names in network.allow are reachable" "$ERR"
expect_contains "the proxy refused 1 of 1 connection(s)" "$ERR"
expect_exit 73 sandshim run -- python3 probe/fetch.py "https://mapped-test.example:$TLS_PORT/hello.txt"
expect_contains "Tunnel connection failed: 403" "$OUT"
expect_contains "network.allow" "$OUT"
allow_config "mapped-test.example:$HTTP_PORT"
expect_exit 42 sandshim run -- python3 probe/fetch.py "http://mapped-test.example:$HTTP_PORT/hello.txt"
allow_config

check "a listed name that resolves to loopback without a trusted mapping is refused"
expect_exit 73 sandshim run -- python3 probe/fetch.py "http://localhost:$HTTP_PORT/hello.txt" direct
expect_contains "HTTP 403" "$OUT"
expect_contains "loopback, link-local or private address, which network.allow never reaches" "$OUT"

check "an IP literal is refused, through the proxy, even the upstream's own address"
expect_exit 73 sandshim run -- python3 probe/fetch.py "http://127.0.0.1:$HTTP_PORT/hello.txt" direct
expect_contains "never IP addresses" "$OUT"
expect_contains "network.allow" "$OUT"
expect_exit 73 sandshim run -- python3 probe/fetch.py "http://10.0.0.1/" direct
expect_contains "never IP addresses" "$OUT"

check "CONNECT to another loopback port of the host is refused; to the listed port it opens"
expect_exit 73 sandshim run -- python3 probe/connect_via_proxy.py "egress-test.example:$LISTEN_PORT"
expect_contains "403 Forbidden (sandshim: egress-test.example:$LISTEN_PORT is not in network.allow" "$OUT"
expect_exit 73 sandshim run -- python3 probe/connect_via_proxy.py "127.0.0.1:$LISTEN_PORT"
expect_contains "network.allow" "$OUT"
expect_exit 42 sandshim run -- python3 probe/connect_via_proxy.py "egress-test.example:$TLS_PORT"

check "DNS from inside fails, and sandshim's line names network.allow; the proxy resolves it"
expect_exit 73 sandshim run -- python3 probe/raw.py dns egress-test.example
expect_contains "gaierror" "$OUT"
expect_contains "only the names in network.allow are reachable" "$ERR"
expect_exit 42 sandshim run -- python3 probe/fetch.py "$HTTP_URL/hello.txt"

check "Node 18's built-in fetch ignores the proxy variables (docs/egress.md); Node's http through them works"
expect_exit 73 sandshim run -- node -e 'fetch(process.argv[1]).then(() => process.exit(42),
    (e) => { console.log(String(e.cause || e)); process.exit(73); })' "$HTTP_URL/hello.txt"
expect_contains "network.allow" "$ERR"
expect_exit 42 sandshim run -- node -e 'const proxy = new URL(process.env.HTTP_PROXY);
require("http").get({ host: proxy.hostname, port: proxy.port, path: process.argv[1] }, (r) => {
  r.pipe(process.stdout); r.on("end", () => process.exit(r.statusCode === 200 ? 42 : 73)); })' \
    "$HTTP_URL/hello.txt"
expect_file_is "$OUT" "hello through network.allow"

check "a raw TCP connect fails (loopback only), and sandshim's line names network.allow"
expect_exit 73 sandshim run -- python3 probe/raw.py tcp 127.0.0.1 "$HTTP_PORT"
expect_contains "ConnectionRefusedError" "$OUT"
expect_contains "network.allow" "$ERR"
expect_exit 73 sandshim run -- python3 probe/raw.py tcp 10.0.0.1 80
expect_contains "network.allow" "$ERR"

check "every proxied connection is an audit record linked to its run"
expect_exit 42 sandshim run -- python3 probe/fetch.py "$HTTP_URL/big.bin"
big_run=$(last_run_id)
audit_cmd connections --limit 0 --json >"$T/connections.json"
"$HOST_PY" - "$T/connections.json" "$big_run" "$HTTP_PORT" "$LISTEN_PORT" <<'EOF' || fail "connections: see above"
import json, sys
rows = json.load(open(sys.argv[1]))
big_run, http_port, listen_port = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def one(pred, what):
    found = [r for r in rows if pred(r)]
    if not found:
        sys.exit(f"no connection record: {what}; records: {json.dumps(rows)[:2000]}")
    return found[0]
big = one(lambda r: r["run_id"] == big_run, "the 1 MiB download")
assert big["verdict"] == "allowed" and big["name"] == "egress-test.example", big
assert big["port"] == http_port and big["address"] == "127.0.0.1" and big["method"] == "GET", big
assert big["bytes_down"] > 1 << 20 and big["bytes_up"] > 0 and big["duration_ms"] >= 0, big
unlisted = one(lambda r: r["name"] == "mapped-test.example" and r["verdict"] == "refused", "unlisted")
assert "network.allow" in unlisted["reason"] and unlisted["bytes_down"] == 0, unlisted
literal = one(lambda r: r["name"] == "127.0.0.1", "IP literal")
assert literal["verdict"] == "refused" and "never IP addresses" in literal["reason"], literal
other = one(lambda r: r["name"] == "egress-test.example" and r["port"] == listen_port, "other port")
assert other["verdict"] == "refused" and other["method"] == "CONNECT", other
# The TLS fetch: a tunnel that carried bytes both ways (the CONNECT probe closes at once).
one(lambda r: r["method"] == "CONNECT" and r["verdict"] == "allowed" and r["bytes_up"] > 0
    and r["bytes_down"] > 0, "a TLS tunnel that carried bytes")
EOF
audit_cmd connections --run "$big_run" --csv >"$T/connections.csv"
expect_lines 2 "$T/connections.csv"
expect_contains "run_id,start,start_ms,method,name,port,address,verdict,reason,bytes_up,bytes_down,duration_ms" "$T/connections.csv"
audit_cmd connections --verdict refused --name 'egress-test.*' --jsonl >"$T/refused.jsonl"
expect_contains "\"port\":$LISTEN_PORT" "$T/refused.jsonl"
expect_not_contains '"verdict":"allowed"' "$T/refused.jsonl"

check "a workspace file may shrink the allowlist, never widen it"
printf '[network]\nallow = egress-test.example:%s\n' "$HTTP_PORT" >"$WS/.sandshim.conf"
expect_exit 42 sandshim run -- python3 probe/fetch.py "$HTTP_URL/hello.txt"
expect_exit 73 sandshim run -- python3 probe/fetch.py "$TLS_URL/hello.txt"
expect_contains "egress-test.example:$TLS_PORT is not in network.allow" "$OUT"
printf '[network]\nallow = + mapped-test.example:%s\n' "$HTTP_PORT" >"$WS/.sandshim.conf"
expect_exit 125 sandshim run -- python3 probe/fetch.py "http://mapped-test.example:$HTTP_PORT/"
expect_contains "network.allow" "$ERR"
expect_contains "would loosen the policy" "$ERR"
printf '[network]\nresolve = evil.example=127.0.0.1\n' >"$WS/.sandshim.conf"
expect_exit 125 sandshim run -- python3 -c pass
expect_contains "network.resolve" "$ERR"
rm "$WS/.sandshim.conf"
reset_user_config
printf '[sandbox]\nnetwork = allowlist\n' >"$WS/.sandshim.conf"
expect_exit 125 sandshim run -- python3 -c pass
expect_contains "sandbox.network = \"allowlist\": would loosen the policy" "$ERR"
rm "$WS/.sandshim.conf"
allow_config

check "sandshim run --allow adds a name for this run (a user's flag; agents' hooks refuse it)"
expect_exit 73 sandshim run -- python3 probe/fetch.py "http://mapped-test.example:$HTTP_PORT/hello.txt"
expect_exit 42 sandshim run --allow "mapped-test.example:$HTTP_PORT" -- python3 probe/fetch.py "http://mapped-test.example:$HTTP_PORT/hello.txt"

check "the command keeps its exit code and its deadline behind the forwarder"
expect_exit 42 sandshim run -- sh -c 'exit 42'
expect_exit 124 sandshim run --timeout 2s -- python3 -c 'import time; time.sleep(60)'
expect_contains "ran past its deadline" "$ERR"
expect_exit 127 sandshim run --image sandshim/sh:bookworm -- no-such-program-here
expect_contains "cannot run 'no-such-program-here'" "$ERR"
expect_run last error 127

check "as a non-root user: the run's socket directory is the user's alone"
if skip_check_on podman "rootless podman maps the container's user to a subordinate uid"; then
    :
elif [[ $(id -u) != 0 ]]; then
    say "SKIP: needs root to create the test users"
else
    ensure_test_user sandshim-egress || fail "cannot create the test user sandshim-egress"
    ensure_plain_test_user sandshim-egress-nd || fail "cannot create the test user sandshim-egress-nd"
    U=$T/user
    mkdir -p "$U/config/sandshim" "$U/state" "$T/bin"
    cp "$SANDSHIM_BIN" "$(dirname "$SANDSHIM_BIN")/sandshim-forward" "$T/bin/"
    cp "$XDG_CONFIG_HOME/sandshim/config" "$U/config/sandshim/config"
    chmod 755 "$T" "$T/bin"
    chown -R sandshim-egress: "$U"
    as_egress_user() {
        (cd "$WS" && run_as_test_user sandshim-egress env XDG_CONFIG_HOME="$U/config" \
            XDG_STATE_HOME="$U/state" SANDSHIM_AUDIT_DB="$U/state/audit.db" "$T/bin/sandshim" "$@")
    }
    AUDIT_DBS+=("$U/state/audit.db")
    expect_exit 42 as_egress_user run -- python3 probe/fetch.py "$HTTP_URL/hello.txt"
    expect_file_is "$OUT" "hello through network.allow"
    base=/tmp/sandshim-egress-$(id -u sandshim-egress)
    as_egress_user run -- sh -c 'sleep 8' >/dev/null 2>&1 &
    BG_PIDS+=($!)
    for _ in $(seq 80); do
        socket=$(find "$base" -name proxy.sock 2>/dev/null | head -n 1)
        [[ -z $socket ]] || break
        sleep 0.1
    done
    [[ -n $socket ]] || fail "no egress socket appeared under $base"
    expect_equal "sandshim-egress 700" "$(stat -c '%U %a' "$(dirname "$socket")")" "the run's directory"
    expect_exit 73 run_as_test_user sandshim-egress-nd "$HOST_PY" -c '
import socket, sys
try:
    socket.socket(socket.AF_UNIX).connect(sys.argv[1])
except PermissionError as e:
    print(e)
    sys.exit(73)
sys.exit(42)' "$socket"
    expect_contains "Permission denied" "$OUT"
    wait "${BG_PIDS[-1]}" || true
fi

check "nothing of a run stays behind: no container, no egress directory"
assert_no_sandshim_containers
# Only this suite's runs: suites of other tiers run beside it, with egress directories of their own.
left=$(comm -12 <(find /tmp/sandshim-egress-* -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort -u) \
    <(suite_container_names | sed 's/^sandshim-//' | sort -u) | wc -l)
expect_equal 0 "$left" "egress directories left"

suite_done
