#pragma once

#include <string>
#include <vector>

namespace boost::program_options {
class options_description;
class variables_map;
class positional_options_description;
}  // namespace boost::program_options

namespace sandshim::shim {

// Parses a subcommand's options (adding --help); prints the usage and returns false for --help,
// throws Fatal (exit 2) naming the bad option. Shared by every `sandshim` subcommand.
bool parse_subcommand_options(
    const std::vector<std::string>& args, boost::program_options::options_description& options,
    boost::program_options::variables_map& vm, const std::string& usage,
    const boost::program_options::positional_options_description* positional = nullptr);

// Shim mode: argv[0] named a shimmed command. argv belongs to the wrapped program: it is never
// parsed; settings come from config files and the environment only.
int shim_main(const std::string& invoked_as, const std::vector<std::string>& argv);

// `sandshim run [options] -- CMD ARGS...`
int run_main(const std::vector<std::string>& args);
// `sandshim images [build [--only NAME] [--force]]`
int images_main(const std::vector<std::string>& args);
// `sandshim gc`: removes sandshim containers past their deadline, marks abandoned audit rows.
int gc_main(const std::vector<std::string>& args);
// `sandshim pool status|fill COMMAND|drain`: the warm containers of your pools.
int pool_main(const std::vector<std::string>& args);

// `sandshim policy show|keys`
int policy_main(const std::vector<std::string>& args);

}  // namespace sandshim::shim
