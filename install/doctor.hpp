#pragma once

#include <string>
#include <vector>

#include "common/command_doc.hpp"

namespace sandshim::install {

// `sandshim doctor [--json] [--containers [NAME...]]`: checks that every piece sandshim relies on
// is in place (engine, runtime, enforceable limits, images, shims on PATH, audit, agent hooks),
// or inspects running sandshim containers against the CIS Docker Benchmark's runtime checks.
// Exits 1 when a check fails.
int doctor_main(const std::vector<std::string>& args);
// Its documentation, for --help, the completions and the man page.
CommandDoc doctor_doc();

}  // namespace sandshim::install
