// Compiled against the audit library alone: the shim is a higher layer, so this include must
// not be found (tests/layering/check.sh expects exactly that error).
#include "shim/policy.hpp"
