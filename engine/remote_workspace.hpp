#pragma once

// A run on an engine on another machine (engine.endpoint = tcp://… with TLS). The workspace's
// path names nothing there, so it travels: a content-addressed snapshot volume on the engine,
// filled once through the archive endpoint and mounted read-only at the workspace's path; the
// paths sandbox.writable names travel in before start and come back after exit, through a
// careful tar reader (common/tar_extract.hpp).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "engine/api_client.hpp"

namespace sandshim::shim {

// What a remote run ships, decided on this machine before the container exists.
struct ShippedWorkspace {
  std::filesystem::path workspace;
  std::string volume;   // sandshim-ws-<tree digest>: the snapshot, read-only in the run
  bool reused = false;  // the engine already held this snapshot: nothing was sent
  uint64_t files = 0;   // in the snapshot
  uint64_t bytes = 0;   // of file content in the snapshot
  std::vector<std::filesystem::path> writable;  // sandbox.writable, absolute: in, then back
  std::vector<std::string> writable_volumes;    // one per writable path, this run's alone
  uint32_t uid = 0;                             // the run's user, who owns what it may write
  uint32_t gid = 0;
  std::string report_file;  // where the API client writes what came back (WritableReturn, JSON)
};

// The snapshot volumes kept per workspace on an engine; older ones are removed.
inline constexpr size_t k_snapshots_kept = 3;

// Hashes the workspace (without the paths in `hidden`, which never leave this machine), and
// makes sure the engine holds it as a volume: reused when it does, else filled through a helper
// container created (never started) from `image`. Throws Fatal with the engine's words.
ShippedWorkspace ship_snapshot(const engine::ApiClient& api, const std::filesystem::path& workspace,
                               const std::vector<std::filesystem::path>& hidden,
                               const std::string& image, const std::string& user);

// The create body for the remote engine: the workspace's bind mount becomes the snapshot volume
// (read-only), each writable path's bind an anonymous volume; any other bind mount names this
// machine's files and is refused (Fatal, naming the option). AutoRemove is off when writable
// paths come back (they are fetched after the exit); with none it stays as the run asked, so the
// engine removes the container and the run returns at its exit, one round trip sooner.
std::string remote_create_body(const std::string& body, const ShippedWorkspace& shipped);

// The writable paths' contents, each into a volume of this run's own (named after
// `container`), owned by the run's user, through a helper container created from `image`
// (never started). Hidden paths stay here. Throws Fatal with the engine's words.
void ship_writable(const engine::ApiClient& api, ShippedWorkspace& shipped,
                   const std::string& container, const std::string& image,
                   const std::vector<std::filesystem::path>& hidden);

// Removes the run's writable volumes (after its container is gone).
void remove_writable_volumes(const engine::ApiClient& api, const ShippedWorkspace& shipped);

// What came back of a run's writable paths: the failure that stopped the return, if any, is a
// field of its own, so no reader matches text.
struct WritableReturn {
  uint64_t files = 0;
  uint64_t bytes = 0;
  std::vector<std::string> names;  // the paths that came back, relative to the workspace
  std::string failure;             // "refused what came back from …"; empty: none
  // "returned 2 files, 18 bytes: out", for the audit row's message (the failure not included).
  std::string summary() const;
};

// In the API client, after exit: the writable paths back into this machine's workspace, through
// the careful reader (size cap, no links, nothing outside the path; names that always stay
// read-only, such as .git, are not written back); also written to the report file.
WritableReturn fetch_writable_back(const engine::ApiClient& api, const std::string& container,
                                   const ShippedWorkspace& shipped);

// The report file the API client's process wrote; nullopt when it wrote none (it never got there)
// or the file does not parse. The file is removed.
std::optional<WritableReturn> take_return_report(const std::string& report_file);

// The most a run may send back, all writable paths together.
inline constexpr uint64_t k_max_returned_bytes = 256ULL << 20;

// Removes all but the k_snapshots_kept newest snapshot volumes of `workspace` (a volume in use
// stays: the engine refuses).
void collect_snapshots(const engine::ApiClient& api, const std::filesystem::path& workspace);

}  // namespace sandshim::shim
