#include "engine/remote_workspace.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/sha256.hpp"
#include "common/strings.hpp"
#include "common/tar.hpp"
#include "common/tar_extract.hpp"
#include "policy/reach.hpp"

namespace sandshim::shim {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::string_view k_volume_prefix = "sandshim-ws-";
constexpr std::string_view k_fill_prefix = "sandshim-wsfill-";
constexpr const char* k_label_fill = "org.sandshim.snapshot.fill";
constexpr const char* k_label_writable = "org.sandshim.writable";
constexpr const char* k_helper_root = "/.sandshim-fill";
constexpr auto k_fill_wait = std::chrono::seconds(120);

// One path of the tree as the snapshot sees it.
struct TreeEntry {
  std::string relative;
  tar::Kind kind = tar::Kind::file;
  bool executable = false;
  uint64_t size = 0;
  std::string digest;  // a file's SHA-256; a symlink's target
  // The shortcut: a file whose device, inode, size and mtime are unchanged keeps its digest.
  uint64_t device = 0;
  uint64_t inode = 0;
  int64_t mtime_ns = 0;
};

std::string short_hex(std::string_view text, size_t digits) {
  return sha256_hex(text).substr(0, digits);
}

fs::path digest_cache_file(const fs::path& workspace) {
  return home_directory() / ".cache" / "sandshim" / "snapshots" /
         (short_hex(workspace.string(), 16) + ".tsv");
}

std::string cache_key(const TreeEntry& entry) {
  return std::to_string(entry.device) + ":" + std::to_string(entry.inode) + ":" +
         std::to_string(entry.size) + ":" + std::to_string(entry.mtime_ns);
}

// relative path -> "dev:ino:size:mtime" and digest, from the last snapshot of this workspace.
std::map<std::string, std::pair<std::string, std::string>> read_digest_cache(const fs::path& file) {
  std::map<std::string, std::pair<std::string, std::string>> cache;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    auto first = line.find('\t');
    auto second = first == std::string::npos ? first : line.find('\t', first + 1);
    if (second != std::string::npos) {
      cache[line.substr(second + 1)] = {line.substr(0, first),
                                        line.substr(first + 1, second - first - 1)};
    }
  }
  return cache;
}

void write_digest_cache(const fs::path& file, const std::vector<TreeEntry>& tree) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  fs::path temporary = file.string() + "." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::trunc);
    for (const auto& entry : tree) {
      if (entry.kind == tar::Kind::file && entry.relative.find('\n') == std::string::npos) {
        out << cache_key(entry) << '\t' << entry.digest << '\t' << entry.relative << '\n';
      }
    }
  }
  fs::rename(temporary, file, ec);
}

std::string read_whole(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Fatal("the workspace file " + quoted(path.string()) + " cannot be read");
  }
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool is_hidden(const fs::path& path, const std::vector<fs::path>& hidden) {
  return std::any_of(hidden.begin(), hidden.end(), [&](const fs::path& masked) {
    auto [end, _] = std::mismatch(masked.begin(), masked.end(), path.begin(), path.end());
    return end == masked.end();
  });
}

// The entry for one path, or nothing for what a snapshot does not carry (sockets, fifos,
// devices).
std::optional<TreeEntry> tree_entry(const fs::path& workspace, const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return std::nullopt;  // gone since the listing
  }
  TreeEntry entry;
  entry.relative = path.lexically_relative(workspace).string();
  entry.executable = (st.st_mode & 0111) != 0;
  entry.device = st.st_dev;
  entry.inode = st.st_ino;
  entry.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  if (S_ISDIR(st.st_mode)) {
    entry.kind = tar::Kind::directory;
  } else if (S_ISLNK(st.st_mode)) {
    entry.kind = tar::Kind::symlink;
    entry.digest = fs::read_symlink(path).string();
  } else if (S_ISREG(st.st_mode)) {
    entry.size = static_cast<uint64_t>(st.st_size);
  } else {
    return std::nullopt;
  }
  return entry;
}

