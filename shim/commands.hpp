#pragma once

#include <string>
#include <vector>

namespace sandshim::shim {

// Shim mode: argv[0] named a shimmed command. argv belongs to the wrapped program: it is never
// parsed; settings come from config files and the environment only.
int shim_main(const std::string& invoked_as, const std::vector<std::string>& argv);

// `sandshim run [options] -- CMD ARGS...`
int run_main(const std::vector<std::string>& args);
// `sandshim images [build [--only NAME] [--force]]`
int images_main(const std::vector<std::string>& args);
// `sandshim gc`: removes sandshim containers past their deadline, marks abandoned audit rows.
int gc_main(const std::vector<std::string>& args);
// `sandshim policy show|keys`
int policy_main(const std::vector<std::string>& args);

}  // namespace sandshim::shim
