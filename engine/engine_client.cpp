#include "engine/engine_client.hpp"

#include <spdlog/spdlog.h>

#include <sys/stat.h>

#include <sstream>

#include "common/paths.hpp"
#include "common/process.hpp"
#include "common/strings.hpp"

namespace sandshim::shim {

namespace fs = std::filesystem;

fs::path engine_client_directory() {
  fs::path dir = xdg_directory("state") / "sandshim" / "engine-cwd";
  std::error_code ec;
  if (fs::create_directories(dir, ec)) {
    ::chmod(dir.c_str(), 0700);
  }
  return dir;
}

EngineReply EngineClient::call(const char* verb, std::vector<std::string> args,
                               std::chrono::milliseconds timeout) const {
  args.insert(args.begin(), m_engine.client.string());
  int64_t start = monotonic_ms();
  auto result =
      run_captured(args, m_engine.env, timeout, 1 << 20, engine_client_directory().string());
  spdlog::debug("engine {} {}: exit {}{} in {} ms", m_engine.kind, verb, result.status.code,
                result.timed_out ? " (timed out)" : "", monotonic_ms() - start);
  return EngineReply{!result.timed_out, result.status.code, std::move(result.out),
                     std::move(result.err)};
}

EngineReply EngineClient::create(const std::vector<std::string>& run_args,
                                 std::chrono::milliseconds timeout) const {
  return call("create", run_args, timeout);
}

EngineReply EngineClient::remove(const std::string& container,
                                 std::chrono::milliseconds timeout) const {
  return call("remove", m_engine.dialect.remove_arguments(container), timeout);
}

EngineReply EngineClient::info(std::chrono::milliseconds timeout) const {
  std::string format = m_engine.dialect.is_podman() ? "json" : "{{json .}}";
  return call("info", {"info", "--format", format}, timeout);
}

std::optional<std::string> EngineClient::inspect_image(const std::string& image,
                                                       std::chrono::milliseconds timeout) const {
  auto reply = call("inspect_image", {"image", "inspect", "--format={{.Id}}", image}, timeout);
  if (!reply.ok()) {
    return std::nullopt;
  }
  return m_engine.dialect.normalize_image_id(trim(reply.out));
}

std::optional<int64_t> EngineClient::container_pid(const std::string& container,
                                                   std::chrono::milliseconds timeout) const {
  auto reply =
      call("inspect", {"container", "inspect", "--format={{.State.Pid}}", container}, timeout);
  std::string pid = trim(reply.out);
  if (!reply.ok() || pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos ||
      pid == "0") {
    return std::nullopt;
  }
  return std::stoll(pid);
}

bool EngineClient::oom_event(const std::string& container, int64_t since_s, int64_t until_s) const {
  auto reply = call("events",
                    {"events", "--since=" + std::to_string(since_s),
                     "--until=" + std::to_string(until_s), "--filter=container=" + container,
                     "--filter=event=oom", "--format=" + m_engine.dialect.event_format()},
                    std::chrono::seconds(10));
  return reply.out.find("oom") != std::string::npos;
}

ContainerList EngineClient::ps_by_label(const std::string& filter, const std::string& value_label,
                                        std::chrono::milliseconds timeout) const {
  std::string format = "--format={{.Names}}";
  if (!value_label.empty()) {
    format += " " + m_engine.dialect.label_format(value_label);
  }
  ContainerList list;
  list.reply = call("ps", {"ps", "--all", "--filter=label=" + filter, format}, timeout);
  if (!list.reply.ok()) {
    return list;
  }
  std::istringstream lines(list.reply.out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    LabelledContainer container;
    if (words >> container.name) {
      words >> container.label_value;
      list.containers.push_back(std::move(container));
    }
  }
  return list;
}

std::vector<std::string> EngineClient::remove_argv(const std::string& container) const {
  return m_engine.remove_command(container);
}

}  // namespace sandshim::shim
