#include "pool/pool.hpp"

#include "pool/pool_files.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>

#include "common/hex.hpp"
#include "common/io.hpp"
#include "common/paths.hpp"
#include "common/process.hpp"
#include "common/sha256.hpp"
#include "common/strings.hpp"
#include "common/unique_fd.hpp"
#include "engine/engine_client.hpp"
#include "engine/engine_names.hpp"
#include "engine/image_probe.hpp"
#include "inside/launch_protocol.hpp"
#include "run/broker_launch.hpp"
#include "run/caller.hpp"
#include "run/guardian.hpp"
#include "run/hardening.hpp"
#include "run/inside_binary.hpp"
#include "run/step_timer.hpp"

namespace sandshim::shim {

namespace {

namespace fs = std::filesystem;

// A claim just before expiry still has the run's whole deadline, and this, before the idle
// init ends the container by itself.
constexpr int64_t k_life_grace_s = 10;
constexpr auto k_engine_call_timeout = std::chrono::seconds(60);
// How long a run's own refill waits for the key's lock to plan its starts before it leaves the
// plan to the detached process (a drain holds the lock while pending starts end).
constexpr int64_t k_plan_lock_patience_ms = 20;

int64_t now_epoch_s() {
  return wall_clock_ms() / 1000;
}

// A drain's mark in a key's directory: a refill asked for before it plans nothing, since it would
// start a container after the drain that wants the pool empty (a refill whose run could not take
// the key's lock in time plans once its caller has exited).
constexpr const char* k_drained_file = ".drained";

void mark_drained(const fs::path& dir) {
  std::ofstream(dir / k_drained_file) << wall_clock_ms();
}

bool drained_since(const fs::path& dir, int64_t since_ms) {
  std::ifstream in(dir / k_drained_file);
  int64_t at = 0;
  return (in >> at) && at >= since_ms;
}

int64_t ceil_seconds(int64_t ms) {
  return (ms + 999) / 1000;
}

// Labels the containers of this user's pools, so a drain never touches another user's.
std::string owner_label() {
  return sha256_hex(pool_dir().string() + ":" + std::to_string(::getuid())).substr(0, 16);
}

void ensure_directory(const fs::path& dir) {
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);
}

// Entry names are run ids; anything else in the directory (temporary files) is not an entry.
bool is_entry_name(const std::string& name) {
  return is_lower_hex(name);
}

std::string serialize(const PoolEntry& entry) {
  std::ostringstream out;
  out << "image " << entry.image << "\nimage_id " << entry.image_id << "\nworkspace "
      << entry.workspace << "\nexpires " << entry.expires_epoch_s << "\ndeadline "
      << entry.deadline_epoch_s << "\n";
  if (entry.launcher_pid > 0) {
    out << "launcher " << entry.launcher_pid << " " << entry.launcher_token << "\n";
  }
  if (entry.surplus) {
    out << "surplus 1\n";
  }
  for (const auto& arg : entry.create_args) {
    out << "arg " << arg << "\n";
  }
  return out.str();
}

// One "FIELD VALUE" line of an entry file; fields this version does not know are skipped.
void read_entry_field(PoolEntry& entry, const std::string& field, const std::string& value) {
  if (field == "image") {
    entry.image = value;
  } else if (field == "image_id") {
    entry.image_id = value;
  } else if (field == "workspace") {
    entry.workspace = value;
  } else if (field == "expires" || field == "deadline") {
    int64_t number = value.empty() ? 0 : std::stoll(value);
    (field == "expires" ? entry.expires_epoch_s : entry.deadline_epoch_s) = number;
  } else if (field == "arg") {
    entry.create_args.push_back(value);
  } else if (field == "launcher") {
    std::istringstream words(value);
    words >> entry.launcher_pid >> entry.launcher_token;
  } else if (field == "surplus") {
    entry.surplus = value == "1";
  }
}

std::optional<PoolEntry> read_entry(const fs::path& path, const std::string& key) {
  std::ifstream in(path);
  if (!in) {
    return std::nullopt;
  }
  PoolEntry entry;
  entry.key = key;
  entry.run_id = path.filename().string();
  std::string line;
  while (std::getline(in, line)) {
    std::string field = line.substr(0, line.find(' '));
    std::string value = line.size() > field.size() ? line.substr(field.size() + 1) : "";
    read_entry_field(entry, field, value);
  }
  if (entry.image_id.empty() || entry.expires_epoch_s == 0) {
    return std::nullopt;
  }
  return entry;
}

std::vector<std::string> entry_names(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& item : fs::directory_iterator(dir, ec)) {
    std::string name = item.path().filename().string();
    if (is_entry_name(name)) {
      names.push_back(name);
    }
  }
  return names;
}

