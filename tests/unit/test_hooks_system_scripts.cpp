// System scripts (Debian's /usr/bin/mvn, bats, ldd) are programs like /usr/bin/java: the hook
// does not follow into a script only root can have written that lies outside the workspace and
// HOME. Every other script is followed and what its text names literally is judged (what only its
// run decides, eval and computed names, is the script's own recipe, hooks/README.md limit 7). The
// fixtures are real files with explicit modes under a test directory that stands for /, with the
// test's own user standing for root (owned_by_system's SystemOwner).

#include <sys/stat.h>
#include <unistd.h>

#include <span>

#include <catch2/catch.hpp>

#include "hooks/decide.hpp"
#include "hooks/program_files.hpp"
#include "test_hooks_support.hpp"

using namespace sandshim::hooks;
namespace fs = std::filesystem;

namespace {

constexpr fs::perms k_0755 = fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                             fs::perms::others_read | fs::perms::others_exec;
constexpr fs::perms k_0775 = k_0755 | fs::perms::group_write;
constexpr fs::perms k_1777 = fs::perms::all | fs::perms::sticky_bit;

// Debian's mvn does eval and runs a computed command name; this one also starts a host python
// by path, which is refused in a script the agent's user could have written.
const char* const k_script =
    "#!/bin/sh\neval \"$MAVEN_OPTS\"\n/usr/bin/python3 -c 1\nexec \"$JAVACMD\" \"$@\"\n";

// A root (the test's directory) holding usr/bin, a workspace, a HOME and a sticky tmp; every
// directory 0755 unless a case says otherwise.
class Host {
 public:
  Host() {
    for (const char* dir : {"usr/bin", "opt/group/bin", "ws/bin", "home/u/bin", "tmp"}) {
      fs::create_directories(m_dir / dir);
    }
    for (const fs::path& dir :
         {m_dir.path(), m_dir / "usr", m_dir / "usr/bin", m_dir / "opt", m_dir / "opt/group",
          m_dir / "opt/group/bin", m_dir / "ws", m_dir / "ws/bin", m_dir / "home", m_dir / "home/u",
          m_dir / "home/u/bin"}) {
      fs::permissions(dir, k_0755);
    }
    fs::permissions(m_dir / "opt/group", k_0775);
    fs::permissions(m_dir / "tmp", k_1777);
    script("usr/bin/mvn", k_0755);
    script("usr/bin/mvn-gw", k_0775);
    script("opt/group/bin/mvn", k_0755);
    script("ws/bin/mvn", k_0755);
    script("home/u/bin/mvn", k_0755);
    script("tmp/mvn", k_0755);
    sandshim::testing::write_text(m_dir / "usr/bin/pytool", "#!/usr/bin/python3\nprint(1)\n");
    fs::permissions(m_dir / "usr/bin/pytool", k_0755);
  }

  fs::path root() const { return m_dir.path(); }

  void write(const char* name, const char* text) const {
    sandshim::testing::write_text(m_dir / name, text);
    fs::permissions(m_dir / name, k_0755);
  }

  DecisionInputs inputs() const {
    DecisionInputs in;
    in.mode = "path";
    in.shimmed = {"python", "python3", "node", "sh"};
    in.shim_dir = root() / "home/u/.local/share/sandshim/bin";
    in.sandshim = "/usr/local/bin/sandshim";
    in.shim_installed = [](const std::string&) { return true; };
    in.cwd = root() / "ws";
    in.workspace = in.cwd;
    in.home = root() / "home/u";
    std::string path = (root() / "usr/bin").string() + ":/usr/bin:/bin";
    fs::path cwd = in.cwd;
    in.locate = [cwd, path](const std::string& command) {
      return locate_program(command, cwd, path);
    };
    in.first_line_of = [cwd, path](const std::string& command) -> std::optional<std::string> {
      std::optional<fs::path> file = locate_program(command, cwd, path);
      std::optional<std::string> text = file ? read_script_file(*file) : std::nullopt;
      return text ? std::optional<std::string>(text->substr(0, text->find('\n'))) : std::nullopt;
    };
    in.read_script = read_script_file;
    in.owned_by_system = [top = root()](const fs::path& file) {
      return owned_by_system(file, SystemOwner{::geteuid(), top});
    };
    return in;
  }

