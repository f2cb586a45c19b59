#!/usr/bin/env bash
# Gemini CLI, the real CLI, headless (`gemini -p`) against the scripted model server (Gemini's
# streamGenerateContent at GOOGLE_GEMINI_BASE_URL), after `sandshim install` and
# `sandshim install agent gemini` in a fresh project and the steps the installer prints. Gemini CLI
# itself approves every call here (--approval-mode yolo), so whatever is refused was refused by
# sandshim's hooks.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_agent gemini
install_sandshim_for_agent gemini
CONFIG_TARGET=$WS/.sandshim.conf # Gemini CLI's file tools stay inside the project by themselves

# shellcheck disable=SC2119 # the standard steps only
standard_session
check_standard_session
finish_agent_suite
