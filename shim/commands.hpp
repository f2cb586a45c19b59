#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "common/command_doc.hpp"
#include "shim/run_request.hpp"

namespace boost::program_options {
class options_description;
class variables_map;
class positional_options_description;
}  // namespace boost::program_options

namespace sandshim::shim {

// A command's documentation with --help added to its options: what every subcommand above the
// audit builds its --help, completions and man page section from.
CommandDoc make_command_doc(std::string path, std::string summary, std::string usage,
                            const boost::program_options::options_description& options,
                            std::string epilogue = {}, std::vector<std::string> operands = {});

// `--help`: the usage, the options, the epilogue.
void print_command_help(std::ostream& out, const CommandDoc& doc);

// Parses a subcommand's options as its doc declares them; prints the help and returns false for
// --help, throws Fatal (exit 2) naming the bad option. Shared by every `sandshim` subcommand.
// `hidden` options are parsed but left out of the help (holders of positional operands).
bool parse_subcommand_options(
    const std::vector<std::string>& args, const CommandDoc& doc,
    boost::program_options::variables_map& vm,
    const boost::program_options::positional_options_description* positional = nullptr,
    const boost::program_options::options_description* hidden = nullptr);

// The documentation of the commands this library implements (run, images, images build, gc,
// policy), read by their --help and by the completion and man page generators.
CommandDoc run_doc();
CommandDoc images_doc();
CommandDoc images_build_doc();
CommandDoc gc_doc();
CommandDoc pool_doc();
CommandDoc policy_doc();
CommandDoc policy_k8s_doc();

// Shim mode: argv[0] named a shimmed command. argv belongs to the wrapped program: it is never
// parsed; settings come from config files and the environment only.
int shim_main(const std::string& invoked_as, const std::vector<std::string>& argv);
// The shim's run of `request` (invoked_as and the program's argv set): a broker's worker builds it
// from a typed request, the shim from its process.
int shim_run(RunRequest request);

// `sandshim run [options] -- CMD ARGS...`
int run_main(const std::vector<std::string>& args);
// `sandshim run ARGS` for `caller` (command, flags and dry run come from ARGS).
int run_command(const std::vector<std::string>& args, RunRequest caller);
// `sandshim images [build [--only NAME] [--force]]`
int images_main(const std::vector<std::string>& args);
// `sandshim gc`: removes sandshim containers past their deadline, marks abandoned audit rows.
int gc_main(const std::vector<std::string>& args);
// `sandshim pool status|fill COMMAND|drain`: the warm containers of your pools.
int pool_main(const std::vector<std::string>& args);

// `sandshim policy show|keys`
int policy_main(const std::vector<std::string>& args);

}  // namespace sandshim::shim