 private:
  void script(const char* name, fs::perms mode) {
    sandshim::testing::write_text(m_dir / name, k_script);
    fs::permissions(m_dir / name, mode);
  }

  sandshim::testing::TempDir m_dir;
};

struct Case {
  const char* command;  // the fixture's root is @
  Verdict verdict;
  const char* rule;
};

std::string at_root(std::string text, const fs::path& root) {
  for (size_t at = text.find('@'); at != std::string::npos; at = text.find('@', at)) {
    text.replace(at, 1, root.string());
    at += root.string().size();
  }
  return text;
}

void check_cases(std::span<const Case> cases, const DecisionInputs& in, const fs::path& root) {
  for (const Case& c : cases) {
    std::string command = at_root(c.command, root);
    Decision decision = decide(command, in);
    INFO(command << "\n-> " << decision.rule << ": " << decision.reason);
    CHECK(decision.verdict == c.verdict);
    CHECK(decision.rule == c.rule);
  }
}

}  // namespace

TEST_CASE("a script only root can have written, outside the workspace and HOME, is not followed",
          "[hooks][decide][system-scripts]") {
  Host host;
  DecisionInputs in = host.inputs();
  const Case cases[] = {
      // 0755 in 0755 directories up to the root: a program, like a binary there.
      {"mvn -q test", Verdict::rewrite, "path-rewrite"},
      {"@/usr/bin/mvn verify", Verdict::rewrite, "path-rewrite"},
      {"env MAVEN_OPTS=-Xmx1g mvn test", Verdict::rewrite, "path-rewrite"},
      {"JAVA_HOME=/opt/jdk mvn test", Verdict::rewrite, "path-rewrite"},
      // The same text anywhere the agent's user could have written it is followed and refused.
      {"mvn-gw test", Verdict::deny, "interpreter-by-path"},               // group-writable file
      {"@/opt/group/bin/mvn test", Verdict::deny, "interpreter-by-path"},  // group-writable dir
      {"./bin/mvn test", Verdict::deny, "interpreter-by-path"},            // in the workspace
      {"@/home/u/bin/mvn test", Verdict::deny, "interpreter-by-path"},     // under HOME
      {"@/tmp/mvn test", Verdict::deny, "interpreter-by-path"},  // sticky /tmp counts as open
      // The agent's own text around a system script is judged as around any program.
      {"PATH=/opt/x mvn test", Verdict::deny, "path-override"},
      {"BASH_ENV=./x.sh mvn test", Verdict::deny, "command-variable"},
      {"mvn test; eval \"$X\"", Verdict::deny, "unanalysable"},
      {"$TOOL test", Verdict::deny, "dynamic-command"},
      {"echo 'eval x' > @/usr/bin/mvn; mvn test", Verdict::deny, "unanalysable"},
      // A system script whose #! starts a host python is still that python.
      {"pytool", Verdict::deny, "shebang-bypass"},
  };
  check_cases(cases, in, host.root());
}

