// What a project asks of node (.nvmrc, .node-version, package.json's engines.node), read from
// real files in a temporary project, and the version sandshim's own images hold.

#include <fstream>

#include <catch2/catch.hpp>

#include "run/interpreter_fit.hpp"
#include "test_audit_support.hpp"

using namespace sandshim::shim;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << text;
}

// The python ask found from `sub` up to `ws`: its range and source, and one version it lets in
// and one it keeps out.
void check_python_ask(const fs::path& sub, const fs::path& ws, const std::string& range,
                      const std::string& source, const std::string& fits,
                      const std::string& misses) {
  auto ask = python_version_ask(sub, ws);
  REQUIRE(ask);
  CHECK(ask->range == range);
  CHECK(ask->source == source);
  CHECK(ask_satisfied(fits, *ask) == true);
  CHECK(ask_satisfied(misses, *ask) == false);
}

}  // namespace

TEST_CASE("node's version ask: the nearest directory's file, .nvmrc first", "[interpreter_fit]") {
  sandshim::audit::testing::TempDir dir;
  fs::path ws = dir.path() / "ws";
  fs::path sub = ws / "packages" / "app";
  fs::create_directories(sub);
  CHECK_FALSE(node_version_ask(sub, ws).has_value());

  write(ws / "package.json", R"({"name": "x", "engines": {"node": ">=20"}})");
  auto ask = node_version_ask(sub, ws);
  REQUIRE(ask);
  CHECK(ask->range == ">=20");
  CHECK(ask->source == "package.json (engines.node)");

  write(sub / ".nvmrc", "# the team's line\nlts/iron\n");
  ask = node_version_ask(sub, ws);
  REQUIRE(ask);
  CHECK(ask->range == "20");
  CHECK(ask->source == ".nvmrc");

  write(sub / ".nvmrc", "v18.19.1 \n");
  CHECK(node_version_ask(sub, ws)->range == "v18.19.1");
}

TEST_CASE("node's version ask: what is no plain ask asks nothing", "[interpreter_fit]") {
  sandshim::audit::testing::TempDir dir;
  fs::path ws = dir.path();
  write(ws / "package.json", R"({"engines": {"npm": ">=9"}})");
  CHECK_FALSE(node_version_ask(ws, ws).has_value());
  write(ws / "package.json", "{ not json");
  CHECK_FALSE(node_version_ask(ws, ws).has_value());
  write(ws / "package.json", R"({"engines": {"node": 20}})");
  CHECK_FALSE(node_version_ask(ws, ws).has_value());
  // A link is not followed, and a file past the cap is not read.
  write(dir.path() / "elsewhere" / "package.json", R"({"engines": {"node": ">=20"}})");
  fs::remove(ws / "package.json");
  fs::create_symlink(dir.path() / "elsewhere" / "package.json", ws / "package.json");
  CHECK_FALSE(node_version_ask(ws, ws).has_value());
  fs::remove(ws / "package.json");
  write(ws / "package.json",
        R"({"engines": {"node": ">=20"}, "pad": ")" + std::string(2 << 20, 'x') + "\"}");
  CHECK_FALSE(node_version_ask(ws, ws).has_value());
}

TEST_CASE("node's version ask stops at the workspace", "[interpreter_fit]") {
  sandshim::audit::testing::TempDir dir;
  write(dir.path() / "package.json", R"({"engines": {"node": ">=20"}})");
  fs::path ws = dir.path() / "ws";
  fs::create_directories(ws);
  CHECK_FALSE(node_version_ask(ws, ws).has_value());
}

TEST_CASE("the node of sandshim's own images is known, any other image's is not",
          "[interpreter_fit]") {
  CHECK(image_interpreter_version("sandshim/node:bookworm", "node") == "18.20.4");
  CHECK(image_interpreter_version("sandshim/wrap:bookworm", "node") == "18.20.4");
  CHECK_FALSE(image_interpreter_version("node:20-alpine", "node").has_value());
  CHECK_FALSE(image_interpreter_version("sandshim/python:bookworm", "node").has_value());
}

