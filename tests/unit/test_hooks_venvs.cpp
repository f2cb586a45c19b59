#include <catch2/catch.hpp>
#include <map>

#include "hooks/decide.hpp"
#include "hooks/venvs.hpp"

using namespace sandshim::hooks;

namespace {

// pyvenv.cfg of three venvs: one made by the images' python, one by another python, one
// outside the workspace.
std::optional<std::string> fake_file(const std::filesystem::path& file) {
  static const std::map<std::string, std::string> files = {
      {"/ws/.venv/pyvenv.cfg",
       "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.2\n"},
      {"/ws/old/pyvenv.cfg", "home = /opt/python/bin\nversion = 3.12.1\n"},
      {"/elsewhere/.venv/pyvenv.cfg", "home = /usr/bin\nversion = 3.11.2\n"},
      {"/ws/.venv/bin/pytest", "#!/ws/.venv/bin/python\nfrom pytest import console_main\n"},
      {"/ws/.venv/bin/ruff", std::string("\x7f"
                                         "ELF\x02\x01\x01",
                                         7)},
      {"/ws/.venv/bin/other", "#!/usr/bin/python3\nimport other\n"},
  };
  auto found = files.find(file.string());
  return found == files.end() ? std::nullopt : std::optional<std::string>(found->second);
}

DecisionInputs venv_inputs(const std::string& mode, bool can_rewrite) {
  DecisionInputs in;
  in.mode = mode;
  in.can_rewrite = can_rewrite;
  in.shim_dir_first_on_path = !can_rewrite;
  in.shimmed = {"python", "python3", "node", "sh"};
  in.shim_dir = "/home/u/.local/share/sandshim/bin";
  in.sandshim = "/usr/local/bin/sandshim";
  in.shim_installed = [](const std::string&) { return true; };
  in.read_script = fake_file;
  in.cwd = "/ws";
  in.workspace = "/ws";
  in.python_image = "sandshim/python:bookworm";
  in.link = {"claude-code", "session-1", "toolu_1"};
  return in;
}

}  // namespace

TEST_CASE("pyvenv.cfg gives a venv's interpreter and version", "[hooks][venvs]") {
  std::optional<Venv> venv = read_venv("/ws/.venv", fake_file);
  REQUIRE(venv);
  CHECK(venv->home == "/usr/bin");
  CHECK(venv->version == "3.11.2");
  CHECK_FALSE(venv->system_site_packages);
  CHECK_FALSE(read_venv("/ws/src", fake_file));
  CHECK(venv_dir_of(".venv/bin/activate", "/ws") == std::filesystem::path("/ws/.venv"));
  CHECK(venv_dir_of("/ws/env/bin/python3", "/x") == std::filesystem::path("/ws/env"));
  CHECK_FALSE(venv_dir_of("tools/python", "/ws"));
}

TEST_CASE("a venv fits an image with the same python at the same path, in the workspace",
          "[hooks][venvs]") {
  auto python = image_python_of("sandshim/python:bookworm");
  REQUIRE(python);
  CHECK(venv_mismatch(*read_venv("/ws/.venv", fake_file), "sandshim/python:bookworm", python, "/ws")
            .empty());
  Venv merged{"/ws/v", "/bin", "3.11.4", true};
  CHECK(venv_mismatch(merged, "sandshim/python:bookworm", python, "/ws").empty());
  CHECK(venv_mismatch(*read_venv("/ws/old", fake_file), "sandshim/python:bookworm", python, "/ws")
            .find("3.12.1") != std::string::npos);
  CHECK(venv_mismatch(*read_venv("/elsewhere/.venv", fake_file), "sandshim/python:bookworm", python,
                      "/ws")
            .find("outside the workspace") != std::string::npos);
  CHECK_FALSE(image_python_of("python:3.12-slim"));
}

