#!/usr/bin/env bash
# CTest entry of the bypass corpus: runs run_corpus.py with the host's own python (absolute, so
# no shim directory on PATH can intercept it) against the docker engine. Needs the images of
# install/images.sh, the wrap image included; a missing engine or image skips outside CI and fails
# under CI=true.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
host_py=/usr/bin/python3
[[ -x $host_py ]] || { echo "bypass: no /usr/bin/python3 on the host" >&2; exit 1; }
for image in sandshim/python:bookworm sandshim/node:bookworm sandshim/sh:bookworm sandshim/wrap:bookworm; do
    if ! docker image inspect "$image" >/dev/null 2>&1; then
        echo "bypass: image $image is missing (build it with install/images.sh)" >&2
        [[ ${CI:-} == true ]] && exit 1
        exit 77
    fi
done
exec "$host_py" "$here/run_corpus.py" --sandshim "${SANDSHIM_BIN:-$here/../../build/sandshim}" "$@"