TEST_CASE("python's version ask: .python-version, then pyproject's requires-python",
          "[interpreter_fit]") {
  sandshim::audit::testing::TempDir dir;
  fs::path ws = dir.path() / "ws";
  fs::path sub = ws / "src";
  fs::create_directories(sub);
  CHECK_FALSE(python_version_ask(sub, ws).has_value());

  write(ws / "pyproject.toml",
        "[build-system]\nrequires-python = \">=2\"\n\n[project]\nname = \"x\"\n"
        "requires-python = '>=3.12,<4'\n\n[tool.x]\nrequires-python = \"==2.7\"\n");
  check_python_ask(sub, ws, ">=3.12,<4", "pyproject.toml (requires-python)", "3.12.1", "3.11.2");

  write(ws / ".python-version", "# pyenv\n3.12\n3.11.2\n");
  check_python_ask(sub, ws, "==3.12.*", ".python-version", "3.12.4", "3.11.2");

  write(ws / ".python-version", "3.11.2\n");
  CHECK(python_version_ask(sub, ws)->range == "==3.11.2");
  // A name asks nothing; pyproject.toml is then read.
  write(ws / ".python-version", "system\n");
  CHECK(python_version_ask(sub, ws)->source == "pyproject.toml (requires-python)");
  CHECK(image_interpreter_version("sandshim/python:bookworm", "python") == "3.11.2");
  CHECK_FALSE(image_interpreter_version("python:3.12-slim", "python").has_value());
}

TEST_CASE("the ask is the one of the interpreter the program is called as", "[interpreter_fit]") {
  sandshim::audit::testing::TempDir dir;
  fs::path ws = dir.path() / "ws";
  fs::create_directories(ws);
  write(ws / ".nvmrc", "20\n");
  write(ws / ".python-version", "3.12\n");
  CHECK(fitted_interpreter("/home/a/.local/bin/python3.12") == "python");
  CHECK(fitted_interpreter("python3-config").empty());
  CHECK(project_version_ask("node", ws, ws)->source == ".nvmrc");
  CHECK(project_version_ask("python3", ws, ws)->source == ".python-version");
  CHECK_FALSE(project_version_ask("sh", ws, ws).has_value());
}

TEST_CASE("an ask a broker's client sent takes its grammar from its source, which must be known",
          "[interpreter_fit]") {
  CHECK_FALSE(claimed_version_ask(".nvmrc", ">=20")->pep440);
  CHECK(claimed_version_ask(".python-version", "==3.12.*")->pep440);
  CHECK(claimed_version_ask("pyproject.toml (requires-python)", ">=3.12")->pep440);
  CHECK_FALSE(claimed_version_ask("/etc/passwd", "1").has_value());
  CHECK_FALSE(claimed_version_ask("package.json", "1").has_value());
  CHECK_FALSE(
      claimed_version_ask("node_modules/undici/package.json (engines.node)", ">=20")->pep440);
  CHECK_FALSE(
      claimed_version_ask("node_modules/../x/package.json (engines.node)", "1").has_value());
  CHECK_FALSE(claimed_version_ask("node_modules//package.json (engines.node)", "1").has_value());
}

TEST_CASE("node's version ask: a project that declares none asks what its dependencies ask",
          "[interpreter_fit]") {
  sandshim::audit::testing::TempDir dir;
  fs::path ws = dir.path() / "ws";
  write(ws / "package.json", R"({"name": "app", "dependencies": {"old": "1", "new": "2",
    "none": "1", "../escape": "1"}, "devDependencies": {"@scope/tool": "3"}})");
  write(ws / "node_modules" / "old" / "package.json", R"({"engines": {"node": ">=14"}})");
  write(ws / "node_modules" / "new" / "package.json",
        R"({"engines": {"node": "^20.9.0 || >=22"}})");
  write(ws / "node_modules" / "none" / "package.json", R"({"name": "none"})");
  write(ws / "node_modules" / "@scope" / "tool" / "package.json",
        R"({"engines": {"node": ">=18.18"}})");
  write(dir.path() / "escape" / "package.json", R"({"engines": {"node": ">=99"}})");
  auto ask = node_version_ask(ws, ws);
  REQUIRE(ask);
  CHECK(ask->range == "^20.9.0 || >=22");
  CHECK(ask->source == "node_modules/new/package.json (engines.node)");
  CHECK(ask_satisfied("18.20.4", *ask) == false);
  CHECK(claimed_version_ask(ask->source, ask->range).has_value());  // what a client would send

  SECTION("the project's own engines.node wins") {
    write(ws / "package.json", R"({"engines": {"node": ">=18"}, "dependencies": {"new": "2"}})");
    CHECK(node_version_ask(ws, ws)->source == "package.json (engines.node)");
  }
  SECTION("dependencies that ask nothing newer than the image's ask nothing it lacks") {
    fs::remove_all(ws / "node_modules" / "new");
    auto older = node_version_ask(ws, ws);
    REQUIRE(older);
    CHECK(older->source == "node_modules/@scope/tool/package.json (engines.node)");
    CHECK(ask_satisfied("18.20.4", *older) == true);
  }
  SECTION("no node_modules: nothing") {
    fs::remove_all(ws / "node_modules");
    CHECK_FALSE(node_version_ask(ws, ws).has_value());
  }
}