// Key directories: every directory of the pool but claimed/.
std::vector<std::string> pool_keys() {
  std::vector<std::string> keys;
  std::error_code ec;
  for (const auto& item : fs::directory_iterator(pool_dir(), ec)) {
    std::string name = item.path().filename().string();
    if (item.is_directory(ec) && is_entry_name(name)) {
      keys.push_back(name);
    }
  }
  return keys;
}

// The probe prefetch_pool_image_id sent, for the claim of this process's one run.
struct PrefetchedProbe {
  std::string image;
  pid_t owner = 0;
  std::unique_ptr<ImageProbe> probe;
};

PrefetchedProbe& prefetched() {
  static PrefetchedProbe slot;
  return slot;
}

// The prefetched probe of `image`, once. A forked process (a detached refill) never uses its
// parent's: the probe's socket was closed there, and its number may name another file now, so it
// is dropped without being closed.
std::unique_ptr<ImageProbe> take_prefetched(const std::string& image) {
  PrefetchedProbe& slot = prefetched();
  if (slot.owner != ::getpid()) {
    (void)slot.probe.release();
    return nullptr;
  }
  return slot.image == image ? std::move(slot.probe) : nullptr;
}

bool remove_container(const Engine& engine, const std::string& name) {
  return EngineClient(engine).remove(name, k_engine_call_timeout).ok();
}

// Takes an idle entry out of the pool: rename(2) is atomic, so of any number of concurrent
// takers exactly one succeeds.
bool take(const fs::path& entry_path, const std::string& run_id) {
  return ::rename(entry_path.c_str(), (claimed_dir() / run_id).c_str()) == 0;
}

// Removes an idle container for good: taken first, so no run can claim it meanwhile.
bool discard(const Engine& engine, const fs::path& key_dir, const std::string& run_id) {
  if (!take(key_dir / run_id, run_id)) {
    return false;
  }
  remove_container(engine, container_name_of(run_id));
  remove_broker_launch_dir(run_id);
  std::error_code ec;
  fs::remove(claimed_dir() / run_id, ec);
  return true;
}

UniqueFd open_key_lock(const std::string& key) {
  fs::path path = pool_dir() / (key + ".lock");
  return UniqueFd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
}

// Serialises the plans and drains of one key across processes.
UniqueFd lock_key(const std::string& key) {
  UniqueFd fd = open_key_lock(key);
  if (fd.valid()) {
    retry_on_eintr([&] { return ::flock(fd.get(), LOCK_EX); });
  }
  return fd;
}

// The key's lock if it comes within patience_ms, else an invalid fd.
UniqueFd try_lock_key(const std::string& key, int64_t patience_ms) {
  UniqueFd fd = open_key_lock(key);
  int64_t until = monotonic_ms() + patience_ms;
  while (fd.valid() && ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (monotonic_ms() >= until) {
      return UniqueFd();
    }
    ::usleep(1000);
  }
  return fd;
}

// A claim right after a refill must find the launcher listening, or its run goes cold: the entry
// is published once the launcher's socket exists (seen missing on a loaded machine), or after
// the patience regardless (the claim then fails over to a cold run, as before).
void wait_for_launcher(const std::string& socket) {
  constexpr int64_t k_launcher_start_patience_ms = 5000;
  int64_t until = monotonic_ms() + k_launcher_start_patience_ms;
  struct stat info {};
  while (::stat(socket.c_str(), &info) != 0 && monotonic_ms() < until) {
    ::usleep(5000);
  }
}

}  // namespace

struct WarmPool::Plan {
  std::vector<fs::path> starts;  // the reservations, one per container to start
  std::vector<bool> surplus;
};

int64_t pool_cap(const Policy& policy) {
  return std::max(policy.pool_size, policy.pool_max);
}

PoolDemand next_pool_demand(const Policy& policy, PoolDemand demand, PoolDraw draw,
                            bool start_pending, int64_t now_ms, int64_t memory_room) {
  int64_t base = policy.pool_size;
  if (demand.target < base || now_ms - demand.last_draw_ms >= policy.pool_shrink_after_ms) {
    demand.target = base;
  }
  if (draw != PoolDraw::none) {
    if (draw == PoolDraw::missed || start_pending) {
      demand.target = std::max(base + 1, demand.target * 2);
    }
    demand.last_draw_ms = now_ms;
  }
  demand.target = std::min({demand.target, pool_cap(policy), std::max(base, memory_room)});
  return demand;
}

