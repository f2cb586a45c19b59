#pragma once

#include <stdlib.h>  // mkdtemp

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "common/io.hpp"
#include "engine/engine_create.hpp"
#include "policy/limit_hints.hpp"

namespace sandshim::shim {

// How often the container's pids events are read while it runs: its cgroup is gone once it
// exits, so the count is sampled, not read at the end.
inline constexpr int64_t k_pids_sample_ms = 100;

// Where the engine client writes the id of the container it creates (`--cidfile`), so the run
// loop can find the container's cgroup; a private directory, removed with the run.
class CidFile {
 public:
  // Made when the client needs it only: creating and removing a directory per run is not free
  // (a file system mounted with `discard` waits for the device when the directory goes).
  void create() {
    if (m_created) {
      return;
    }
    m_created = true;
    std::error_code ec;  // a TMPDIR that does not exist: the system's /tmp
    std::filesystem::path dir = std::filesystem::temp_directory_path(ec);
    std::string pattern =
        ((ec ? std::filesystem::path("/tmp") : dir) / "sandshim-cid.XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr) {
      m_dir = pattern;
    }
  }
  CidFile() = default;
  CidFile(const CidFile&) = delete;
  CidFile& operator=(const CidFile&) = delete;
  ~CidFile() {
    std::error_code ec;
    if (!m_dir.empty()) {
      std::filesystem::remove_all(m_dir, ec);
    }
  }
  // Empty when no private directory could be made: the run goes on without pids events.
  std::string path() const { return m_dir.empty() ? "" : (m_dir / "cid").string(); }
  // The id, once the client wrote it.
  std::string id() const {
    std::ifstream in(path());
    std::string id;
    std::getline(in, id);
    return id.size() == 64 ? id : "";
  }

 private:
  std::filesystem::path m_dir;
  bool m_created = false;
};

// The forks a container's pids controller refused, sampled while it runs (cold runs on a local
// engine; a warm exec, a remote engine or an unreadable cgroup leave it unknown).
class PidsEvents {
 public:
  // `engine_args` gain the --cidfile that names the container.
  void attach(std::vector<std::string>& argv) {
    if (argv.size() <= 1 || argv[1] != "run") {
      return;  // a warm exec creates no container: there is no id to learn
    }
    m_cid.create();
    if (!m_cid.path().empty()) {
      argv.insert(argv.begin() + 2, "--cidfile=" + m_cid.path());
      m_enabled = true;
    }
  }
  // The API client writes the id itself: the file it writes to.
  std::string attach_api_client() {
    m_cid.create();
    m_enabled = !m_cid.path().empty();
    return m_cid.path();
  }
  void sample(int64_t now) {
    if (!m_enabled || now < m_next_ms) {
      return;
    }
    m_next_ms = now + k_pids_sample_ms;
    if (m_path.empty()) {
      m_path = pids_events_path(m_cid.id());
    }
    if (!m_path.empty()) {
      if (auto refused = parse_pids_events(read_file_text(m_path).value_or(""))) {
        m_refused = std::max(m_refused.value_or(0), *refused);
      }
    }
  }
  int64_t next_ms() const { return m_enabled ? m_next_ms : INT64_MAX; }
  std::optional<int64_t> refused() const { return m_refused; }

 private:
  CidFile m_cid;
  bool m_enabled = false;
  int64_t m_next_ms = 0;
  std::string m_path;
  std::optional<int64_t> m_refused;
};

}  // namespace sandshim::shim
