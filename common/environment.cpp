#include "common/environment.hpp"

#include <cctype>
#include <cstdlib>

namespace sandshim::environment {

namespace fs = std::filesystem;

std::optional<std::string> text(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::nullopt : std::optional<std::string>(value);
}

std::optional<fs::path> absolute(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] == '/' ? std::optional<fs::path>(value) : std::nullopt;
}

bool flag(const char* name) {
  return text(name) == "true";
}

std::string path() {
  return text("PATH").value_or("");
}

std::optional<fs::path> home() {
  return absolute("HOME");
}

std::optional<fs::path> xdg_home(const std::string& kind) {
  std::string variable = "XDG_" + kind + "_HOME";
  for (auto& c : variable) {
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return absolute(variable.c_str());
}

std::optional<std::string> no_color() {
  return text("NO_COLOR");
}

std::optional<std::string> term() {
  return text("TERM");
}

std::optional<std::string> log_level() {
  return text("SANDSHIM_LOG");
}

std::optional<fs::path> audit_db() {
  return absolute("SANDSHIM_AUDIT_DB");
}

std::optional<fs::path> config_file() {
  auto value = text("SANDSHIM_CONFIG");
  if (!value || value->empty()) {
    return std::nullopt;
  }
  std::error_code ec;
  fs::path file = fs::absolute(*value, ec);
  return ec ? std::nullopt : std::optional<fs::path>(file);
}

std::string agent() {
  return text("SANDSHIM_AGENT").value_or("");
}

std::optional<std::string> broker_mode() {
  auto value = text("SANDSHIM_BROKER");
  return value && !value->empty() ? value : std::nullopt;
}

std::optional<fs::path> broker_socket() {
  return absolute("SANDSHIM_BROKER_SOCKET");
}

std::optional<std::string> docker_host() {
  return text("DOCKER_HOST");
}

std::optional<fs::path> zdotdir() {
  return absolute("ZDOTDIR");
}

std::optional<std::string> shell_variable(const std::string& name) {
  return text(name.c_str());
}

}  // namespace sandshim::environment
