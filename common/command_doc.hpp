#pragma once

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace boost::program_options {
class options_description;
class variables_map;
class positional_options_description;
}  // namespace boost::program_options

namespace sandshim {

// What one command says about itself. `--help`, the shell completions and the man page all read
// this one value, so they cannot drift apart. The functions below are the one way every command
// builds and parses its options (library sandshim_command_doc: Boost.Program_options).
struct CommandDoc {
  std::string path;     // the words after the program name: "audit list"; "" for the program
  std::string summary;  // one line, for command lists
  std::string usage;    // --help text before the options: the usage line, then the description
  std::shared_ptr<const boost::program_options::options_description> options;  // never null
  std::string epilogue;               // --help text after the options (examples), may be empty
  std::vector<std::string> operands;  // the words the first operand may be, for completion
};

// A command's doc with `--help` added to its options.
CommandDoc make_command_doc(std::string path, std::string summary, std::string usage,
                            const boost::program_options::options_description& options,
                            std::string epilogue = {}, std::vector<std::string> operands = {});

void print_command_help(std::ostream& out, const CommandDoc& doc);

// Parses a subcommand's arguments into `vm` (no abbreviated option names). Returns false after
// printing the help when --help was given; throws Fatal (usage) naming the command's --help.
bool parse_subcommand_options(
    const std::vector<std::string>& args, const CommandDoc& doc,
    boost::program_options::variables_map& vm,
    const boost::program_options::positional_options_description* positional = nullptr,
    const boost::program_options::options_description* hidden = nullptr);

}  // namespace sandshim
