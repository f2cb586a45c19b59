#include <catch2/catch.hpp>
#include <sstream>

#include "common/paths.hpp"
#include "common/process.hpp"
#include "common/strings.hpp"
#include "install/git_hooks.hpp"
#include "test_hooks_support.hpp"

extern char** environ;

using namespace sandshim::install;
using sandshim::testing::EnvOverride;
using sandshim::testing::read_text;
using sandshim::testing::TempDir;
using sandshim::testing::write_text;
namespace fs = std::filesystem;

namespace {

struct GitRun {
  int code;
  std::string out;
};

GitRun git(const fs::path& repo, const std::vector<std::string>& args) {
  const char* path = std::getenv("PATH");
  auto binary = sandshim::find_in_path("git", path == nullptr ? "" : path, nullptr);
  REQUIRE(binary);
  std::vector<std::string> argv = {binary->string(), "-C", repo.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> env;
  for (char** variable = environ; *variable != nullptr; ++variable) {
    env.emplace_back(*variable);
  }
  auto run = sandshim::run_captured(argv, env, std::chrono::seconds(30));
  return {run.status.code, sandshim::trim(run.out + run.err)};
}

void write_executable(const fs::path& file, const std::string& text) {
  write_text(file, text);
  fs::permissions(file, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
}

// A repository, a fake sandshim that logs `run -- HOOK ARGS` and runs the hook, and a HOME of
// its own so no global git config leaks in.
struct Repo {
  TempDir dir;
  fs::path root = dir / "repo";
  fs::path log = dir / "sandboxed.log";
  fs::path fake_sandshim = dir / "bin/sandshim";
  EnvOverride env{{"HOME", (dir / "home").string()}, {"GIT_CONFIG_NOSYSTEM", "1"},
                  {"GIT_AUTHOR_NAME", "t"},          {"GIT_AUTHOR_EMAIL", "t@example.com"},
                  {"GIT_COMMITTER_NAME", "t"},       {"GIT_COMMITTER_EMAIL", "t@example.com"}};

  Repo() {
    fs::create_directories(root);
    fs::create_directories(dir / "home");
    REQUIRE(git(root, {"init", "-q"}).code == 0);
    write_executable(fake_sandshim,
                     "#!/bin/sh\n[ \"$1\" = run ] && [ \"$2\" = -- ] || exit 99\nshift 2\n"
                     "echo \"$*\" >> " +
                         sandshim::shell_quote(log.string()) + "\nexec \"$@\"\n");
  }

  std::string run(bool uninstall = false, const fs::path& sandshim = {}) {
    std::ostringstream out;
    install_git_hooks({root, sandshim.empty() ? fake_sandshim : sandshim, uninstall, false}, out);
    return out.str();
  }

  std::optional<std::string> hooks_path() {
    GitRun result = git(root, {"config", "--local", "--get", "core.hooksPath"});
    return result.code == 0 ? std::optional<std::string>(result.out) : std::nullopt;
  }
};

}  // namespace

TEST_CASE("git hooks run the repository's own hooks through sandshim run", "[install][git]") {
  Repo repo;
  write_executable(repo.root / ".git/hooks/pre-commit",
                   "#!/bin/sh\necho pre-commit ran > \"$(git rev-parse --git-dir)/ran\"\n");
  write_executable(repo.root / ".git/hooks/commit-msg", "#!/bin/sh\ngrep -q ok \"$1\"\n");
  std::string report = repo.run();
  CHECK(report.find("was not set") != std::string::npos);
  fs::path dispatcher = repo.root / ".git/sandshim-hooks";
  CHECK(repo.hooks_path() == dispatcher.string());

  CHECK(git(repo.root, {"commit", "-q", "--allow-empty", "-m", "ok"}).code == 0);
  CHECK(read_text(repo.root / ".git/ran") == "pre-commit ran\n");
  std::string log = read_text(repo.log);
  CHECK(log.find((repo.root / ".git/hooks/pre-commit").string()) != std::string::npos);
  CHECK(log.find((repo.root / ".git/hooks/commit-msg").string() + " .git/COMMIT_EDITMSG") !=
        std::string::npos);
  CHECK(log.find("post-commit") == std::string::npos);  // hooks that do not exist are skipped

  CHECK(git(repo.root, {"commit", "-q", "--allow-empty", "-m", "rejected"}).code != 0);
}

TEST_CASE("git hooks uninstall restores an unset core.hooksPath", "[install][git]") {
  Repo repo;
  repo.run();
  std::string report = repo.run(true);
  CHECK(report.find("restored  core.hooksPath (not set)") != std::string::npos);
  CHECK_FALSE(repo.hooks_path());
  CHECK_FALSE(fs::exists(repo.root / ".git/sandshim-hooks"));
  CHECK(repo.run(true).find("nothing to remove") != std::string::npos);
}

TEST_CASE("git hooks keep a previous core.hooksPath exactly", "[install][git]") {
  Repo repo;
  REQUIRE(git(repo.root, {"config", "core.hooksPath", ".githooks"}).code == 0);
  write_executable(repo.root / ".githooks/pre-commit", "#!/bin/sh\nexit 0\n");
  repo.run();
  CHECK(git(repo.root, {"commit", "-q", "--allow-empty", "-m", "x"}).code == 0);
  CHECK(read_text(repo.log).find((repo.root / ".githooks/pre-commit").string()) !=
        std::string::npos);
  repo.run(true);
  CHECK(repo.hooks_path() == ".githooks");
}

TEST_CASE("git hooks install is idempotent and follows a moved binary", "[install][git]") {
  Repo repo;
  repo.run();
  fs::path state = repo.root / ".git/sandshim-hooks/.sandshim-state.json";
  std::string saved = read_text(state);
  CHECK(repo.run().find("unchanged") != std::string::npos);
  CHECK(repo.run(false, "/opt/sandshim").find("updated") != std::string::npos);
  CHECK(read_text(repo.root / ".git/sandshim-hooks/pre-push").find("exec /opt/sandshim run --") !=
        std::string::npos);
  CHECK(read_text(state) == saved);
}

TEST_CASE("git hooks uninstall leaves a core.hooksPath the user changed since", "[install][git]") {
  Repo repo;
  repo.run();
  REQUIRE(git(repo.root, {"config", "core.hooksPath", "/elsewhere"}).code == 0);
  CHECK(repo.run(true).find("no longer points at sandshim") != std::string::npos);
  CHECK(repo.hooks_path() == "/elsewhere");
  CHECK_FALSE(fs::exists(repo.root / ".git/sandshim-hooks"));
}

TEST_CASE("git hooks dispatchers cover every hook git runs", "[install][git]") {
  Repo repo;
  repo.run();
  for (const std::string& name : git_hook_names()) {
    INFO(name);
    fs::path script = repo.root / ".git/sandshim-hooks" / name;
    CHECK((fs::status(script).permissions() & fs::perms::owner_exec) != fs::perms::none);
  }
  CHECK(git_hook_names().size() >= 25);
}
