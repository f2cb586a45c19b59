#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "common/error.hpp"
#include "engine/image_host.hpp"
#include "test_shim_support.hpp"

using sandshim::shim::host_lookup_for;
using sandshim::shim::HostLookup;
using sandshim::shim::resolve_host_toolchain;
using sandshim::test::ScratchDir;
namespace fs = std::filesystem;

namespace {

// An executable file (never run: the lookup only finds it).
void make_tool(const fs::path& path) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << "#!/bin/sh\n";
  fs::permissions(path, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
}

HostLookup lookup_of(const std::string& command, const std::string& path, const fs::path& cwd) {
  return {command, path, "/nonexistent-shims", cwd, "/nonexistent-home", std::nullopt, {}, {}};
}

bool mounts(const sandshim::shim::HostToolchain& toolchain, const fs::path& path) {
  return std::find(toolchain.mounts.begin(), toolchain.mounts.end(), path) !=
         toolchain.mounts.end();
}

}  // namespace

TEST_CASE("host mode: a Debian interpreter needs /usr and the curated /etc, nothing else",
          "[image_host]") {
  auto toolchain = resolve_host_toolchain(lookup_of("sh", "/usr/bin:/bin", "/"));
  CHECK(toolchain.prefix.empty());
  CHECK(mounts(toolchain, "/usr"));
  CHECK(mounts(toolchain, "/etc/passwd"));
  for (const char* never : {"/etc/shadow", "/etc/gshadow", "/etc", "/run", "/var/run", "/var"}) {
    CHECK_FALSE(mounts(toolchain, never));
  }
  CHECK(toolchain.inside_path == std::string(sandshim::shim::k_system_path));
}

TEST_CASE("host mode: an interpreter outside /usr brings its prefix, first on PATH inside",
          "[image_host]") {
  ScratchDir dir;
  make_tool(dir.path() / "shims/node");  // sandshim's own directory: skipped
  make_tool(dir.path() / "opt/node20/bin/node");
  HostLookup lookup = lookup_of(
      "node", (dir.path() / "shims").string() + ":" + (dir.path() / "opt/node20/bin").string(),
      "/");
  lookup.shim_dir = dir.path() / "shims";
  auto toolchain = resolve_host_toolchain(lookup);
  fs::path prefix = fs::canonical(dir.path()) / "opt/node20";
  CHECK(toolchain.prefix == prefix);
  CHECK(mounts(toolchain, prefix));
  CHECK(toolchain.inside_path.starts_with((prefix / "bin").string() + ":"));
}

TEST_CASE("host mode: a pyenv shim resolves to the version pyenv would pick", "[image_host]") {
  ScratchDir dir;
  fs::path root = dir.path() / "pyenv";
  make_tool(root / "shims/python3");
  make_tool(root / "versions/3.99.1/bin/python3");
  make_tool(root / "versions/3.98.0/bin/python3");
  std::ofstream(root / "version") << "3.98.0\n";
  fs::create_directories(dir.path() / "project/sub");
  HostLookup lookup =
      lookup_of("python3", (root / "shims").string() + ":/usr/bin", dir.path() / "project/sub");
  fs::path versions = fs::canonical(root) / "versions";
  CHECK(resolve_host_toolchain(lookup).prefix == versions / "3.98.0");  // the global file

  std::ofstream(dir.path() / "project/.python-version") << "3.99.1\n";
  CHECK(resolve_host_toolchain(lookup).prefix == versions / "3.99.1");  // the project's

  lookup.pyenv_version = "3.98.0:3.99.1";
  CHECK(resolve_host_toolchain(lookup).prefix == versions / "3.98.0");  // PYENV_VERSION first

  lookup.pyenv_version = "system";  // past the shims: Debian's python3 under /usr
  CHECK(resolve_host_toolchain(lookup).prefix.empty());

  std::ofstream(dir.path() / "project/.python-version") << "../../../usr\n";  // a hostile repo's
  lookup.pyenv_version.reset();
  CHECK_THROWS_WITH(resolve_host_toolchain(lookup),
                    Catch::Contains("is not a name under versions/"));

  lookup.pyenv_version = "3.0.0";
  CHECK_THROWS_WITH(resolve_host_toolchain(lookup),
                    Catch::Contains("pyenv's version \"3.0.0\" has no python3"));
}

TEST_CASE("host mode: nothing that holds the home, no bare bin/, no interpreter: refused",
          "[image_host]") {
  ScratchDir dir;
  make_tool(dir.path() / "home/bin/node");  // ~/bin/node: its "prefix" would be the home
  HostLookup lookup = lookup_of("node", (dir.path() / "home/bin").string(), "/");
  lookup.home = dir.path() / "home";
  CHECK_THROWS_WITH(resolve_host_toolchain(lookup), Catch::Contains("cannot mount the prefix of"));
  HostLookup in_project =
      lookup_of("node", (dir.path() / "home/bin").string(), dir.path() / "home/w");
  CHECK_THROWS_WITH(resolve_host_toolchain(in_project),  // its prefix would hold the cwd
                    Catch::Contains("cannot mount the prefix of"));
  make_tool(dir.path() / "tools/node");  // not in a bin/
  CHECK_THROWS_WITH(resolve_host_toolchain(lookup_of("node", (dir.path() / "tools").string(), "/")),
                    Catch::Contains("cannot mount the prefix of"));
  CHECK_THROWS_WITH(resolve_host_toolchain(lookup_of("no-such-tool-x", "/usr/bin", "/")),
                    Catch::Contains("no no-such-tool-x on PATH after the shim directory"));
}

