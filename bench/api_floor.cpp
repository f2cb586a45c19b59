// The least a cold run over the Engine API takes on this engine: the shim's own API client
// (start_api_client: create, attach, wait, start, the streams) started by a process that does
// nothing else: no policy, audit, guardian, event watch or output relays. bench/latency.sh times
// it as it times raw `docker run`, so its ratio to raw is the best any client making these calls
// for this container could reach, and cold minus it is all that sandshim adds around them.
// Usage: sandshim_api_floor SOCKET run ARGS...   (the arguments `sandshim run --dry-run` prints)
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "common/io.hpp"
#include "engine/api_client.hpp"
#include "engine/engine_create.hpp"
#include "engine/engine_run.hpp"

extern char** environ;

namespace {

int exit_status_of(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sandshim;
  if (argc < 4 || std::string(argv[2]) != "run") {
    std::fprintf(
        stderr,
        "usage: sandshim_api_floor SOCKET run ARGS... (as `sandshim run --dry-run` prints them)\n");
    return 2;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  std::vector<std::string> client_env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    client_env.emplace_back(*entry);
  }
  shim::CreateTranslation translation =
      shim::translate_run_arguments(args, client_env, shim::read_named_file);
  if (!translation.request) {
    std::fprintf(stderr, "sandshim_api_floor: %s has no API form\n",
                 translation.unsupported.c_str());
    return 2;
  }
  engine::ApiClient api(argv[1], std::chrono::seconds(60));
  pid_t client = shim::start_api_client(api, *translation.request, shim::ApiRunIo{});
  int status = 0;
  retry_on_eintr([&] { return ::waitpid(client, &status, 0); });
  return exit_status_of(status);
}
