// The least a cold run over the Engine API takes on this engine: the shim's own API client
// (start_api_client: create, attach, wait, start, the streams) started by a process that does
// nothing else: no policy, audit, guardian, event watch or output relays. bench/latency.sh times
// it as it times raw `docker run`, so its ratio to raw is the best any client making these calls
// for this container could reach, and cold minus it is all that sandshim adds around them.
// Usage: sandshim_api_floor --prepare FILE -- CMD...   (untimed: the create request a cold
//        `sandshim run -- CMD...` would send, built by the run's own code, into FILE)
//        sandshim_api_floor SOCKET FILE                (timed: that request's run, and nothing
//        else)
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/io.hpp"
#include "engine/api_client.hpp"
#include "engine/engine_create.hpp"
#include "engine/engine_run.hpp"
#include "pool/run_engine.hpp"
#include "run/run_request.hpp"
#include "run/sandbox.hpp"

namespace {

using nlohmann::json;
using sandshim::shim::CreateRequest;

int exit_status_of(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int usage() {
  std::fprintf(stderr,
               "usage: sandshim_api_floor --prepare FILE -- CMD... | sandshim_api_floor SOCKET "
               "FILE\n");
  return 2;
}

// The create request of `sandshim run -- CMD...` into `file`.
int prepare(const std::string& file, const std::vector<std::string>& command) {
  using namespace sandshim::shim;
  ApiCreate create = cold_api_create(request_from_process("run", command), real_run_engine());
  if (!create.request) {
    std::fprintf(stderr, "sandshim_api_floor: %s has no API form\n", create.unsupported.c_str());
    return 2;
  }
  const CreateRequest& request = *create.request;
  std::ofstream(file) << json{
      {"name", request.name},
      {"body", request.body},
      {"tty", request.tty},
      {"auto_remove", request.auto_remove},
      {"interactive", request.interactive},
      {"libpod",
       request.libpod}}.dump();
  return 0;
}

CreateRequest read_request(const std::string& file) {
  json saved = json::parse(std::ifstream(file));
  CreateRequest request;
  request.name = saved.at("name").get<std::string>();
  request.body = saved.at("body").get<std::string>();
  request.tty = saved.at("tty").get<bool>();
  request.auto_remove = saved.at("auto_remove").get<bool>();
  request.interactive = saved.at("interactive").get<bool>();
  request.libpod = saved.at("libpod").get<bool>();
  return request;
}

int run(const std::string& socket, const std::string& file) {
  using namespace sandshim;
  engine::ApiClient api(socket, std::chrono::seconds(60));
  pid_t client = shim::start_api_client(api, read_request(file), shim::ApiRunIo{});
  int status = 0;
  retry_on_eintr([&] { return ::waitpid(client, &status, 0); });
  return exit_status_of(status);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() >= 4 && args[0] == "--prepare" && args[2] == "--") {
      return prepare(args[1], std::vector<std::string>(args.begin() + 3, args.end()));
    }
    if (args.size() == 2 && args[0] != "--prepare") {
      return run(args[0], args[1]);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sandshim_api_floor: %s\n", e.what());
    return 2;
  }
  return usage();
}