void prefetch_pool_image_id(const Engine& engine, const std::string& image) {
  StepTimer step("engine image inspect (prefetch sent)");
  prefetched().image = image;
  prefetched().owner = ::getpid();
  prefetched().probe = std::make_unique<ImageProbe>(engine, image);
}

std::string pool_key(const Policy& policy, const RunSpec& spec) {
  std::string masked;  // a warm container masks what the workspace held when it started
  for (const auto& path : spec.masks.paths) {
    masked += path.path.string() + "\n";
  }
  // A broker's run: the workspace's device and inode too, so a directory replaced under the
  // same name never gets the old one's containers (the gate would refuse them).
  std::string held;
  if (spec.gate) {  // and what each bind inside it held: a replaced one needs another container
    held = spec.gate->workspace_id;
    for (const auto& [target, identity] : spec.gate->binds) {
      held += "\n" + target.string() + " " + identity;
    }
  }
  for (const auto& path : spec.host_mounts) {  // images.NAME = host: the interpreter found
    held += "\n" + path.string();
  }
  for (gid_t gid : spec.supplementary_gids) {
    held += "\ngroup " + std::to_string(gid);
  }
  for (const auto& [name, value] : spec.host_environment) {
    held += "\n" + name + "=" + value;
  }
  // What is writable, and which protected names stay read-only over it (a name created since
  // the container started would not be covered).
  for (const BindPath& bind : spec.writable_mounts) {
    held += "\n" + bind.target.string() + (bind.read_only ? " ro" : " rw");
  }
  return sha256_hex(policy.digest() + "\n" + spec.image + "\n" + spec.workspace.string() + "\n" +
                    spec.user + "\n" + masked + held)
      .substr(0, 24);
}

WarmPool::WarmPool(const Engine& engine, const Policy& policy, const RunSpec& spec)
    : m_engine(engine), m_policy(policy), m_spec(spec), m_key(pool_key(policy, spec)) {}

// The id the image's tag names now, so a moved tag is never served an old container; over the
// engine's API socket when it has one (a client spawn costs more than the rest of a warm run).
std::optional<std::string> WarmPool::current_image_id() const {
  StepTimer step("engine image inspect (pool)");
  std::unique_ptr<ImageProbe> probe = take_prefetched(m_spec.image);  // its answer is likely in
  if (!probe) {
    probe = std::make_unique<ImageProbe>(m_engine, m_spec.image);
  }
  std::string id = probe->result(
      std::chrono::duration_cast<std::chrono::milliseconds>(k_engine_call_timeout).count());
  if (id.empty()) {
    return std::nullopt;
  }
  return id;
}

std::optional<PoolClaim> WarmPool::claim() const {
  try {
    fs::path dir = pool_dir() / m_key;
    if (entry_names(dir).empty() &&
        (m_policy.pool_claim_wait_ms <= 0 || pending_starts(dir).total() == 0)) {
      return std::nullopt;
    }
    // The tag may name another image since the container started: never serve that one.
    auto image_id = current_image_id();
    if (!image_id) {
      return std::nullopt;
    }
    if (auto claim = take_claimable(*image_id)) {
      return claim;
    }
    return wait_for_start(*image_id);
  } catch (const std::exception&) {
    // An unreadable pool only costs the warm start: the run goes cold.
  }
  return std::nullopt;
}

// The soonest to expire first: the surplus goes before the pool.size stock.
std::optional<PoolClaim> WarmPool::take_claimable(const std::string& image_id) const {
  fs::path dir = pool_dir() / m_key;
  int64_t now = now_epoch_s();
  std::vector<PoolEntry> entries;
  for (const auto& name : entry_names(dir)) {
    auto entry = read_entry(dir / name, m_key);
    if (entry && entry->expires_epoch_s > now && entry->image_id == image_id) {
      entries.push_back(*entry);
    }
  }
  std::sort(entries.begin(), entries.end(), [](const PoolEntry& a, const PoolEntry& b) {
    return a.expires_epoch_s < b.expires_epoch_s;
  });
  for (const auto& entry : entries) {
    if (take(dir / entry.run_id, entry.run_id)) {
      return PoolClaim{entry.run_id, entry.image_id, entry.create_args, entry.launcher_pid,
                       entry.launcher_token};
    }
  }
  return std::nullopt;
}

