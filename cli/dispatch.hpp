#pragma once

#include <vector>

#include "common/command_doc.hpp"

namespace sandshim::cli {

// The program: decides from argv[0] whether this is a shim or the `sandshim` tool, runs it, and
// turns every error into one line and an exit code.
int main_entry(int argc, char** argv);

// Every command's documentation: the program itself (path ""), then each command and the
// commands below it, in the order `sandshim --help` lists them.
std::vector<CommandDoc> command_docs();

}  // namespace sandshim::cli
