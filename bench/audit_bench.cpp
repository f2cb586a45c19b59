// Measures the audit database through the real code paths; bench/audit.sh drives it.
//
//   sandshim_audit_bench per-run DB N      N shim-like runs: open, mark_abandoned, begin, complete
//   sandshim_audit_bench open-cost DB N    N opens alone, then N with another connection open
//   sandshim_audit_bench throughput DB N   N begin+complete pairs on one open store
//   sandshim_audit_bench throughput DB N KEY ANCHOR   the same, keyed and anchored (the broker's)
//   sandshim_audit_bench generate DB N     N realistic finished, chained rows, in bulk
//   sandshim_audit_bench audit ARGS...     `sandshim audit ARGS...` until the CLI binary exists

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "audit/chain.hpp"
#include "audit/chain_key.hpp"
#include "audit/commands.hpp"
#include "audit/sqlite.hpp"
#include "audit/store.hpp"
#include "common/error.hpp"
#include "common/process.hpp"

using namespace sandshim::audit;

namespace {

using Clock = std::chrono::steady_clock;

double micros_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

// User + system CPU of this process so far, in ms: unlike wall time, hardly moved by the load.
double cpu_ms() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  auto ms = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) * 1000.0 + static_cast<double>(t.tv_usec) / 1000.0;
  };
  return ms(usage.ru_utime) + ms(usage.ru_stime);
}

// The engine, image and container of a typical run: a dozen engine arguments.
void set_typical_container(RunRecord& record, const std::string& id) {
  record.engine = "docker";
  record.image = "python:3.12-slim";
  record.image_digest = "sha256:4d3c2b1a0f9e8d7c6b5a49382716059483726150493827160594837261504938";
  record.container_name = "sandshim-" + id;
  record.engine_args = {
      "docker",          "run",           "--rm",           "-i",
      "--network=none",  "--read-only",   "--cap-drop=ALL", "--security-opt=no-new-privileges",
      "--pids-limit=64", "--memory=512m", "--cpus=1",       "--user=1000:1000"};
}

// A run the size of a typical one: a short command, small tails, a dozen engine arguments.
RunRecord typical_run(const std::string& id, int64_t start_ms) {
  RunRecord record;
  record.run_id = id;
  record.start_ms = start_ms;
  record.end_ms = start_ms + 420;
  record.invoked_as = "python";
  record.argv = {"python", "-c", "import sys; print(sys.version)"};
  record.cwd = record.workspace = "/home/dev/src/app";
  set_typical_container(record, id);
  record.policy_digest = "sha256:91ab";
  record.policy_sources = {"/home/dev/.config/sandshim/policy.toml"};
  record.limits = "memory=512m cpus=1 pids=64 timeout=30s";
  record.status = RunStatus::ok;
  record.exit_code = 0;
  record.stdout_bytes = 42;
  record.stdout_tail = "3.12.3 (main, Apr 10 2024, 05:33:47) [GCC 12.2.0]\n";
  record.uid = ::getuid();
  record.host = current_host();
  record.pid = ::getpid();
  record.ppid = ::getppid();
  record.parent_name = "claude";
  record.agent = "claude-code";
  record.agent_session = "6f1c2d3e-0000-4000-8000-000000000000";
  record.env_names = {"PATH", "HOME", "LANG", "TERM"};
  return record;
}

void print_latencies(const char* label, std::vector<double> micros) {
  std::sort(micros.begin(), micros.end());
  double total = 0;
  for (double value : micros) {
    total += value;
  }
  auto at = [&](double fraction) {
    return micros[std::min(micros.size() - 1,
                           static_cast<size_t>(fraction * static_cast<double>(micros.size())))];
  };
  std::printf("%-34s mean %7.0f us  p50 %7.0f us  p95 %7.0f us  max %7.0f us  (n=%zu)\n", label,
              total / static_cast<double>(micros.size()), at(0.5), at(0.95), micros.back(),
              micros.size());
}

// As a shim does it: a new connection per run, and the WAL folded once it grows large.
int per_run(const std::string& db, int count) {
  std::vector<double> whole;
  std::vector<double> opening;
  std::vector<double> begin_complete;
  for (int i = 0; i < count; ++i) {
    RunRecord record =
        typical_run("per-run-" + std::to_string(i) + "-" + std::to_string(::getpid()),
                    sandshim::wall_clock_ms());
    auto start = Clock::now();
    Store store = Store::open(StoreOptions{db});
    store.mark_abandoned_runs();
    auto writes = Clock::now();
    opening.push_back(micros_since(start));
    store.begin_run(record);
    store.complete_run(record);
    begin_complete.push_back(micros_since(writes));
    whole.push_back(micros_since(start));
    if (store.wal_needs_folding()) {
      store.checkpoint();  // untimed: a shim leaves the fold to a detached process after it exits
    }
  }
  print_latencies("open+gc+begin+complete per run", whole);
  print_latencies("begin+complete per run", begin_complete);
  print_latencies("open+gc (the shim's open)", opening);
  return 0;
}

