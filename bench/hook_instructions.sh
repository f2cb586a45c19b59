#!/usr/bin/env bash
# Where one hook call's instructions go: one PreToolUse (Gemini CLI: BeforeTool) call of
# `sandshim hook --agent AGENT` per agent, in direct mode, under callgrind from exec to exit,
# with the payload that agent really sends (tests/data/hooks/AGENT/captured_*.json, its cwd moved
# into a fresh git project), after three warm-up calls so the audit database is in its steady
# state. Prints the inclusive instruction count of each phase. Instruction counts do not depend on
# the machine's load, unlike wall and CPU times (bench/hook.sh), so they show what a change cuts.
# Asserts nothing.
#
#   bench/hook_instructions.sh [BUILD_DIR]      (default: build; needs valgrind)
#   AGENTS="claude codex gemini" SANDSHIM_BIN=build/sandshim KEEP=/tmp/cg bench/hook_instructions.sh
#
# KEEP=DIR keeps the callgrind files (callgrind_annotate --inclusive=yes DIR/cg.AGENT).
set -euo pipefail

build=${1:-build}
bin=$(realpath "${SANDSHIM_BIN:-$build/sandshim}")
agents=${AGENTS:-claude codex gemini}
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

for tool in valgrind callgrind_annotate python3; do
  if ! command -v "$tool" > /dev/null; then
    echo "hook_instructions.sh: $tool is missing: install valgrind (and python3)" >&2
    exit 2
  fi
done
if [[ ! -x $bin ]]; then
  echo "hook_instructions.sh: $bin is missing: build the sandshim target first" >&2
  exit 2
fi

work=$(mktemp -d /tmp/sandshim-hook-instructions.XXXXXX)
trap 'rm -rf "$work"' EXIT
export HOME=$work/home XDG_CONFIG_HOME=$work/config XDG_STATE_HOME=$work/state
export XDG_DATA_HOME=$work/data
unset SANDSHIM_CONFIG SANDSHIM_LOG SANDSHIM_AUDIT_DB
mkdir -p "$HOME" "$work/project"
git -C "$work/project" init -q
"$bin" install > /dev/null # path mode rewrites only when the shims are installed

# The captured payload of AGENT's pre-tool event, its cwd moved into this bench's project.
payload_for() { # AGENT OUT
  local captured=$source_dir/tests/data/hooks/$1/captured_pre_tool_use.json
  [[ -r $captured ]] || captured=$source_dir/tests/data/hooks/$1/captured_before_tool.json
  python3 - "$captured" "$work/project" > "$2" << 'EOF'
import json, sys
payload = json.load(open(sys.argv[1]))
payload["cwd"] = sys.argv[2]
print(json.dumps(payload))
EOF
}

# One call under callgrind, its own audit database (no WAL fold forks during the profile).
profile() { # AGENT
  export SANDSHIM_AUDIT_DB=$work/$1.db
  payload_for "$1" "$work/$1.json"
  for _ in 1 2 3; do
    (cd "$work/project" && "$bin" hook --agent "$1" < "$work/$1.json" > /dev/null)
  done
  (cd "$work/project" && valgrind --tool=callgrind --callgrind-out-file="$work/cg.$1" \
    "$bin" hook --agent "$1" < "$work/$1.json" > /dev/null 2> "$work/valgrind.$1.log")
  callgrind_annotate --inclusive=yes --threshold=100 "$work/cg.$1" > "$work/$1.txt" 2> /dev/null
}

# The inclusive count of the first function of FILE's listing whose line matches REGEX.
cost() { # FILE REGEX...
  local file=$1 sum=0 each
  shift
  for regex in "$@"; do
    each=$(grep -E -m1 "$regex" "$file" | awk '{ gsub(",", "", $1); print $1 }')
    sum=$((sum + ${each:-0}))
  done
  echo "$sum"
}

# NAME<TAB>REGEX... of each phase; "=" rows are differences computed below.
phases() {
  cat << 'EOF'
total	PROGRAM TOTALS
loader (ld.so, relocations)	rtld\.c:_dl_start 
static initializers	=
main()	\?\?\?:main 
  options (+ hook's usage)	sandshim::parse_subcommand_options\(	sandshim::hooks::hook_doc\(\)
  payload read	sandshim::read_to_end
  hook environment	sandshim::hooks::system_environment\(\) \[
  payload JSON parse	nlohmann::.*detail::parser<.*::parse\(bool
  policy load	_Function_handler<sandshim::shim::Policy \(std::filesystem::__cxx11::path const&\), sandshim::hooks::system_environment
  protected paths	sandshim::hooks::protected_paths\(
  analysis + decision	sandshim::hooks::decide\(
  answer (agent's format)	answer_claude\(	answer_codex\(	answer_gemini\(
  audit write (all)	HookRun::record\(
    open (schema, pragmas)	hooks::\(anonymous namespace\)::open_store
    insert + chain seal	sandshim::audit::Store::record_decision
    close	sandshim::audit::Store::~Store
EOF
}

figure() { # AGENT PHASE-LINE
  local file=$work/$1.txt regexes=${2#*$'\t'}
  if [[ $regexes == "=" ]]; then # static initializers: libc's start minus main's caller
    echo $(($(cost "$file" '__libc_start_main@@') - $(cost "$file" 'libc_start_call_main\.h:\(below main\)')))
    return
  fi
  local -a list
  IFS=$'\t' read -r -a list <<< "$regexes"
  cost "$file" "${list[@]}"
}

echo "== one pre-tool hook call, instructions (callgrind, inclusive), $bin"
for agent in $agents; do
  profile "$agent"
done
printf '  %-30s' phase
for agent in $agents; do printf ' %10s' "$agent"; done
echo
while IFS= read -r line; do
  printf '  %-30s' "${line%%$'\t'*}"
  for agent in $agents; do printf ' %10s' "$(figure "$agent" "$line")"; done
  echo
done < <(phases)
if [[ -n ${KEEP:-} ]]; then
  mkdir -p "$KEEP"
  cp "$work"/cg.* "$KEEP"/
  echo "  callgrind files kept in $KEEP"
fi
