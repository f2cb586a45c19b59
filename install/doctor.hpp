#pragma once

#include <string>
#include <vector>

namespace sandshim::install {

// `sandshim doctor [--json] [--containers [NAME...]]`: checks that every piece sandshim relies on
// is in place (engine, runtime, enforceable limits, images, shims on PATH, audit, agent hooks),
// or inspects running sandshim containers against the CIS Docker Benchmark's runtime checks.
// Exits 1 when a check fails.
int doctor_main(const std::vector<std::string>& args);

}  // namespace sandshim::install
