#pragma once

// Helpers shared by the hooks and install unit tests.

#include <unistd.h>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "hooks/decide.hpp"

namespace sandshim::testing {

namespace fs = std::filesystem;

// A fresh directory per test; kept (and its path printed) when the test fails with a REQUIRE,
// or always with SANDSHIM_KEEP_TEST_DIRS=1, so a failure can be inspected.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "sandshim-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("mkdtemp failed");
    }
    m_path = fs::canonical(pattern);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    if (std::uncaught_exceptions() > 0 || std::getenv("SANDSHIM_KEEP_TEST_DIRS") != nullptr) {
      std::cerr << "test directory kept: " << m_path << "\n";
      return;
    }
    std::error_code ec;
    fs::remove_all(m_path, ec);
  }
  const fs::path& path() const { return m_path; }
  fs::path operator/(const fs::path& relative) const { return m_path / relative; }

 private:
  fs::path m_path;
};

inline std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

inline fs::path data_dir() {
  return fs::path(SANDSHIM_TEST_DATA_DIR);
}

// Sets environment variables for one test and puts the old values back afterwards.
class EnvOverride {
 public:
  EnvOverride(std::initializer_list<std::pair<const char*, std::string>> values) {
    for (const auto& [name, value] : values) {
      const char* old = std::getenv(name);
      m_saved.emplace_back(name, old == nullptr ? std::nullopt : std::optional<std::string>(old));
      ::setenv(name, value.c_str(), 1);
    }
  }
  EnvOverride(const EnvOverride&) = delete;
  EnvOverride& operator=(const EnvOverride&) = delete;
  ~EnvOverride() {
    for (const auto& [name, value] : m_saved) {
      value ? ::setenv(name.c_str(), value->c_str(), 1) : ::unsetenv(name.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> m_saved;
};

// What every decide() test starts from: python, node and sh shimmed and installed, sandshim and
// its shims where `sandshim install` puts them for user u, an agent session's link.
inline hooks::DecisionInputs decision_inputs(const std::string& mode) {
  hooks::DecisionInputs in;
  in.mode = mode;
  in.shimmed = {"python", "python3", "node", "sh"};
  in.shim_dir = "/home/u/.local/share/sandshim/bin";
  in.sandshim = "/usr/local/bin/sandshim";
  in.shim_installed = [](const std::string&) { return true; };
  in.home = "/home/u";
  in.link = {"claude-code", "session-1", "toolu_1"};
  return in;
}

}  // namespace sandshim::testing
