#pragma once

#include <optional>
#include <span>
#include <string>

#include "hooks/shell_parser.hpp"

namespace sandshim::hooks {

// Why `gdb ARGS` would run a command sandshim cannot see, when it would: anything but batch mode
// with -ex commands that only run, stop and read the program (run, bt, info, print, break, next,
// finish…). A script (-x, -ix, --command), an option outside that set, a command that reaches a
// shell or python (`shell`, `!`, `pipe`, `python`, `source`), arguments to `run` (gdb hands them
// to a shell) or a function call or assignment in an expression (`print system("…")`) is one.
std::optional<std::string> gdb_hidden_command(std::span<const Word> argv);

// The program gdb debugs and its arguments, as a command line: `--args PROGRAM ARGS…`, else the
// first operand alone (a core file or pid may follow it). Nullopt when gdb names none.
std::optional<std::span<const Word>> gdb_inferior(std::span<const Word> argv);

}  // namespace sandshim::hooks