// A shim's open (open + mark_abandoned_runs) p50, as the first connection to the file (SQLite
// then truncates and re-extends -shm and rebuilds the WAL index), and with another connection
// kept open (as a broker or any long-lived holder would): what only a holder could save.
int open_cost(const std::string& db, int count) {
  auto time_opens = [&](const char* label) {
    std::vector<double> opens;
    for (int i = 0; i < count; ++i) {
      auto start = Clock::now();
      Store store = Store::open(StoreOptions{db});
      store.mark_abandoned_runs();
      opens.push_back(micros_since(start));
    }
    print_latencies(label, opens);
  };
  Store::open(StoreOptions{db});  // created and migrated outside the figures
  time_opens("open+gc, first connection");
  Store holder = Store::open(StoreOptions{db});
  time_opens("open+gc, another one kept open");
  return 0;
}

int throughput(const std::string& db, int count, const std::string& key_file = "",
               const std::string& anchor = "") {
  StoreOptions options{db};
  if (!key_file.empty()) {
    options.key = load_or_create_chain_key(key_file);
    options.anchor_file = anchor;
  }
  Store store = Store::open(options);
  std::vector<double> each;  // begin + complete of one run; the mean also carries checkpoints
  double cpu_before = cpu_ms();
  auto start = Clock::now();
  for (int i = 0; i < count; ++i) {
    RunRecord record = typical_run("tp-" + std::to_string(i) + "-" + std::to_string(::getpid()),
                                   sandshim::wall_clock_ms());
    auto run_start = Clock::now();
    store.begin_run(record);
    store.complete_run(record);
    each.push_back(micros_since(run_start));
  }
  double seconds = micros_since(start) / 1e6;
  std::printf("%-34s %d runs in %.2f s = %.0f runs/s = %.3f ms/run, CPU %.3f ms/run\n",
              key_file.empty() ? "throughput (one store)" : "throughput (one keyed store)", count,
              seconds, count / seconds, seconds * 1000 / count, (cpu_ms() - cpu_before) / count);
  print_latencies("  each run (begin+complete)", each);
  return 0;
}

// Varied values with realistic skew: mostly ok, a few images and agents, long-tailed durations.
RunRecord generated_run(std::mt19937_64& random, int index, int64_t now_ms) {
  static const char* k_commands[] = {"python", "python", "python", "node", "node", "sh"};
  static const char* k_images[] = {"python:3.12-slim", "python:3.11-slim", "node:22-slim",
                                   "node:20-slim",     "busybox:1.36",     "debian:12-slim",
                                   "python:3.13-slim", "node:18-slim"};
  static const char* k_agents[] = {"claude-code", "claude-code", "codex",
                                   "cursor",      "gemini-cli",  "unknown"};
  static const RunStatus k_statuses[] = {
      RunStatus::ok,      RunStatus::ok,     RunStatus::ok,           RunStatus::ok,
      RunStatus::ok,      RunStatus::ok,     RunStatus::ok,           RunStatus::ok,
      RunStatus::error,   RunStatus::error,  RunStatus::timeout,      RunStatus::oom,
      RunStatus::refused, RunStatus::killed, RunStatus::engine_error, RunStatus::ok};
  std::lognormal_distribution<double> duration(6.0, 1.2);
  RunRecord record = typical_run("gen-" + std::to_string(index),
                                 now_ms - 90LL * 86400000 + index * (90LL * 86400000 / 1000000));
  record.end_ms = record.start_ms + static_cast<int64_t>(duration(random));
  record.invoked_as = k_commands[random() % 6];
  record.image = k_images[random() % 8];
  record.agent = k_agents[random() % 6];
  record.status = k_statuses[random() % 16];
  record.exit_code = record.status == RunStatus::ok ? 0 : 1;
  return record;
}

int generate(const std::string& path, int count) {
  Store store = Store::open(StoreOptions{path});
  Database& db = store.database();
  // Setup, not the measured path: a big cache and no syncs while the rows are made.
  db.execute("PRAGMA cache_size = -524288", "enlarge the cache");
  db.execute("PRAGMA synchronous = OFF", "skip syncs while generating");
  std::mt19937_64 random(42);  // NOLINT(cert-msc32-c,cert-msc51-cpp): the same rows every time
  int64_t now = sandshim::wall_clock_ms();
  auto start = Clock::now();
  constexpr int k_batch = 20000;
  for (int first = 0; first < count; first += k_batch) {
    Transaction transaction(db, Transaction::Mode::immediate);
    for (int i = first; i < std::min(count, first + k_batch); ++i) {
      store.record_finished(generated_run(random, i, now));
    }
    transaction.commit();
  }
  store.checkpoint();
  std::printf("%-34s %d rows in %.1f s\n", "generated", count, micros_since(start) / 1e6);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 3 && args[0] == "per-run") {
      return per_run(args[1], std::stoi(args[2]));
    }
    if (args.size() == 3 && args[0] == "open-cost") {
      return open_cost(args[1], std::stoi(args[2]));
    }
    if (args.size() == 3 && args[0] == "throughput") {
      return throughput(args[1], std::stoi(args[2]));
    }
    if (args.size() == 5 && args[0] == "throughput") {
      return throughput(args[1], std::stoi(args[2]), args[3], args[4]);
    }
    if (args.size() == 3 && args[0] == "generate") {
      return generate(args[1], std::stoi(args[2]));
    }
    if (!args.empty() && args[0] == "audit") {
      return audit_main(std::vector<std::string>(args.begin() + 1, args.end()));
    }
  } catch (const sandshim::Fatal& error) {
    std::cerr << "sandshim: error: " << error.what() << '\n';
    return error.code();
  }
  std::cerr
      << "usage: sandshim_audit_bench per-run|open-cost|throughput|generate DB N | audit ARGS...\n";
  return 2;
}
