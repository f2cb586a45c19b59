#!/usr/bin/env bash
# sandshim-test-engines: docker
# The parity suite with the shim side in host mode (images.python3/node = host): the same
# projects, counts and exit codes as native, through the host's own interpreters.
export SANDSHIM_PARITY_IMAGES=host
# shellcheck source=suite_parity.sh
. "$(dirname "${BASH_SOURCE[0]}")/suite_parity.sh"
