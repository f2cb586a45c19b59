#pragma once

namespace sandshim::install {

// doctor's --help: what each check means, the modes, the exit code.
const char* doctor_usage();

}  // namespace sandshim::install
