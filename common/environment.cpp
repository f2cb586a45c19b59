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

std::optional<fs::path> claude_config_dir() {
  return absolute("CLAUDE_CONFIG_DIR");
}

std::string claude_env_file() {
  return text("CLAUDE_ENV_FILE").value_or("");
}

std::string claude_shell_prefix() {
  return text("CLAUDE_CODE_SHELL_PREFIX").value_or("");
}

std::optional<fs::path> codex_home() {
  return absolute("CODEX_HOME");
}

std::optional<fs::path> gemini_trusted_folders_file() {
  return absolute("GEMINI_CLI_TRUSTED_FOLDERS_PATH");
}

bool gemini_trust_workspace() {
  return flag("GEMINI_CLI_TRUST_WORKSPACE");
}

}  // namespace sandshim::environment
