#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "hooks/shell_parser.hpp"

namespace sandshim::hooks {

// Container engine clients: from an agent's host shell they are root on the host.
bool is_engine_client(std::string_view name);

// Dynamic loaders (`ld.so PROGRAM`): they run any program, so the program's name never counts.
bool is_loader(std::string_view name);

// A word naming a container engine's API socket (docker.sock, podman.sock, containerd.sock).
bool names_engine_socket(std::string_view text);

// Why a host program would reach a container engine through its arguments (`curl
// --unix-socket`, `socat UNIX-CONNECT:`, `nc -U`), when it would.
std::optional<std::string> engine_access_of(std::string_view name, std::span<const Word> argv);

// Why a host program would run a command sandshim cannot see from its arguments or options
// (`tar --checkpoint-action=exec=`, `git -c core.fsmonitor=`, `awk 'BEGIN{system()}'`, `sed e`,
// `vim -c`, `ssh -o ProxyCommand=`), when it would: the subject to name in the refusal.
std::optional<std::string> hidden_command_of(std::string_view name, std::span<const Word> argv);

// Variables whose value a program later runs as a command or bash expands as code (GIT_EDITOR,
// GIT_SSH_COMMAND, PAGER, PS4, PROMPT_COMMAND, BASH_ENV, BASH_CMDS, EXECIGNORE…).
bool is_command_variable(std::string_view name);

// A setting naming the program git, man or less start (GIT_EDITOR, GIT_PAGER, core.pager…) set to
// one that runs nothing (`true`, `:`, `cat`): `value` is the literal value, quotes removed.
bool runs_only_inert_program(std::string_view setting, std::string_view value);

// A prompt variable (PS0–PS4) whose literal value bash's prompt expansion cannot turn into a
// command: no `$(`, `${`, `$[`, backquote, nor a backslash (`\$` decodes to `$` first).
bool is_inert_prompt(std::string_view name, std::string_view value);

// Programs that copy or rebuild a file's bytes: an interpreter among their operands becomes an
// interpreter under another name.
bool copies_files(std::string_view name);

}  // namespace sandshim::hooks
