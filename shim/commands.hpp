#pragma once

#include <string>
#include <vector>

#include "common/command_doc.hpp"
#include "run/run_request.hpp"

namespace sandshim::shim {

// The docs of the commands this front serves: their --help, completions and man page sections.
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
