#!/usr/bin/env bash
# Codex, the real CLI, headless (`codex exec`) against the scripted model server (a custom model
# provider speaking the Responses API), after `sandshim install` and `sandshim install agent codex`
# in a fresh project and the steps the installer prints for `codex exec`. Codex itself approves
# every call here (its approvals and sandbox are off), so whatever is refused was refused by
# sandshim's hooks.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_agent codex
install_sandshim_for_agent codex

standard_session
check_standard_session
finish_agent_suite