// A container a refill is starting is ready sooner than a cold run's own: the run waits for it
// (pool.claim_wait at most), and its claim says so, so that its refill grows the target.
std::optional<PoolClaim> WarmPool::wait_for_start(const std::string& image_id) const {
  if (m_policy.pool_claim_wait_ms <= 0) {
    return std::nullopt;
  }
  StepTimer step("pool wait for a starting container");
  fs::path dir = pool_dir() / m_key;
  UniqueFd watch = watch_directory(dir);
  int64_t until = monotonic_ms() + m_policy.pool_claim_wait_ms;
  std::optional<PoolClaim> claim;
  while (!claim && monotonic_ms() < until && pending_starts(dir).total() > 0) {
    wait_for_change(watch, until);
    claim = take_claimable(image_id);
  }
  claim = claim ? claim : take_claimable(image_id);
  if (claim) {
    mark_waited(claim->run_id);
    step.done("claimed " + claim->run_id);
  }
  return claim;
}

bool WarmPool::uses_launcher() const {
  // gVisor's /tmp lives in its own kernel: /proc/PID/root does not reach the launcher's socket.
  // A broker's launcher needs the broker's directory (run/broker_launch.hpp); without, exec.
  return m_policy.pool_start == PoolStart::launcher && !m_engine.dialect.is_podman() &&
         m_policy.runtime != Runtime::runsc && (!m_spec.gate || broker_launch_root());
}

// Starts the container of `entry`: with the launcher as its command, whose process it records,
// or the idle command that `exec` runs beside.
bool WarmPool::create_container(const RunSpec& spec, const std::vector<std::string>& labels,
                                int64_t life_s, PoolEntry& entry) const {
  if (!uses_launcher()) {
    entry.create_args = build_pool_arguments(m_policy, spec, labels, life_s);
    return EngineClient(m_engine).create(entry.create_args, k_engine_call_timeout).ok();
  }
  entry.launcher_token = new_run_id() + new_run_id();
  std::vector<std::string> extra = labels;
  if (uses_broker_launch(spec)) {
    auto flags = broker_launch_flags(spec.run_id);
    if (flags.empty()) {
      return false;
    }
    extra.insert(extra.end(), flags.begin(), flags.end());
  }
  entry.create_args = build_launcher_pool_arguments(
      m_policy, spec, extra, locate_inside_binary(launch::k_binary_name), life_s);
  Engine engine = m_engine;  // the token by name only: never in the process list or the row
  engine.env = m_engine.env_with({{launch::k_token_variable, entry.launcher_token}});
  if (!EngineClient(engine).create(entry.create_args, k_engine_call_timeout).ok()) {
    return false;
  }
  auto pid = EngineClient(m_engine).container_pid(spec.container_name(), k_engine_call_timeout);
  entry.launcher_pid = pid.value_or(0);
  if (pid) {
    wait_for_launcher(launcher_socket_of(spec, *pid));
  }
  return pid.has_value();
}

std::string WarmPool::start_container(const std::string& image_id, bool surplus) const {
  RunSpec spec = m_spec;
  spec.run_id = new_run_id();
  spec.image = image_id;  // by id: the container runs exactly the image its entry names
  spec.cwd = m_spec.workspace;
  spec.env.clear();
  spec.command.clear();
  spec.tty = false;
  int64_t now = now_epoch_s();
  int64_t idle_ms = surplus ? std::min(m_policy.pool_idle_ttl_ms, m_policy.pool_shrink_after_ms)
                            : m_policy.pool_idle_ttl_ms;
  int64_t idle_s = ceil_seconds(idle_ms);
  int64_t life_s = idle_s + ceil_seconds(m_policy.timeout_ms) + k_life_grace_s;
  PoolEntry entry{m_key,        spec.run_id,  m_spec.image, image_id, m_spec.workspace.string(),
                  now + idle_s, now + life_s, {},           0,        "",
                  surplus};
  spec.deadline_epoch_s = entry.deadline_epoch_s;
  std::vector<std::string> labels = {
      label_flag(k_label_pool, m_key), label_flag(k_label_pool_owner, owner_label()),
      label_flag(k_label_pool_expires, std::to_string(entry.expires_epoch_s))};
  if (!create_container(spec, labels, life_s, entry)) {
    remove_container(m_engine, spec.container_name());
    remove_broker_launch_dir(spec.run_id);
    return "";
  }
  // Published only once the container runs, and atomically: a claimer never sees half of it.
  publish_file(pool_dir() / m_key / spec.run_id, serialize(entry));
  return spec.run_id;
}

