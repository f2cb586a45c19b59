#pragma once

namespace sandshim::cli {

// The program: decides from argv[0] whether this is a shim or the `sandshim` tool, runs it, and
// turns every error into one line and an exit code.
int main_entry(int argc, char** argv);

}  // namespace sandshim::cli
