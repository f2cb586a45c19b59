#!/usr/bin/env bash
# The image digest in the audit: a run records the id the engine gives for its image. A local
# Docker engine is asked over its API socket (no second client per run), by default and through
# an explicit unix:// endpoint; the control shows the id is the run's own image's, not a constant.
# sandshim-test-engines: docker  # the Engine API socket is Docker's; podman keeps the client probe
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

image_id() {
    "$DOCKER" image inspect --format '{{.Id}}' "$1"
}

check "a run records its image's id (asked over the default engine socket)"
expect_exit 42 sandshim run -- sh -c 'exit 42'
expect_run last error 42
expect_equal "$(image_id sandshim/sh:bookworm)" "$(audit_field last image_digest)" "image_digest"

check "control: a run of another image records that image's id"
expect_exit 43 sandshim run -- python3 -c 'raise SystemExit(43)'
expect_equal "$(image_id sandshim/python:bookworm)" "$(audit_field last image_digest)" "image_digest"
[[ $(image_id sandshim/python:bookworm) != "$(image_id sandshim/sh:bookworm)" ]] ||
    fail "control: the two images have the same id, so this suite proves nothing"

check "an explicit unix:// engine.endpoint is asked the same way"
printf '[engine]\nendpoint = unix:///var/run/docker.sock\n' >"$XDG_CONFIG_HOME/sandshim/config"
expect_exit 42 sandshim run -- sh -c 'exit 42'
expect_equal "$(image_id sandshim/sh:bookworm)" "$(audit_field last image_digest)" "image_digest"
rm "$XDG_CONFIG_HOME/sandshim/config"

suite_done