int WarmPool::refill() const {
  ensure_pool_directories();
  auto image_id = current_image_id();
  if (!image_id) {
    return 0;
  }
  discard_unservable(*image_id);
  Plan plan;
  {
    UniqueFd lock = lock_key(m_key);
    plan = plan_starts(PoolDraw::none);
  }
  int started = start_planned(plan, *image_id);
  wait_for_pending_starts(pool_dir() / m_key);  // other refills': the pool is full on return
  return started;
}

void WarmPool::ensure_pool_directories() const {
  ensure_directory(pool_dir());
  ensure_directory(claimed_dir());
  ensure_directory(pool_dir() / m_key);
}

// Removes the idle containers a claim would not serve: expired, or started from an image the tag
// has left. Unlocked: each is taken by rename(2) first.
void WarmPool::discard_unservable(const std::string& image_id) const {
  fs::path dir = pool_dir() / m_key;
  int64_t now = now_epoch_s();
  for (const auto& name : entry_names(dir)) {
    auto entry = read_entry(dir / name, m_key);
    if (!entry || entry->expires_epoch_s <= now + 1 || entry->image_id != image_id) {
      discard(m_engine, dir, name);
    }
  }
}

// Under the key's lock: the target after `draw`, and a reservation for each container to start
// so that idle and pending ones reach it. Idle plus pending never exceeds the target, so never
// the cap. No engine call: a run's own refill plans before its caller is answered.
WarmPool::Plan WarmPool::plan_starts(PoolDraw draw) const {
  fs::path dir = pool_dir() / m_key;
  int64_t now = now_epoch_s();
  int64_t base = 0;
  int64_t surplus = 0;
  for (const auto& name : entry_names(dir)) {
    auto entry = read_entry(dir / name, m_key);
    if (entry && entry->expires_epoch_s > now + 1) {
      (entry->surplus ? surplus : base) += 1;
    }
  }
  PendingStarts pending = pending_starts(dir);
  PoolDemand demand = next_pool_demand(m_policy, read_demand(m_key), draw, pending.total() > 0,
                                       wall_clock_ms(), memory_room(m_policy));
  write_demand(m_key, demand);
  Plan plan;
  int64_t have_base = base + pending.base;
  for (int64_t have = have_base + surplus + pending.surplus; have < demand.target; ++have) {
    bool extra = have_base >= m_policy.pool_size;
    have_base += extra ? 0 : 1;
    plan.surplus.push_back(extra);
    plan.starts.push_back(reserve_start(dir, extra));
  }
  return plan;
}

namespace {

// Runs task(0) … task(count - 1) each in its own process, all at once; returns how many returned
// true. A task that could not fork counts as failed.
int count_forked_successes(size_t count, const std::function<bool(size_t)>& task) {
  std::vector<pid_t> children;
  for (size_t i = 0; i < count; ++i) {
    pid_t child = ::fork();
    if (child == 0) {
      ::_exit(task(i) ? 0 : 1);
    }
    if (child > 0) {
      children.push_back(child);
    }
  }
  int succeeded = 0;
  for (pid_t child : children) {
    int status = 0;
    retry_on_eintr([&] { return ::waitpid(child, &status, 0); });
    succeeded += WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 1 : 0;
  }
  return succeeded;
}

}  // namespace

// Starts the planned containers concurrently (a process each when there are several), each
// reservation released once its entry is published. Returns how many started.
int WarmPool::start_planned(const Plan& plan, const std::string& image_id) const {
  auto start_one = [&](size_t i) {
    bool started = false;
    try {
      started = !start_container(image_id, plan.surplus[i]).empty();
    } catch (const std::exception&) {
      // A start that fails leaves the pool one short: the next refill tries again.
    }
    release_starts({plan.starts[i]});
    return started;
  };
  if (plan.starts.size() == 1) {
    return start_one(0) ? 1 : 0;
  }
  int started = count_forked_successes(plan.starts.size(), start_one);
  release_starts(plan.starts);  // a start that could not fork, or whose process died
  return started;
}

