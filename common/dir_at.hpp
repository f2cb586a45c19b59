#pragma once

#include <string>
#include <vector>

namespace sandshim {

// Work on a directory through its descriptor, never through a name someone could swap.

// The names in the open directory `dir`, without . and .. Throws Fatal when it cannot be listed.
std::vector<std::string> names_in(int dir);

// Removes NAME of `dir` and, for a directory, all of it, through descriptors and never through a
// link (what is there may change meanwhile); false when something stays.
bool remove_entry_at(int dir, const std::string& name);

// DEV:INO of the open file `fd`: what it is, whatever its name; "" when it cannot be told.
std::string dev_ino(int fd);

// Copies all of `from` (from its start) into `to`; false with errno on a failed read or write.
bool copy_contents(int from, int to);

}  // namespace sandshim