TEST_CASE("a script file's literal PATH is followed, its run-time decisions are its recipe",
          "[hooks][decide][system-scripts]") {
  Host host;
  DecisionInputs in = host.inputs();
  // autoconf's PATH_SEPARATOR probe, its evals and its computed compiler.
  host.write("ws/configure",
             "#!/bin/sh\n(PATH='/bin:/bin'; sh -c :)\neval \"$ac_x\"\nexec \"$CC\" c.c\n");
  host.write("ws/probe", "#!/bin/sh\nPATH=/usr/bin:/bin\npython3 -c 1\n");
  host.write("ws/nested", "#!/bin/sh\nexport PATH=/usr/bin\nsh -c 'python3 -c 1'\n");
  host.write("ws/env.sh", "PATH=/usr/bin:/bin\n");
  host.write("ws/build", "#!/bin/sh\n. ./env.sh\nmake\n");
  const Case cases[] = {
      {"./configure", Verdict::rewrite, "path-rewrite"},
      {"sh ./configure && make", Verdict::rewrite, "path-rewrite"},
      // What the file names through the PATH it sets is found outside the sandbox.
      {"./probe", Verdict::deny, "path-override"},
      {"./nested", Verdict::deny, "path-override"},
      // A sourced file's PATH outlives it: refused whole.
      {"./build", Verdict::deny, "path-override"},
      // The same constructs on the command line are still refused.
      {"eval \"$ac_x\"; ./configure", Verdict::deny, "unanalysable"},
      {"bash --rcfile configure -c 'eval \"$Y\"'", Verdict::deny, "unanalysable"},
      {"(PATH='/bin:/bin'; sh -c :)", Verdict::deny, "path-override"},
      // Command variables set to values that run nothing.
      {"MAKEFLAGS= PS4='+ ' BASH_ENV=/dev/null make", Verdict::rewrite, "path-rewrite"},
      {"PS4='$(id)' make", Verdict::deny, "command-variable"},
      {"PS1='\\$(id)' make", Verdict::deny, "command-variable"},
      {"BASH_ENV=./x.sh make", Verdict::deny, "command-variable"},
  };
  check_cases(cases, in, host.root());
}

TEST_CASE("without a view of file owners every script is followed", "[hooks][decide]") {
  Host host;
  DecisionInputs in = host.inputs();
  in.owned_by_system = nullptr;
  CHECK(decide("mvn -q test", in).rule == "interpreter-by-path");
}

TEST_CASE("owned_by_system: the file and every directory above it, up to the top",
          "[hooks][system-scripts]") {
  Host host;
  SystemOwner me{::geteuid(), host.root()};
  CHECK(owned_by_system(host.root() / "usr/bin/mvn", me));
  CHECK_FALSE(owned_by_system(host.root() / "usr/bin/mvn-gw", me));
  CHECK_FALSE(owned_by_system(host.root() / "opt/group/bin/mvn", me));
  CHECK_FALSE(owned_by_system(host.root() / "tmp/mvn", me));
  CHECK_FALSE(owned_by_system(host.root() / "usr/bin", me));       // a directory is no program
  CHECK_FALSE(owned_by_system(host.root() / "usr/bin/none", me));  // nor a missing file
  CHECK_FALSE(owned_by_system("/usr/bin/env", me));                // outside the top
  CHECK_FALSE(owned_by_system(host.root() / "usr/bin/mvn", {::geteuid() + 1, host.root()}));
  // The real owner and top: root's /bin/sh is the system's on every host these tests run on.
  CHECK(owned_by_system(fs::canonical("/bin/sh")));
}

TEST_CASE("owned_by_system: a link counts when it and the file it ends at are the owner's",
          "[hooks][system-scripts]") {
  Host host;
  SystemOwner me{::geteuid(), host.root()};
  fs::create_symlink("mvn", host.root() / "usr/bin/mvn-link");  // python3 -> python3.11
  fs::create_symlink("../../tmp/mvn",
                     host.root() / "usr/bin/tmp-link");  // ends where anyone writes
  fs::create_symlink(host.root() / "usr/bin/mvn", host.root() / "tmp/usr-link");  // made by anyone
  fs::create_symlink("loop", host.root() / "usr/bin/loop");
  CHECK(owned_by_system(host.root() / "usr/bin/mvn-link", me));
  CHECK_FALSE(owned_by_system(host.root() / "usr/bin/tmp-link", me));
  CHECK_FALSE(owned_by_system(host.root() / "tmp/usr-link", me));
  CHECK_FALSE(owned_by_system(host.root() / "usr/bin/loop", me));
}