TEST_CASE("claude code: activating a fitting venv is refused with the sandboxed run that works",
          "[hooks][venvs]") {
  for (const char* mode : {"path", "deny"}) {
    INFO(mode);
    Decision activation =
        decide("source .venv/bin/activate && python x.py", venv_inputs(mode, false));
    CHECK(activation.verdict == Verdict::deny);
    CHECK(activation.rule == "venv-activation");
    // Deny mode adds the by-name python's own line.
    CHECK(activation.reason.substr(0, activation.reason.find('\n')) ==
          "sandshim: `source .venv/bin/activate` puts the venv's own python first on PATH, "
          "outside the sandbox. Run it in the sandbox with the venv's packages instead: "
          "`/usr/local/bin/sandshim run -- .venv/bin/python3 …`. Rule `venv-activation`; "
          "`hook.mode = wrap` in the user's config lifts it (the whole command then runs in the "
          "sandbox).");
    Decision by_path = decide(".venv/bin/python x.py", venv_inputs(mode, false));
    CHECK(by_path.rule == "venv-by-path");
    CHECK(by_path.reason.find("run -- .venv/bin/python3 x.py`") != std::string::npos);
  }
  // The suggestion itself is sandboxed, so it is allowed.
  CHECK(decide("/usr/local/bin/sandshim run -- .venv/bin/python3 x.py", venv_inputs("path", false))
            .verdict != Verdict::deny);
}

TEST_CASE("a venv that cannot run in the image is refused with what works instead",
          "[hooks][venvs]") {
  Decision old = decide(". old/bin/activate; python3 x.py", venv_inputs("path", true));
  CHECK(old.verdict == Verdict::deny);
  CHECK(old.rule == "venv-activation");
  CHECK(old.reason.find("made by python 3.12.1") != std::string::npos);
  CHECK(old.reason.find("Instead: `python3 …`") != std::string::npos);
  CHECK(old.reason.find("/usr/bin/python3 -m venv") != std::string::npos);
  CHECK(std::count(old.reason.begin(), old.reason.end(), '\n') == 0);
  Decision outside = decide("/elsewhere/.venv/bin/python x.py", venv_inputs("deny", false));
  CHECK(outside.rule == "venv-by-path");
  CHECK(outside.reason.find("outside the workspace") != std::string::npos);
  // Host mode runs that venv as it is (its python by path), where the caller chooses the image.
  CHECK(outside.reason.find("instead: `/usr/local/bin/sandshim run --wrap-shell --image host -- "
                            "/elsewhere/.venv/bin/python x.py`") != std::string::npos);
  DecisionInputs brokered = venv_inputs("deny", false);
  brokered.image_choice = false;
  Decision no_choice = decide("/elsewhere/.venv/bin/python x.py", brokered);
  CHECK(no_choice.reason.find("sandshim run -- python3 …") != std::string::npos);
  CHECK(no_choice.reason.find("--image host") == std::string::npos);
  // Without a pyvenv.cfg it is just an interpreter by path.
  CHECK(decide("./tools/bin/python x.py", venv_inputs("path", true)).rule == "interpreter-by-path");
}

TEST_CASE("agents that rewrite run a command using a fitting venv wholly in the sandbox",
          "[hooks][venvs]") {
  DecisionInputs in = venv_inputs("path", true);
  Decision activation = decide("source .venv/bin/activate && python x.py", in);
  CHECK(activation.verdict == Verdict::rewrite);
  CHECK(activation.rule == "venv-in-sandbox");
  CHECK(activation.rewritten_command.find(
            "run --image sandshim/wrap:bookworm -- bash -c 'source .venv/bin/activate && "
            "python x.py'") != std::string::npos);
  CHECK(decide(".venv/bin/python -m pytest", in).rule == "venv-in-sandbox");
  // Another refusal in the same command keeps it refused; deny mode never rewrites.
  CHECK(decide("source .venv/bin/activate && docker ps", in).verdict == Verdict::deny);
  CHECK(decide("source .venv/bin/activate && python x.py", venv_inputs("deny", true)).verdict ==
        Verdict::deny);
}

TEST_CASE("uv run and poetry run name the project venv's own run of the tool, when it has one",
          "[hooks][venvs]") {
  Decision uv = decide("uv run pytest -q tests/", venv_inputs("path", true));
  CHECK(uv.rule == "launcher-bypass");
  CHECK(uv.reason.find("`/usr/local/bin/sandshim run -- .venv/bin/python3 .venv/bin/pytest -q "
                       "tests/`") != std::string::npos);
  Decision python = decide("poetry run python -m mypy src", venv_inputs("path", true));
  CHECK(python.reason.find("run -- .venv/bin/python3 -m mypy src`") != std::string::npos);
  // A binary (ruff) or a script of another python is no run of the venv's python.
  for (const char* command : {"uv run ruff check .", "uv run other"}) {
    INFO(command);
    Decision other = decide(command, venv_inputs("path", true));
    CHECK(other.rule == "launcher-bypass");
    CHECK(other.reason.find(".venv/bin/python3") == std::string::npos);
    CHECK(other.reason.find("python3 -m MODULE") != std::string::npos);
  }
}
