#!/usr/bin/env bash
# With SANDSHIM_STATIC_DEPS (the default) the binary loads no shared C++ runtime, Boost, SQLite,
# spdlog or fmt: every shim and hook call is a new process, and resolving their symbols cost
# ~1.5 ms of it. A link that quietly picks up one of their .so files fails here. OpenSSL is in
# neither form: it lives in the relay sandshim-tls (engine/tls_relay/), since relocating its
# tables cost every call ~90 copied pages.
set -euo pipefail
bin=$1
needed=$(readelf -d "$bin" | awk '/\(NEEDED\)/ { gsub(/[][]/, "", $5); print $5 }')
[[ -n $needed ]] || { echo "static_deps: readelf found no NEEDED entry in $bin" >&2; exit 1; }
bad=$(grep -E '^lib(stdc\+\+|spdlog|fmt|boost_|sqlite3)' <<<"$needed" || true) # none: the pass
if [[ -n $bad ]]; then
    echo "static_deps: $bin loads $(tr '\n' ' ' <<<"$bad")(SANDSHIM_STATIC_DEPS links them in)" >&2
    exit 1
fi
bad=$(grep -E '^lib(ssl|crypto)' <<<"$needed" || true)
if [[ -n $bad ]] || nm "$bin" 2>/dev/null | grep -qE ' [TtDd] (SSL_CTX_new|EVP_DigestInit_ex)$'; then
    echo "static_deps: $bin carries OpenSSL; only sandshim-tls may (engine/tls_relay/)" >&2
    exit 1
fi
echo "static_deps: $(basename "$bin") loads only $(tr '\n' ' ' <<<"$needed")"
