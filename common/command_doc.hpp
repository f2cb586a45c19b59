#pragma once

#include <memory>
#include <string>
#include <vector>

namespace boost::program_options {
class options_description;
}  // namespace boost::program_options

namespace sandshim {

// What one command says about itself. `--help`, the shell completions and the man page all read
// this one value, so they cannot drift apart. Header-only: common/ links nothing beyond libc.
struct CommandDoc {
  std::string path;     // the words after the program name: "audit list"; "" for the program
  std::string summary;  // one line, for command lists
  std::string usage;    // --help text before the options: the usage line, then the description
  std::shared_ptr<const boost::program_options::options_description> options;  // never null
  std::string epilogue;               // --help text after the options (examples), may be empty
  std::vector<std::string> operands;  // the words the first operand may be, for completion
};

}  // namespace sandshim
