#pragma once

#include <string>

namespace sandshim::test {

// A test case that cannot check anything on this machine (not root, no tmpfs…) calls this and
// returns: it says why, and it is counted. A run whose every case skipped exits 77, which ctest
// (one case per run) reports as skipped; a whole run prints how many skipped and why.
void skip_test(const std::string& why);

}  // namespace sandshim::test
