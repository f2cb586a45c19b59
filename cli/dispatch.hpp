#pragma once

#include <vector>

#include "common/command_doc.hpp"

namespace sandshim::cli {

// The program: decides from argv[0] whether this is a shim or the `sandshim` tool, runs it, and
// turns every error into one line and an exit code.
int main_entry(int argc, char** argv);

// Ends the process with `code` once its output is flushed, without static destructors or
// freeing the heap: a shim is a short process, and that teardown (its pages still shared with
// the detached processes it forked, so each first write copies one) is CPU the caller waits
// for (0.2-0.4 ms of a warm run's 9-13, measured side by side). Sanitizer builds return
// normally, so LeakSanitizer still checks every run.
[[noreturn]] void exit_now(int code);

// Every command's documentation: the program itself (path ""), then each command and the
// commands below it, in the order `sandshim --help` lists them.
std::vector<CommandDoc> command_docs();

}  // namespace sandshim::cli