// A file's digest: the cached one while its key (size, mtime, inode) holds, else its content's.
std::string file_digest(const TreeEntry& entry, const fs::path& path,
                        const std::map<std::string, std::pair<std::string, std::string>>& cache) {
  auto cached = cache.find(entry.relative);
  return cached != cache.end() && cached->second.first == cache_key(entry)
             ? cached->second.second
             : sha256_hex(read_whole(path));
}

// The workspace's paths in order, each file's digest from the cache or its content.
std::vector<TreeEntry> walk_tree(const fs::path& workspace, const std::vector<fs::path>& hidden) {
  auto cache = read_digest_cache(digest_cache_file(workspace));
  std::vector<TreeEntry> tree;
  std::error_code ec;
  auto it = fs::recursive_directory_iterator(workspace, ec);
  if (ec) {
    throw Fatal("the workspace " + quoted(workspace.string()) +
                " cannot be listed: " + ec.message());
  }
  for (; it != fs::end(it); it.increment(ec)) {
    if (ec) {
      throw Fatal("the workspace cannot be listed: " + ec.message());
    }
    if (is_hidden(it->path(), hidden)) {
      it.disable_recursion_pending();
      continue;
    }
    if (auto entry = tree_entry(workspace, it->path())) {
      if (entry->kind == tar::Kind::file) {
        entry->digest = file_digest(*entry, it->path(), cache);
      }
      tree.push_back(std::move(*entry));
    }
  }
  std::sort(tree.begin(), tree.end(),
            [](const TreeEntry& a, const TreeEntry& b) { return a.relative < b.relative; });
  write_digest_cache(digest_cache_file(workspace), tree);
  return tree;
}

// The tree's identity: every path, kind, execute bit and content (or link target).
std::string tree_digest(const std::vector<TreeEntry>& tree) {
  std::string listing;
  for (const auto& entry : tree) {
    listing += std::to_string(static_cast<int>(entry.kind)) + (entry.executable ? "x " : "- ") +
               std::to_string(entry.size) + " " + entry.digest + " " + entry.relative + '\0';
  }
  return sha256_hex(listing);
}

// The snapshot as a tar under `top`: root-owned, directories 0555, files 0444 (0555 when
// executable); the volume is mounted read-only as well, so neither root nor the run's user can
// change it.
std::string snapshot_archive(const fs::path& workspace, const std::vector<TreeEntry>& tree,
                             const std::string& top) {
  tar::Writer writer;
  writer.add({top, tar::Kind::directory, 0555, 0, 0, 0, "", ""});
  for (const auto& entry : tree) {
    tar::Entry out{top + "/" + entry.relative, entry.kind, 0444, 0, 0, 0, "", ""};
    if (entry.kind == tar::Kind::directory || entry.executable) {
      out.mode = 0555;
    }
    if (entry.kind == tar::Kind::symlink) {
      out.mode = 0777;
      out.link = entry.digest;
    }
    if (entry.kind == tar::Kind::file) {
      out.data = read_whole(workspace / entry.relative);
      if (sha256_hex(out.data) != entry.digest) {
        throw Fatal("the workspace file " + quoted(entry.relative) +
                    " changed while its snapshot was made; run again");
      }
    }
    writer.add(out);
  }
  return writer.finish();
}

[[noreturn]] void engine_failure(const std::string& what, const engine::Reply& reply) {
  throw Fatal("the remote engine: " + what + ": " + engine::error_message(reply));
}

// A container that is never started: the daemon unpacks archives into its volumes.
void create_helper(const engine::ApiClient& api, const std::string& name, const std::string& image,
                   const json& mounts, const std::string& fill_label) {
  json body = {{"Image", image},
               {"Cmd", {"/nonexistent"}},
               {"NetworkDisabled", true},
               {"Labels", {{k_label_fill, fill_label}}},
               {"HostConfig", {{"NetworkMode", "none"}, {"Mounts", mounts}}}};
  engine::Reply created = api.create(name, body.dump());
  if (!created.ok()) {
    if (created.status == 409) {
      throw std::runtime_error("busy");
    }
    engine_failure("creating the helper container " + quoted(name), created);
  }
}

bool fill_in_progress(const engine::ApiClient& api, const std::string& volume) {
  return !engine::container_ids(api.list_by_label(std::string(k_label_fill) + "=" + volume))
              .empty();
}