// In the detached process: takes over the planned reservations, lets the caller exit, then
// starts them (or releases them when the image is gone or a drain came since the run asked, so
// that no run waits for them).
void WarmPool::start_after_caller(const Plan& plan, const std::string& claimed_run_id,
                                  const std::function<void()>& wait_for_caller,
                                  int64_t asked_ms) const {
  for (size_t i = 0; i < plan.starts.size(); ++i) {
    write_reservation(plan.starts[i], plan.surplus[i]);  // this process's now
  }
  wait_for_caller();
  if (!claimed_run_id.empty()) {
    std::error_code ec;
    fs::remove(claimed_dir() / claimed_run_id, ec);
  }
  auto image_id = current_image_id();
  if (!image_id || drained_since(pool_dir() / m_key, asked_ms)) {
    release_starts(plan.starts);
    return;
  }
  discard_unservable(*image_id);
  start_planned(plan, *image_id);
}

void WarmPool::refill_detached(const std::string& claimed_run_id) const {
  PoolDraw draw = claimed_run_id.empty()         ? PoolDraw::missed
                  : claim_waited(claimed_run_id) ? PoolDraw::missed
                                                 : PoolDraw::claimed;
  ensure_pool_directories();
  // Planned now, while the caller waits (files only, under the key's lock when it comes at
  // once): the caller's next run finds the starts pending and waits for one instead of going
  // cold. The starts themselves run once the caller has exited: their engine clients cost more
  // CPU than the rest of the run, and on a small machine they would take it from its last steps.
  auto plan = std::make_shared<Plan>();
  bool planned = false;
  if (UniqueFd lock = try_lock_key(m_key, k_plan_lock_patience_ms); lock.valid()) {
    *plan = plan_starts(draw);
    planned = true;
  }
  const int64_t asked_ms = wall_clock_ms();
  auto refill = [this, claimed_run_id, draw, plan, planned,
                 asked_ms](const std::function<void()>& wait_for_caller) {
    if (!planned) {
      UniqueFd lock = lock_key(m_key);
      *plan = plan_starts(draw);
    }
    start_after_caller(*plan, claimed_run_id, wait_for_caller, asked_ms);
  };
  try {
    run_detached_after_exit(refill);
  } catch (const Fatal&) {
    release_starts(plan->starts);  // no process to start them: the next run must not wait
    throw;
  }
}

std::vector<PoolEntry> list_pool_entries() {
  std::vector<PoolEntry> entries;
  for (const auto& key : pool_keys()) {
    for (const auto& name : entry_names(pool_dir() / key)) {
      if (auto entry = read_entry(pool_dir() / key / name, key)) {
        entries.push_back(*entry);
      }
    }
  }
  return entries;
}

int drain_pools(const Engine& engine) {
  int removed = 0;
  for (const auto& key : pool_keys()) {
    UniqueFd lock = lock_key(key);   // no refill plans more meanwhile: the pending starts end
    mark_drained(pool_dir() / key);  // nor after: a refill asked for before the drain
    wait_for_pending_starts(pool_dir() / key);
    for (const auto& name : entry_names(pool_dir() / key)) {
      removed += discard(engine, pool_dir() / key, name) ? 1 : 0;
    }
  }
  // Containers of this user's pools with no entry (a refill killed half-way): unless a run
  // holds them, they go too.
  auto listed = EngineClient(engine).ps_by_label(
      std::string(k_label_pool_owner) + "=" + owner_label(), "", k_engine_call_timeout);
  for (const auto& container : listed.containers) {
    const std::string& name = container.name;
    std::error_code ec;
    std::string run_id = run_id_of(name).value_or("");
    if (run_id.empty() || fs::exists(claimed_dir() / run_id, ec)) {
      continue;
    }
    removed += remove_container(engine, name) ? 1 : 0;
    remove_broker_launch_dir(run_id);
  }
  return removed;
}

int collect_pool_garbage(const Engine& engine) {
  int removed = 0;
  int64_t now = now_epoch_s();
  for (const auto& key : pool_keys()) {
    pending_starts(pool_dir() / key);  // forgets the reservations of refills that died
  }
  for (const auto& entry : list_pool_entries()) {
    if (entry.expires_epoch_s <= now) {
      removed += discard(engine, pool_dir() / entry.key, entry.run_id) ? 1 : 0;
    }
  }
  for (const auto& name : entry_names(claimed_dir())) {
    auto entry = read_entry(claimed_dir() / name, "");
    if (!entry || entry->deadline_epoch_s < now) {
      removed += remove_container(engine, container_name_of(name)) ? 1 : 0;
      remove_broker_launch_dir(name);
      std::error_code ec;
      fs::remove(claimed_dir() / name, ec);
    }
  }
  return removed;
}

}  // namespace sandshim::shim
