#pragma once

namespace sandshim::install {

// doctor's --help: what each check means, the modes, the exit code.
extern const char* const k_doctor_usage;

}  // namespace sandshim::install