// Another run fills the same snapshot: wait for it. One that never ends (its shim was killed
// mid-send) is cleared, so the next run sends the tree again.
void wait_for_fill(const engine::ApiClient& api, const std::string& volume,
                   const std::string& helper) {
  auto until = std::chrono::steady_clock::now() + k_fill_wait;
  while (fill_in_progress(api, volume)) {
    if (std::chrono::steady_clock::now() > until) {
      api.remove(helper);
      api.remove_volume(volume);
      throw Fatal("the remote engine: the snapshot " + volume +
                  " was still being filled after 120 s; it was cleared: run again");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

std::string fill_helper_name(const std::string& volume) {
  return std::string(k_fill_prefix) + volume.substr(k_volume_prefix.size());
}

// The helper's create makes the volume too, so no run sees the volume without the helper that
// says it is being filled.
void fill_snapshot(const engine::ApiClient& api, const std::string& volume,
                   const std::string& archive_text, const std::string& image) {
  std::string helper = fill_helper_name(volume);
  json mounts = json::array(
      {{{"Type", "volume"}, {"Source", volume}, {"Target", std::string(k_helper_root) + "/ws"}}});
  try {
    create_helper(api, helper, image, mounts, volume);
  } catch (const std::runtime_error&) {
    wait_for_fill(api, volume, helper);
    return;
  }
  engine::Reply put = api.put_archive(helper, k_helper_root, archive_text);
  api.remove(helper);
  if (!put.ok()) {
    api.remove_volume(volume);
    engine_failure("sending the workspace", put);
  }
}

uint32_t user_part(const std::string& user, bool group) {
  auto colon = user.find(':');
  std::string text =
      group ? (colon == std::string::npos ? "" : user.substr(colon + 1)) : user.substr(0, colon);
  return text.empty() || text.find_first_not_of("0123456789") != std::string::npos
             ? 0
             : static_cast<uint32_t>(std::stoul(text));
}

}  // namespace

ShippedWorkspace ship_snapshot(const engine::ApiClient& api, const fs::path& workspace,
                               const std::vector<fs::path>& hidden, const std::string& image,
                               const std::string& user) {
  std::vector<TreeEntry> tree = walk_tree(workspace, hidden);
  ShippedWorkspace shipped;
  shipped.workspace = workspace;
  shipped.uid = user_part(user, false);
  shipped.gid = user_part(user, true);
  shipped.volume = std::string(k_volume_prefix) + short_hex(workspace.string(), 12) + "-" +
                   tree_digest(tree).substr(0, 32);
  for (const auto& entry : tree) {
    shipped.files += entry.kind == tar::Kind::file ? 1 : 0;
    shipped.bytes += entry.size;
  }
  engine::Reply existing = api.inspect_volume(shipped.volume);
  if (existing.ok()) {
    wait_for_fill(api, shipped.volume, fill_helper_name(shipped.volume));
    shipped.reused = true;
    return shipped;
  }
  if (existing.status != 404) {
    engine_failure("looking for the snapshot " + shipped.volume, existing);
  }
  fill_snapshot(api, shipped.volume, snapshot_archive(workspace, tree, "ws"), image);
  collect_snapshots(api, workspace);
  return shipped;
}

namespace {

// A local mount as the remote engine takes it: the workspace and sandbox.writable paths become
// their volumes; a read-only mask inside the workspace is left out (nullopt); anything else of
// this machine cannot travel.
std::optional<json> remote_mount(const json& mount, const ShippedWorkspace& shipped) {
  fs::path source = mount.value("Source", "");
  fs::path target = mount.value("Target", "");
  if (source == shipped.workspace && target == shipped.workspace) {
    return json{{"Type", "volume"},
                {"Source", shipped.volume},
                {"Target", target.string()},
                {"ReadOnly", true}};
  }
  if (auto it = std::find(shipped.writable.begin(), shipped.writable.end(), source);
      it != shipped.writable.end() && shipped.writable_volumes.size() == shipped.writable.size()) {
    return json{{"Type", "volume"},
                {"Source", shipped.writable_volumes[it - shipped.writable.begin()]},
                {"Target", target.string()},
                {"ReadOnly", false}};
  }
  if (is_hidden(target, {shipped.workspace}) && mount.value("ReadOnly", false)) {
    return std::nullopt;  // a mask or a protected name: the snapshot never held what it covers
  }
  throw Fatal("engine.endpoint is remote: the mount of " + quoted(source.string()) +
              " names a file of this machine (only the workspace and sandbox.writable "
              "travel to a remote engine; images.NAME = host, sandbox.cache and "
              "sandbox.network = allowlist need a local engine)");
}

}  // namespace

std::string remote_create_body(const std::string& body_text, const ShippedWorkspace& shipped) {
  json body = json::parse(body_text);
  json& host = body["HostConfig"];
  json mounts = json::array();
  for (const auto& mount : host.value("Mounts", json::array())) {
    if (std::optional<json> remote = remote_mount(mount, shipped)) {
      mounts.push_back(*remote);
    }
  }
  host["Mounts"] = mounts;
  if (!shipped.writable.empty()) {
    host["AutoRemove"] = false;
  }
  return body.dump();
}

namespace {

// One path of a writable tree as it goes into the archive under `top`: the run's user owns it.
tar::Entry writable_entry(const TreeEntry& entry, const fs::path& path, const std::string& top,
                          const ShippedWorkspace& shipped) {
  struct stat st {};
  ::lstat(path.c_str(), &st);
  tar::Entry out{top + "/" + entry.relative,
                 entry.kind,
                 st.st_mode & 0777,
                 shipped.uid,
                 shipped.gid,
                 0,
                 "",
                 ""};
  if (entry.kind == tar::Kind::symlink) {
    out.link = entry.digest;
  } else if (entry.kind == tar::Kind::file) {
    out.data = read_whole(path);
  }
  return out;
}

// `dir`'s tree under `top` in the archive, owned by the run's user with its modes (no set-id).
void add_writable_tree(tar::Writer& writer, const fs::path& dir, const std::string& top,
                       const ShippedWorkspace& shipped, const std::vector<fs::path>& hidden) {
  writer.add({top, tar::Kind::directory, 0755, shipped.uid, shipped.gid, 0, "", ""});
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (is_hidden(it->path(), hidden)) {
      it.disable_recursion_pending();
      continue;
    }
    if (auto entry = tree_entry(dir, it->path())) {
      writer.add(writable_entry(*entry, it->path(), top, shipped));
    }
  }
  if (ec) {
    throw Fatal("sandbox.writable " + quoted(dir.string()) + " cannot be listed: " + ec.message());
  }
}

bool is_protected(const std::string& relative) {
  std::string first = relative.substr(0, relative.find('/'));
  const auto& names = protected_names();
  return std::find(names.begin(), names.end(), first) != names.end();
}

// The volume of the i-th writable path, labelled with its run, as the helper mounts it.
json writable_volume(const engine::ApiClient& api, ShippedWorkspace& shipped,
                     const std::string& container, size_t i) {
  std::string volume = container + "-rw" + std::to_string(i);
  engine::Reply created = api.create_volume(volume, {{k_label_writable, container}});
  if (!created.ok()) {
    engine_failure("creating the volume for sandbox.writable", created);
  }
  shipped.writable_volumes.push_back(volume);
  return {{"Type", "volume"},
          {"Source", volume},
          {"Target", std::string(k_helper_root) + "/" + std::to_string(i)}};
}

}  // namespace

void ship_writable(const engine::ApiClient& api, ShippedWorkspace& shipped,
                   const std::string& container, const std::string& image,
                   const std::vector<fs::path>& hidden) {
  if (shipped.writable.empty()) {
    return;
  }
  json mounts = json::array();
  tar::Writer writer;
  for (size_t i = 0; i < shipped.writable.size(); ++i) {
    mounts.push_back(writable_volume(api, shipped, container, i));
    add_writable_tree(writer, shipped.writable[i], std::to_string(i), shipped, hidden);
  }
  std::string helper = container + "-rwfill";
  try {
    create_helper(api, helper, image, mounts, container);
  } catch (const std::runtime_error&) {
    throw Fatal("the remote engine: the helper container " + quoted(helper) + " exists already");
  }
  engine::Reply put = api.put_archive(helper, k_helper_root, writer.finish());
  api.remove(helper);
  if (!put.ok()) {
    remove_writable_volumes(api, shipped);
    engine_failure("sending sandbox.writable", put);
  }
}

void remove_writable_volumes(const engine::ApiClient& api, const ShippedWorkspace& shipped) {
  for (const auto& volume : shipped.writable_volumes) {
    api.remove_volume(volume);
  }
}

std::string WritableReturn::summary() const {
  return "returned " + std::to_string(files) + " files, " + std::to_string(bytes) + " bytes" +
         (names.empty() ? "" : ": " + join(names, ", "));
}

namespace {

// One writable directory's tree from the container, written beneath it here but for protected
// names, counted into `back`; why nothing came back, or empty.
std::string fetch_directory_back(const engine::ApiClient& api, const std::string& container,
                                 const fs::path& dir, WritableReturn& back) {
  engine::Reply reply = api.get_archive(container, dir.string(), k_max_returned_bytes - back.bytes);
  if (!reply.ok()) {
    return "nothing came back from " + quoted(dir.string()) + ": " + engine::error_message(reply);
  }
  tar::ReadResult archive = tar::read(reply.body, {100000, k_max_returned_bytes - back.bytes});
  if (!archive.error.empty()) {
    return "refused what came back from " + quoted(dir.string()) + ": " + archive.error;
  }
  std::string top = dir.filename().string();
  std::erase_if(archive.entries, [&](const tar::Entry& entry) {
    return entry.path.size() > top.size() + 1 && entry.path.starts_with(top + "/") &&
           is_protected(entry.path.substr(top.size() + 1));
  });
  tar::Extracted written = tar::extract_beneath(dir, archive.entries, top);
  if (!written.error.empty()) {
    return "refused what came back from " + quoted(dir.string()) + ": " + written.error;
  }
  back.files += written.files;
  back.bytes += written.bytes;
  return "";
}

}  // namespace

WritableReturn fetch_writable_back(const engine::ApiClient& api, const std::string& container,
                                   const ShippedWorkspace& shipped) {
  WritableReturn back;
  for (const auto& dir : shipped.writable) {
    back.failure = fetch_directory_back(api, container, dir, back);
    if (!back.failure.empty()) {
      break;
    }
    back.names.push_back(dir.lexically_relative(shipped.workspace).string());
  }
  if (!shipped.report_file.empty()) {
    nlohmann::json report = {{"files", back.files},
                             {"bytes", back.bytes},
                             {"names", back.names},
                             {"failure", back.failure}};
    std::ofstream(shipped.report_file, std::ios::trunc) << report.dump();
  }
  return back;
}

std::optional<WritableReturn> take_return_report(const std::string& report_file) {
  std::ifstream in(report_file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ::unlink(report_file.c_str());
  nlohmann::json report = nlohmann::json::parse(text, nullptr, false);
  if (!report.is_object()) {
    return std::nullopt;
  }
  try {
    return WritableReturn{report.at("files").get<uint64_t>(), report.at("bytes").get<uint64_t>(),
                          report.at("names").get<std::vector<std::string>>(),
                          report.at("failure").get<std::string>()};
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

void collect_snapshots(const engine::ApiClient& api, const fs::path& workspace) {
  std::string prefix = std::string(k_volume_prefix) + short_hex(workspace.string(), 12) + "-";
  engine::Reply listed = api.list_volumes_by_name(prefix);
  auto body = json::parse(listed.ok() ? listed.body : "{}", nullptr, false);
  if (!body.is_object() || !body.contains("Volumes") || !body["Volumes"].is_array()) {
    return;
  }
  std::vector<std::pair<std::string, std::string>> volumes;  // created, name
  for (const auto& volume : body["Volumes"]) {
    if (volume.is_object() && volume.value("Name", "").starts_with(prefix)) {
      volumes.emplace_back(volume.value("CreatedAt", ""), volume.value("Name", ""));
    }
  }
  std::sort(volumes.rbegin(), volumes.rend());
  for (size_t i = k_snapshots_kept; i < volumes.size(); ++i) {
    api.remove_volume(volumes[i].second);  // 409 while a run uses it: it stays for next time
  }
}

}  // namespace sandshim::shim
