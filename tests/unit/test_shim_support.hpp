#pragma once

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/process.hpp"

namespace sandshim::test {

// Whether an engine argument list holds `flag`, and where (args.size() when it does not).
inline bool has(const std::vector<std::string>& args, const std::string& flag) {
  return std::find(args.begin(), args.end(), flag) != args.end();
}

inline size_t index_of(const std::vector<std::string>& args, const std::string& value) {
  return static_cast<size_t>(std::find(args.begin(), args.end(), value) - args.begin());
}

// A temporary directory per test, removed on success and kept (path printed) on failure.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "sandshim-unit-XXXXXX").string();
    m_path = ::mkdtemp(pattern.data());
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    if (std::uncaught_exceptions() == 0) {
      std::error_code ec;
      std::filesystem::remove_all(m_path, ec);
    }
  }
  const std::filesystem::path& path() const { return m_path; }
  std::filesystem::path write(const std::string& name, const std::string& content) const {
    auto file = m_path / name;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << content;
    return file;
  }

 private:
  std::filesystem::path m_path;
};

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : m_name(name) {
    if (const char* old = std::getenv(name)) {
      m_old = old;
      m_had = true;
    }
    ::setenv(name, value.c_str(), 1);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    if (m_had) {
      ::setenv(m_name, m_old.c_str(), 1);
    } else {
      ::unsetenv(m_name);
    }
  }

 private:
  const char* m_name;
  std::string m_old;
  bool m_had = false;
};

}  // namespace sandshim::test