TEST_CASE("host mode: a broker resolves with the system PATH, never the caller's", "[image_host]") {
  std::vector<std::string> env = {"PATH=/home/u/.nvm/versions/node/v22/bin:/usr/bin",
                                  "PYENV_VERSION=3.12.1"};
  auto direct = host_lookup_for("node", env, "/w", "/home/u", "/s", false);
  CHECK(direct.path_variable == "/home/u/.nvm/versions/node/v22/bin:/usr/bin");
  CHECK(direct.pyenv_version == "3.12.1");
  auto brokered = host_lookup_for("node", env, "/w", "/home/u", "/s", true);
  CHECK(brokered.path_variable == std::string(sandshim::shim::k_system_path));
  CHECK_FALSE(brokered.pyenv_version.has_value());
}

TEST_CASE("host mode: a venv's python by path runs as named, with the venv and its base's prefix",
          "[image_host]") {
  ScratchDir dir;
  fs::path root = fs::canonical(dir.path());
  make_tool(root / "pyenv/versions/3.12.7/bin/python3.12");
  fs::path venv = root / "home/u/.local/pipx/venvs/poetry";
  fs::create_directories(venv / "bin");
  std::ofstream(venv / "pyvenv.cfg")
      << "home = " << (root / "pyenv/versions/3.12.7/bin").string() << "\n";
  fs::create_symlink(root / "pyenv/versions/3.12.7/bin/python3.12", venv / "bin/python");

  using sandshim::shim::venv_python_of;
  CHECK(venv_python_of((venv / "bin/python").string(), "/") == venv / "bin/python");
  CHECK(venv_python_of("venvs/poetry/bin/python", root / "home/u/.local/pipx") ==
        venv / "bin/python");
  CHECK_FALSE(venv_python_of("python", venv / "bin"));               // a name: PATH decides
  CHECK_FALSE(venv_python_of((venv / "bin/poetry").string(), "/"));  // no python
  CHECK_FALSE(venv_python_of((root / "pyenv/versions/3.12.7/bin/python3.12").string(), "/"));

  HostLookup lookup = lookup_of("python", "/usr/bin", root / "home/u/project");
  lookup.home = root / "home/u";
  lookup.venv_python = venv / "bin/python";
  auto toolchain = resolve_host_toolchain(lookup);
  CHECK(toolchain.interpreter == root / "pyenv/versions/3.12.7/bin/python3.12");
  CHECK(mounts(toolchain, root / "pyenv/versions/3.12.7"));
  CHECK(mounts(toolchain, venv));
  CHECK(toolchain.inside_path.starts_with((venv / "bin").string() + ":"));

  // A venv the workspace holds is mounted with it already; one holding the home never is.
  lookup.workspace = root / "home/u/.local";
  CHECK_FALSE(mounts(resolve_host_toolchain(lookup), venv));
  lookup.workspace.clear();
  lookup.home = venv / "home";
  CHECK_THROWS_AS(resolve_host_toolchain(lookup), sandshim::Fatal);
}

TEST_CASE(
    "host mode: a script of the caller's outside the workspace is mounted alone, with a "
    "pip --user tool's packages",
    "[image_host]") {
  ScratchDir dir;
  fs::path root = fs::canonical(dir.path());
  fs::path base = root / "home/u/.local";
  fs::path meson = base / "bin/meson";
  fs::path workspace = root / "home/u/project";
  fs::create_directories(workspace);
  fs::create_directories(base / "lib/python3.11/site-packages/mesonbuild");
  fs::create_directories(base / "lib/python3.12/site-packages");
  make_tool(meson);
  make_tool(root / "usr/bin/python3.11");
  fs::create_symlink("python3.11", root / "usr/bin/python3");
  fs::path python = root / "usr/bin/python3";

  using sandshim::shim::host_script_of;
  auto script = host_script_of({python.string(), meson.string(), "setup", "build"}, python,
                               workspace, workspace, base);
  REQUIRE(script);
  CHECK(script->mounts == std::vector<fs::path>{meson, base / "lib/python3.11/site-packages"});
  CHECK(script->environment ==
        std::vector<std::pair<std::string, std::string>>{{"PYTHONUSERBASE", base.string()}});

  // Relative to the working directory; outside the user base's bin/: the script alone.
  fs::path tool = root / "opt-tools/bin/autoreconf";
  make_tool(tool);
  script = host_script_of({"/usr/bin/perl", "../../../opt-tools/bin/autoreconf", "-fi"},
                          "/usr/bin/perl", workspace, workspace, base);
  REQUIRE(script);
  CHECK(script->mounts == std::vector<fs::path>{tool});
  CHECK(script->environment.empty());

  // Not a script the caller may hand over: in the workspace (mounted already), an option, a
  // file others may write, one without #!, a name PATH would find.
  make_tool(workspace / "run.py");
  CHECK_FALSE(host_script_of({"python3", "./run.py"}, python, workspace, workspace, base));
  CHECK_FALSE(
      host_script_of({"python3", "-c", meson.string()}, python, workspace, workspace, base));
  CHECK_FALSE(host_script_of({"python3", "meson"}, python, base / "bin", workspace, base));
  fs::permissions(tool, fs::perms::others_write, fs::perm_options::add);
  CHECK_FALSE(host_script_of({"perl", tool.string()}, "/usr/bin/perl", workspace, workspace, base));
  std::ofstream(root / "secret") << "not a script\n";
  CHECK_FALSE(
      host_script_of({"python3", (root / "secret").string()}, python, workspace, workspace, base));
  CHECK_FALSE(sandshim::shim::mountable_script(root / "secret"));
  CHECK_FALSE(sandshim::shim::mountable_script(root / "missing"));
}
