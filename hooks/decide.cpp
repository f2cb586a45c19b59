#include "hooks/decide.hpp"

#include <algorithm>
#include <regex>
#include <vector>

#include "common/paths.hpp"
#include "common/strings.hpp"
#include "engine/image_host.hpp"
#include "hooks/refusal_rules.hpp"
#include "hooks/shell_analysis.hpp"
#include "hooks/venvs.hpp"

namespace sandshim::hooks {

namespace {

// How many distinct problems one refusal names: enough to fix them in one go, short enough
// to read.
constexpr size_t k_reasons_per_refusal = 3;

struct Refusal {
  std::string rule;
  std::string reason;
};

// Untrusted text for a message: backquoted, control characters escaped, long text shortened.
std::string code(std::string_view text) {
  std::string shown =
      text.size() > 80 ? std::string(text.substr(0, 77)) + "..." : std::string(text);
  std::string escaped = quoted(shown);
  return "`" + escaped.substr(1, escaped.size() - 2) + "`";
}

// A command the reader could not follow: name where and what, never guess at the agent's fault
// (bash may well accept it).
std::string unparseable_reason(const std::string& detail) {
  return "sandshim cannot read this command: " + detail +
         ". It was not run; write that part another way.";
}

std::string join_names(const NameSet& names) {
  std::vector<std::string> list(names.begin(), names.end());
  return list.empty() ? "interpreters" : join(list, ", ");
}

std::string loosening_flag_reason(const std::string& flag) {
  return "sandshim: " + code(flag) +
         " would change the sandbox's limits, which only the user's config may do. Run it "
         "without that option.";
}

std::string interpreter_copy_reason(const std::string& command, const std::string& interpreter,
                                    const std::string& alternative) {
  return "sandshim: " + code(command) + " copies " + code(interpreter) +
         " under another name, which would run it outside the sandbox. Run it by name instead: " +
         alternative + ".";
}

// A program running a command sandshim cannot see, or a write to a file it protects or cannot
// name; nullopt for every other finding.
std::optional<Refusal> hidden_effect_refusal(const Finding& finding) {
  switch (finding.kind) {
    case FindingKind::hidden_command:
      return Refusal{"hidden-command", "sandshim: " + code(finding.subject) +
                                           " makes a program run a command sandshim cannot see, "
                                           "outside the sandbox. Run that command directly "
                                           "instead."};
    case FindingKind::command_variable:
      return Refusal{"command-variable",
                     "sandshim: " + code(finding.subject) +
                         " holds a command that a program runs (or bash expands) later, where "
                         "sandshim cannot see it. Leave it out and run the command directly."};
    case FindingKind::protected_write:
      return Refusal{"protected-write",
                     protected_write_refusal(finding.subject, finding.detail) + "."};
    case FindingKind::unresolved_write:
      return Refusal{"unresolved-write",
                     "sandshim: cannot tell which file " + code(finding.subject) +
                         " writes: " + finding.detail +
                         " is only known when the command runs, and it may name a file the "
                         "sandbox depends on (agent settings, shell start-up files, sandshim's "
                         "config). Write to a literal path."};
    default:
      return std::nullopt;
  }
}

std::string loader_reason(const std::string& command) {
  return "sandshim: " + code(command) +
         " is the dynamic loader, which runs any program outside the sandbox. Run the program by "
         "name instead.";
}

std::string privilege_reason(const Invocation& invocation) {
  // `sudo CMD` is peeled by no wrapper: the privileged program is the command itself.
  std::string program = invocation.wrapper.empty() ? invocation.command : invocation.wrapper;
  return "sandshim: " + code(program) +
         " runs its command as another user or under another root, where PATH and the shims are "
         "not this one's; agent commands may not. Run it without " +
         code(program) + ".";
}

std::string dynamic_command_reason(const std::string& command) {
  return "sandshim: the command name " + code(command) +
         " is only known when the command runs, so sandshim cannot tell whether it is an "
         "interpreter. Write the program name literally (for example `python3 …`).";
}

// `PATH=/usr/bin:/bin` then `python3` in a script file the command runs (limit 7).
std::string script_path_reason(const Invocation& invocation) {
  return "sandshim: a script this command runs sets PATH to a list holding " +
         code(invocation.script_path_dir) + ", where its " + code(invocation.name) +
         " is found outside the sandbox. Append to PATH in the script instead: "
         "`PATH=\"$PATH:/your/dir\"`.";
}

// `arguments` after its first `count` words, as written ("-q tests/" of "run pytest -q tests/").
std::string arguments_after(std::string_view arguments, size_t count) {
  size_t at = 0;
  for (size_t word = 0; word <= count && at < arguments.size(); ++word) {
    at = arguments.find_first_not_of(" \t", at);
    if (at == std::string_view::npos || word == count) {
      break;
    }
    at = arguments.find_first_of(" \t", at);
  }
  return at == std::string_view::npos || at >= arguments.size() ? ""
                                                                : std::string(arguments.substr(at));
}

// Arguments a refusal can repeat in its one line: no newline, not a page of text.
bool quotable(std::string_view arguments) {
  constexpr size_t k_max_repeated_bytes = 512;
  return arguments.size() <= k_max_repeated_bytes && arguments.find('\n') == std::string_view::npos;
}

std::string launcher_reason(const std::string& launcher) {
  return "sandshim: " + code(launcher) +
         " starts an interpreter of its own by path, outside the sandbox. Call the interpreter by "
         "name instead (for example `python3 -m MODULE …`).";
}

class Judge {
 public:
  Judge(const DecisionInputs& inputs, const CommandAnalysis& analysis, bool routed)
      : m_in(inputs), m_analysis(analysis), m_routed(routed) {}

  std::vector<Refusal> refusals() {
    for (const Finding& finding : m_analysis.findings) {
      if (!in_sandbox(finding.enclosing_shell) && !decided_by_script_run(finding)) {
        judge(finding);
      }
    }
    for (const Invocation& invocation : m_analysis.invocations) {
      if (!invocation.sandboxed && !in_sandbox(invocation.enclosing_shell) &&
          !decided_by_script_run(invocation)) {
        judge(invocation);
      }
    }
    return m_refusals;
  }

  // True when every refusal was a venv that the wrap image can run as it is: the whole
  // command can then run there instead.
  bool only_venvs_the_wrap_image_runs() const {
    return !m_refusals.empty() && m_wrap_venvs == m_refusals.size();
  }

 private:
  bool path_mode() const { return m_in.mode == "path"; }
  bool deny_mode() const { return m_in.mode == "deny"; }

  // True when the script at `enclosing` runs inside a container, where nothing it does can
  // reach the host.
  bool in_sandbox(std::optional<size_t> enclosing) const {
    while (enclosing) {
      const Invocation& shell = m_analysis.invocations[*enclosing];
      if (shell.sandboxed || routed_to_sandbox(shell)) {
        return true;
      }
      enclosing = shell.enclosing_shell;
    }
    return false;
  }

  // Inside a script file the command runs or sources (`./gradlew`, `./configure`), what only its
  // run decides (eval, a computed program name or write target, a construct sandshim cannot
  // parse) is that program's own recipe, as a Makefile's recipes are (hooks/README.md, limits 1
  // and 7). What the file names literally (an interpreter by path, also through a literal PATH
  // it sets, a protected write, an engine) is judged as on the command line.
  static bool decided_by_script_run(const Finding& finding) {
    bool runtime_only =
        finding.kind == FindingKind::unanalysable || finding.kind == FindingKind::parse_error ||
        finding.kind == FindingKind::unresolved_write || finding.followed || finding.computed;
    return finding.in_script_file && runtime_only;
  }

  static bool decided_by_script_run(const Invocation& invocation) {
    return invocation.in_script_file && invocation.lookup == Lookup::dynamic;
  }

  bool routed_to_sandbox(const Invocation& invocation) const {
    if (invocation.lookup == Lookup::shim) {
      return true;
    }
    return path_mode() && m_routed && invocation.lookup == Lookup::by_name &&
           m_in.shimmed.contains(invocation.name) && installed(invocation.name);
  }

  bool installed(const std::string& name) const {
    return !m_in.shim_installed || m_in.shim_installed(name);
  }

  void refuse(std::string rule, std::string reason) {
    m_refusals.push_back({std::move(rule), std::move(reason)});
  }

  std::string sandshim_run(const std::string& program) const {
    bool elided = program.find("…") != std::string::npos;
    return sandshim_run_exactly(elided ? program : program + " …");
  }

  // `sandshim run [OPTIONS] -- COMMAND` with COMMAND whole, as the model should run it.
  std::string sandshim_run_exactly(const std::string& command,
                                   const std::string& options = "") const {
    return "`" + sandshim_binary() + " run " + (options.empty() ? "" : options + " ") + "-- " +
           command + "`";
  }

  // This binary as the model should call it.
  std::string sandshim_binary() const {
    return m_in.sandshim.empty() ? "sandshim" : shell_quote(m_in.sandshim.string());
  }

  void judge(const Finding& finding) {
    switch (finding.kind) {
      case FindingKind::parse_error:
        refuse("unparseable", unparseable_reason(finding.detail));
        return;
      case FindingKind::unanalysable:
        judge_unanalysable(finding);
        return;
      case FindingKind::path_override:
        judge_path_override(finding);
        return;
      case FindingKind::protected_variable:
        judge_protected_variable(finding);
        return;
      case FindingKind::loosening_flag:
        refuse("sandshim-run-flag", loosening_flag_reason(finding.subject));
        return;
      case FindingKind::hash_pinning:
        if (path_mode()) {
          refuse("hash-pinning", "sandshim: " + code(finding.subject) +
                                     " binds a command name to a path, which would skip the "
                                     "sandbox. Leave it out.");
        }
        return;
      default:
        judge_host_action(finding);
        return;
    }
  }

  // Findings about what a host program would do, refused in path and deny modes (in wrap mode
  // the whole command runs in the container).
  void judge_host_action(const Finding& finding) {
    if (!path_mode() && !deny_mode()) {
      return;
    }
    switch (finding.kind) {
      case FindingKind::engine_access:
        refuse_engine(finding.subject);
        return;
      case FindingKind::interpreter_copy:
        refuse("interpreter-copy", interpreter_copy_reason(finding.subject, finding.detail,
                                                           alternative_for(finding.detail)));
        return;
      case FindingKind::venv_activation:
        refuse_activation(finding);
        return;
      default:
        if (std::optional<Refusal> refusal = hidden_effect_refusal(finding)) {
          m_refusals.push_back(*refusal);
        }
        return;
    }
  }

  void refuse_engine(const std::string& subject) {
    refuse("engine-access",
           "sandshim: " + code(subject) +
               " reaches the container engine, which is root on the host; agent commands may "
               "not use it. Run the code itself in the sandbox instead (" +
               join_names(m_in.shimmed) + " by name" +
               (deny_mode() ? ", through " + sandshim_run("…") : "") + ").");
  }

  // A sandboxed way to run `name` that works: its shimmed sibling, perl through the sh image,
  // else what the user must add. With the invocation's `arguments`, the exact command; without,
  // one with `…` for them.
  std::string alternative_for(const std::string& name,
                              const std::optional<std::string>& arguments = std::nullopt) const {
    std::string rest = !arguments || !quotable(*arguments) ? " …"
                       : arguments->empty()                ? ""
                                                           : " " + *arguments;
    std::string sibling = sandboxed_name_for(name, m_in.shimmed);
    if (m_in.shimmed.contains(sibling)) {
      return deny_mode() ? sandshim_run_exactly(sibling + rest) : "`" + sibling + rest + "`";
    }
    if (name.starts_with("perl") && m_in.shimmed.contains("sh")) {
      std::string perl = "sh -c " + (arguments ? shell_quote("perl" + rest) : "'perl …'");
      return deny_mode() ? sandshim_run_exactly(perl)
                         : "`" + perl + "` (the sandbox's sh image has perl)";
    }
    return "nothing sandboxed runs " + code(name) + " yet; use " + join_names(m_in.shimmed) +
           ", or ask the user to add `images." + name +
           " = IMAGE` to sandshim's config and run `sandshim install`";
  }

  void judge_unanalysable(const Finding& finding) {
    if (path_mode() || deny_mode()) {
      refuse("unanalysable", "sandshim: " + code(finding.subject) + " cannot be checked: " +
                                 finding.detail + ". Write the commands out directly.");
    }
  }

  void judge_path_override(const Finding& finding) {
    if (path_mode()) {
      refuse("path-override", "sandshim: " + code(finding.subject) +
                                  " replaces PATH, so interpreters would be found outside the "
                                  "sandbox. Append to it instead: `PATH=\"$PATH:/your/dir\"`.");
    }
  }

  void judge_protected_variable(const Finding& finding) {
    if (path_mode() || deny_mode()) {
      refuse("protected-variable",
             "sandshim: this command sets or unsets " + code(finding.subject) +
                 ", which steers sandshim or its container engine, or moves the configuration "
                 "it trusts. Agent commands may not change SANDSHIM_*, DOCKER_*, CONTAINER*, "
                 "LD_PRELOAD, LD_AUDIT, HOME or XDG_*_HOME: leave it out.");
    }
  }

  void judge(const Invocation& invocation) {
    if (invocation.sandshim_subcommand == "install" ||
        invocation.sandshim_subcommand == "uninstall" ||
        invocation.sandshim_subcommand == "audit prune") {
      refuse("self-tamper", "sandshim: agent commands may not run " +
                                code("sandshim " + invocation.sandshim_subcommand) +
                                ": the sandbox's own setup is the user's to change.");
      return;
    }
    if (path_mode() || deny_mode()) {
      judge_bypass(invocation);
    }
    if (path_mode()) {
      judge_path_lookup(invocation);
    }
    if (deny_mode()) {
      judge_outside_sandbox(invocation);
    }
  }

  // Ways around the sandbox that matter however interpreters are meant to reach it.
  void judge_bypass(const Invocation& invocation) {
    if (invocation.engine) {
      refuse_engine(invocation.command);
    } else if (invocation.loader) {
      refuse("loader", loader_reason(invocation.command));
    } else if (invocation.privileged) {
      refuse("privilege-escalation", privilege_reason(invocation));
    } else if (invocation.lookup == Lookup::dynamic) {
      refuse("dynamic-command", dynamic_command_reason(invocation.command));
    } else if (invocation.kind == CommandClass::interpreter &&
               !invocation.script_path_dir.empty()) {
      refuse("path-override", script_path_reason(invocation));
    } else if (invocation.kind == CommandClass::interpreter &&
               invocation.lookup == Lookup::by_path) {
      refuse_interpreter_by_path(invocation);
    } else if (!invocation.launcher.empty()) {
      refuse_launcher(invocation);
    } else if (!invocation.installer.empty()) {
      refuse_package_install(invocation);
    } else if (!invocation.shebang.empty() && fitting_venv(invocation.shebang)) {
      refuse_venv_script(invocation, *fitting_venv(invocation.shebang));
    } else if (!invocation.shebang.empty()) {
      refuse("shebang-bypass", shebang_bypass_reason(invocation));
    }
  }

  std::string shebang_bypass_reason(const Invocation& invocation) const {
    std::string lead = "sandshim: " + code(invocation.command) +
                       " is a script whose #! line starts " + code(invocation.shebang) +
                       " directly, outside the sandbox. ";
    if (auto run = project_venv_run(invocation.name, invocation.arguments)) {
      return lead + "The project's venv has " + code(invocation.name) +
             ": run it in the sandbox with the venv's packages instead: " + *run + ".";
    }
    if (auto run = venv_in_wrap_shell(invocation)) {
      return lead +
             "The images' python makes the same venv in the sandbox, and sandboxed runs "
             "then use it; run this as the whole command instead: " +
             *run + ".";
    }
    if (auto run = host_mode_run(invocation)) {
      return lead +
             "Run the same script with the host's own interpreter and packages, read-only, in "
             "the sandbox instead: " +
             *run + ".";
    }
    if (auto run = host_venv_run(invocation)) {
      return lead +
             "Its venv runs with the host's python, read-only, in the sandbox instead: " + *run +
             ".";
    }
    return lead + "Run it through the interpreter by name instead: `" +
           sandboxed_name_for(shebang_program(invocation.shebang), m_in.shimmed) +
           " -m MODULE …` for an installed tool, or `INTERPRETER path/to/script …`.";
  }

  // `virtualenv DIR` from the user's own tools (the sandbox sees none of them): `python3 -m venv
  // DIR` does the job in `sandshim -c`, where the agent's whole command may write the workspace.
  std::optional<std::string> venv_in_wrap_shell(const Invocation& invocation) const {
    std::vector<std::string> words = split_words(invocation.arguments);
    if (!m_in.wrap_shell_writes || invocation.name != "virtualenv" || words.size() != 1 ||
        words[0].starts_with('-') || !quotable(invocation.arguments)) {
      return std::nullopt;
    }
    return "`" + sandshim_binary() + " -c " +
           shell_quote("python3 -m venv " + invocation.arguments) + "`";
  }

  // `uv run pytest -q`, `poetry run python -m mypy src`: the project's venv runs the same in
  // the sandbox, when it has the tool; else the way by name.
  void refuse_launcher(const Invocation& invocation) {
    std::vector<std::string> words = split_words(invocation.arguments);
    size_t verb_words = static_cast<size_t>(
        std::count(invocation.launcher.begin(), invocation.launcher.end(), ' '));
    std::optional<std::string> run;
    if (words.size() > verb_words && !words[verb_words].starts_with('-')) {
      std::string tool = words[verb_words];
      std::string rest = arguments_after(invocation.arguments, verb_words + 1);
      run = project_venv_run(tool, rest);
    }
    refuse("launcher-bypass",
           run ? "sandshim: " + code(invocation.launcher) +
                     " starts an interpreter of its own by path, outside the sandbox. The "
                     "project's venv runs the same in the sandbox instead: " +
                     *run + "."
               : launcher_reason(invocation.launcher));
  }

  // The project's own venv (`.venv` at the workspace root), when the image's python runs it.
  std::optional<Venv> project_venv() const {
    if (m_in.workspace.empty()) {
      return std::nullopt;
    }
    std::optional<Venv> venv = read_venv(m_in.workspace / ".venv", m_in.read_script);
    if (!venv ||
        !venv_mismatch(*venv, m_in.python_image, image_python_of(m_in.python_image), m_in.workspace)
             .empty()) {
      return std::nullopt;
    }
    return venv;
  }

  // `TOOL ARGUMENTS` in the sandbox with the project's venv: its python runs the venv's own
  // TOOL script (or is TOOL, for python); nullopt when there is no such venv or script.
  std::optional<std::string> project_venv_run(const std::string& tool,
                                              const std::string& arguments) const {
    std::optional<Venv> venv = project_venv();
    if (!venv || !quotable(arguments)) {
      return std::nullopt;
    }
    std::string rest = arguments.empty() ? "" : " " + arguments;
    if (tool == "python" || tool == "python3") {
      return sandshim_run_exactly(venv_python(*venv) + rest);
    }
    std::filesystem::path script = venv->dir / "bin" / tool;
    if (tool.find('/') != std::string::npos) {
      return std::nullopt;
    }
    if (runs_with_venv_python(script, *venv)) {
      return sandshim_run_exactly(venv_python(*venv) + " " + shown_path(script) + rest);
    }
    if (has_main_module(*venv, tool)) {  // ruff's binary: its package runs it (`-m ruff`)
      return sandshim_run_exactly(venv_python(*venv) + " -m " + module_of(tool) + rest);
    }
    return std::nullopt;
  }

  // A tool's package name: pip's scripts are named with '-', their packages with '_'.
  static std::string module_of(const std::string& tool) {
    std::string module = tool;
    std::replace(module.begin(), module.end(), '-', '_');
    return module;
  }

  // Whether `venv`'s site-packages hold TOOL's package with a __main__ (pip's ruff, black…),
  // which `python -m` runs whatever its bin entry is.
  bool has_main_module(const Venv& venv, const std::string& tool) const {
    std::string module = module_of(tool);
    bool plain = !module.empty() && std::all_of(module.begin(), module.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
    });
    size_t minor_end = venv.version.find('.', venv.version.find('.') + 1);
    if (!plain || minor_end == std::string::npos) {
      return false;
    }
    std::filesystem::path main = venv.dir / "lib" / ("python" + venv.version.substr(0, minor_end)) /
                                 "site-packages" / module / "__main__.py";
    return m_in.read_script(main).has_value();
  }

  // Whether `script` is a python script of `venv`'s own (pip's: `#!VENV/bin/python`), which its
  // python runs as a file; not a binary such as ruff's, nor a script of another interpreter.
  bool runs_with_venv_python(const std::filesystem::path& script, const Venv& venv) const {
    std::optional<std::string> text = m_in.read_script(script);
    if (!text || !text->starts_with("#!")) {
      return false;
    }
    std::string first = text->substr(2, text->find('\n') - 2);
    std::vector<std::string> words = split_words(first);
    std::optional<Venv> own = words.empty() ? std::nullopt : venv_at(words[0]);
    return own && own->dir == venv.dir &&
           std::filesystem::path(words[0]).filename().string().starts_with("python");
  }

  // A path as the model should write it: relative to cwd when below it, quoted.
  std::string shown_path(const std::filesystem::path& path) const {
    std::filesystem::path relative = path.lexically_relative(m_in.cwd);
    bool below = !relative.empty() && *relative.begin() != "..";
    return shell_quote((below ? relative : path).string());
  }

  // Debian's `pytest`, `mypy`, `autoreconf`…: a script and interpreter under /usr that only root
  // can have written; or a script of the caller's outside the workspace that such an interpreter
  // runs (`meson` from `pip install --user`, a user's `autoreconf`), which host mode mounts alone
  // (and a user-installed tool's packages: image_host.hpp). Host mode runs exactly them in the
  // sandbox, when the caller may choose the image; as the agent's whole command
  // (`--wrap-shell`), so a tool that writes the workspace (autoreconf, a test cache) does, where
  // `sandbox.workspace = wrap` lets `sandshim -c` write.
  std::optional<std::string> host_mode_run(const Invocation& invocation) const {
    if (!m_in.image_choice || !m_in.locate || !m_in.owned_by_system) {
      return std::nullopt;
    }
    std::filesystem::path interpreter(invocation.shebang);
    std::optional<std::filesystem::path> script = m_in.locate(invocation.command);
    auto in_system_usr = [&](const std::filesystem::path& file) {
      return file.is_absolute() && is_within(file.lexically_normal(), "/usr") &&
             m_in.owned_by_system(file);
    };
    auto callers_own = [&](const std::filesystem::path& file) {  // what host mode would mount
      return file.is_absolute() && !m_in.workspace.empty() &&
             shim::host_script_of({interpreter.string(), file.string()}, interpreter, m_in.cwd,
                                  m_in.workspace, {});
    };
    if (!script || !(in_system_usr(*script) || callers_own(*script)) ||
        !in_system_usr(interpreter)) {
      return std::nullopt;
    }
    return sandshim_run_exactly(
        shell_quote(interpreter.string()) + " " + shell_quote(script->string()) +
            (invocation.arguments.empty() ? "" : " " + invocation.arguments),
        "--wrap-shell --image host");
  }

  // A script of a venv the image cannot run (pipx's `poetry`, a venv made by pyenv's python):
  // host mode runs that venv's python on it, the venv and its base read-only, when the caller
  // may choose the image and the script lies in the venv (pipx links it from ~/.local/bin) or
  // the workspace, which the sandbox has.
  std::optional<std::string> host_venv_run(const Invocation& invocation) const {
    std::optional<Venv> venv = venv_at(invocation.shebang);
    if (!m_in.image_choice || !venv || !m_in.locate) {
      return std::nullopt;
    }
    std::optional<std::filesystem::path> script = m_in.locate(invocation.command);
    std::error_code ec;
    std::filesystem::path real = script ? std::filesystem::weakly_canonical(*script, ec) : "";
    bool reachable =
        !real.empty() && (is_within(real, venv->dir) ||
                          (!m_in.workspace.empty() && is_within(real, m_in.workspace)));
    if (!reachable || !quotable(invocation.arguments)) {
      return std::nullopt;
    }
    return host_venv_command(
        *venv, shown_path(real) + (invocation.arguments.empty() ? "" : " " + invocation.arguments));
  }

  // `sandshim run --wrap-shell --image host -- VENV/bin/python RUN`: the venv's own python by
  // path, which host mode runs with the venv and its base interpreter read-only.
  std::string host_venv_command(const Venv& venv, const std::string& run) const {
    return sandshim_run_exactly(shown_path(venv.dir / "bin" / "python") + " " + run,
                                "--wrap-shell --image host");
  }

  // `pip install`, `uv pip install`, `uv sync`, `poetry add`…: one answer whichever tool
  // installs: pip with the same arguments, in a venv the image's python runs, in the sandbox,
  // once the user lets the run write the venv and reach the index.
  void refuse_package_install(const Invocation& invocation) {
    std::string what = "sandshim: " + code(invocation.installer) +
                       " installs Python packages with a python outside the sandbox, where their "
                       "build scripts would run too.";
    if (invocation.pip_arguments.empty()) {
      refuse("package-install", what +
                                    " Nothing in the sandbox installs a tool for the host: "
                                    "ask the user to install it.");
      return;
    }
    std::optional<Venv> venv = install_venv(invocation);
    std::optional<ImagePython> python = image_python_of(m_in.python_image);
    std::string mismatch =
        venv ? venv_mismatch(*venv, m_in.python_image, python, m_in.workspace) : "";
    if (venv && mismatch.empty()) {
      refuse_install_in_venv(*venv, what, invocation.pip_arguments);
      return;
    }
    std::string home = python ? python->home : "/usr/bin";
    refuse("package-install",
           what + (venv ? " Its venv cannot be used in the sandbox: " + mismatch + "." : "") +
               " Packages go into a venv the image's python runs: ask the user to make one (`" +
               home + "/python3 -m venv .venv`, `sandbox.writable = .venv`), then run " +
               sandshim_run_exactly(".venv/bin/python3 -m pip " + invocation.pip_arguments) + ".");
  }

  // The venv the install names runs in the sandbox: pip there, once the user lets it write.
  void refuse_install_in_venv(const Venv& venv, const std::string& what,
                              const std::string& pip_arguments) {
    std::filesystem::path relative = venv.dir.lexically_relative(m_in.workspace);
    refuse("package-install",
           what + " In the sandbox: " +
               sandshim_run_exactly(venv_python(venv) + " -m pip " + pip_arguments) +
               ", once the user's config has `sandbox.writable = " + relative.string() +
               "` (and for an index `sandbox.network = allowlist`, `network.allow = pypi.org "
               "files.pythonhosted.org`).");
  }

  // The venv an installer fills: pip's own, the one its #! names (`.venv/bin/pip`), else the
  // workspace's `.venv` (uv's and poetry's default, and the project's environment for pip too;
  // a pipx poetry's #! names the venv poetry itself lives in, which it never fills).
  std::optional<Venv> install_venv(const Invocation& invocation) const {
    static const std::regex pip("pip(3(\\.[0-9]+)?)?");
    if (!invocation.shebang.empty() && std::regex_match(invocation.name, pip)) {
      if (std::optional<Venv> venv = venv_at(invocation.shebang)) {
        return venv;
      }
    }
    if (m_in.workspace.empty()) {
      return std::nullopt;
    }
    return read_venv(m_in.workspace / ".venv", m_in.read_script);
  }

  // The venv `python` (a #! line's interpreter) belongs to, when the image's python runs it.
  std::optional<Venv> fitting_venv(const std::string& python) const {
    std::optional<Venv> venv = venv_at(python);
    if (!venv ||
        !venv_mismatch(*venv, m_in.python_image, image_python_of(m_in.python_image), m_in.workspace)
             .empty()) {
      return std::nullopt;
    }
    return venv;
  }

  // `.venv/bin/pytest -q`: the venv's python runs the same script in the sandbox, with the
  // venv's packages.
  void refuse_venv_script(const Invocation& invocation, const Venv& venv) {
    std::string run = shown_path(venv.dir / "bin" / invocation.name) +
                      (invocation.arguments.empty() ? "" : " " + invocation.arguments);
    refuse("shebang-bypass", "sandshim: " + code(invocation.command) +
                                 " is a script whose #! line starts " + code(invocation.shebang) +
                                 " directly, outside the sandbox. Run it in the sandbox with the "
                                 "venv's python instead: " +
                                 sandshim_run_exactly(venv_python(venv) + " " + run) + ".");
  }

  // "python3.11" for `/usr/bin/env -S python3.11`, "python3" for `/usr/bin/python3`.
  static std::string shebang_program(const std::string& shebang) {
    std::string last = shebang.substr(shebang.find_last_of(' ') + 1);
    return std::filesystem::path(last).filename().string();
  }

  static std::string program_of(const Invocation& invocation) {
    return invocation.resolved_as.empty() ? invocation.name : invocation.resolved_as;
  }

  // `source VENV/bin/activate`: the venv's python would come first on PATH, on the host.
  void refuse_activation(const Finding& finding) {
    std::string what = code(finding.subject) + " puts the venv's own python first on PATH";
    std::optional<Venv> venv = venv_at(finding.detail);
    if (venv) {
      refuse("venv-activation", venv_refusal(what, *venv));
      count_if_wrap_runs(*venv);
      return;
    }
    refuse("venv-activation", "sandshim: " + what +
                                  ", outside the sandbox. Leave the activation out and call " +
                                  alternative_for("python3") +
                                  " by name: it runs in the sandbox with the image's packages.");
  }

  // The venv `program` (`.venv/bin/python`, `env/bin/activate`) belongs to, when it has a
  // readable pyvenv.cfg.
  std::optional<Venv> venv_at(const std::string& program) const {
    std::optional<std::filesystem::path> dir = venv_dir_of(program, m_in.cwd);
    return dir ? read_venv(*dir, m_in.read_script) : std::nullopt;
  }

  // The venv's python, as the model should write it: relative to cwd when below it.
  std::string venv_python(const Venv& venv) const {
    std::string name = m_in.shimmed.contains("python3") ? "python3" : "python";
    return shown_path(venv.dir / "bin" / name);
  }

  // What works instead of a venv's python on the host: the same venv's python in the sandbox
  // when the image's interpreter matches the one the venv was made from, else the image's own.
  // `run`: what to run with the venv's python in the sandbox (`x.py`, `.venv/bin/pytest -q`);
  // empty when only the running command knows it (an activation).
  std::string venv_refusal(const std::string& what, const Venv& venv,
                           const std::string& run = "") const {
    std::optional<ImagePython> python = image_python_of(m_in.python_image);
    std::string mismatch = venv_mismatch(venv, m_in.python_image, python, m_in.workspace);
    if (mismatch.empty()) {
      return "sandshim: " + what + ", outside the sandbox. Run it in the sandbox with the " +
             "venv's packages instead: " +
             (run.empty() ? sandshim_run(venv_python(venv))
                          : sandshim_run_exactly(venv_python(venv) + " " + run)) +
             (venv.system_site_packages ? " (its system site-packages are the image's)" : "") + ".";
    }
    if (m_in.image_choice && !run.empty() && quotable(run)) {
      return "sandshim: " + what +
             ", outside the sandbox, and the image cannot run the venv: " + mismatch +
             ". The host's python runs it, read-only, in the sandbox instead: " +
             host_venv_command(venv, run) + ".";
    }
    std::string recreate = python ? "; for its packages ask the user to recreate it with `" +
                                        python->home + "/python3 -m venv`"
                                  : "";
    return "sandshim: " + what + ", outside the sandbox, and the venv cannot be used inside " +
           "it: " + mismatch + ". Instead: " + alternative_for("python3") +
           " runs in the sandbox with the image's packages" + recreate + ".";
  }

  void count_if_wrap_runs(const Venv& venv) {
    std::optional<ImagePython> python = image_python_of(m_in.wrap_image);
    if (python && venv_mismatch(venv, m_in.wrap_image, python, m_in.workspace).empty()) {
      ++m_wrap_venvs;
    }
  }

  void refuse_interpreter_by_path(const Invocation& invocation) {
    if (std::optional<Venv> venv = venv_at(invocation.command)) {
      refuse("venv-by-path",
             venv_refusal(code(invocation.command) + " is the venv's python called by path", *venv,
                          invocation.arguments));
      count_if_wrap_runs(*venv);
      return;
    }
    std::string what = invocation.resolved_as.empty()
                           ? " is called by path, which skips the sandbox."
                           : " is " + code(invocation.resolved_as) +
                                 ", called by path or under "
                                 "another name, which skips the "
                                 "sandbox.";
    refuse("interpreter-by-path",
           "sandshim: " + code(invocation.command) + what +
               " Instead: " + alternative_for(program_of(invocation), invocation.arguments) + ".");
  }

  // Path mode relies on PATH lookups: anything that changes them for an interpreter is refused.
  void judge_path_lookup(const Invocation& invocation) {
    bool interpreter = invocation.kind == CommandClass::interpreter;
    if (invocation.clears_environment) {
      refuse("env-cleared", "sandshim: " + code(invocation.wrapper) +
                                " empties the environment, PATH included, so interpreters would "
                                "be found outside the sandbox. Drop it; to remove one variable "
                                "use `env -u NAME`.");
    } else if (invocation.default_path && interpreter) {
      refuse("default-path", "sandshim: `command -p` looks " + code(invocation.name) +
                                 " up on the system's default PATH, outside the sandbox. Drop "
                                 "`-p`.");
    } else if (invocation.renames_argv0 && interpreter) {
      refuse("argv0-renamed", "sandshim: `exec -a` renames " + code(invocation.name) +
                                  ", so the sandbox cannot tell which interpreter it is. Drop "
                                  "`-a NAME`.");
    } else if (interpreter && invocation.lookup == Lookup::by_name) {
      judge_by_name(invocation);
    }
  }

  // A versioned name (python3.11) has no shim of its own while its family does: steer the model
  // to the name that is sandboxed. Interpreters the policy does not shim at all stay on the host.
  void judge_by_name(const Invocation& invocation) {
    if (m_in.shimmed.contains(invocation.name)) {
      judge_routing(invocation);
      return;
    }
    std::string what =
        invocation.resolved_as.empty() ? "" : " (it is " + code(invocation.resolved_as) + ")";
    refuse("interpreter-not-shimmed",
           "sandshim: " + code(invocation.name) + what +
               " has no shim, so it would run outside the sandbox. "
               "Instead: " +
               alternative_for(program_of(invocation), invocation.arguments) + ".");
  }

  void judge_routing(const Invocation& invocation) {
    if (!m_routed) {
      refuse("cannot-rewrite",
             "sandshim: this agent cannot reroute commands, so " + code(invocation.name) +
                 " would run outside the sandbox. Run it through the sandbox: " +
                 sandshim_run(invocation.name) + ", or call its shim: `" +
                 shell_quote((m_in.shim_dir / invocation.name).string()) + " …`.");
    } else if (!installed(invocation.name)) {
      refuse("shim-not-installed", "sandshim: the shim for " + code(invocation.name) +
                                       " is missing from " + code(m_in.shim_dir.string()) +
                                       ", so it would run outside the sandbox. Ask the user to "
                                       "run `sandshim install`.");
    }
  }

  void judge_outside_sandbox(const Invocation& invocation) {
    if (invocation.kind == CommandClass::interpreter && invocation.lookup == Lookup::by_name) {
      refuse("interpreter-outside-sandbox",
             "sandshim: " + code(invocation.name) +
                 " would run outside the sandbox (hook.mode = deny). Run it through the "
                 "sandbox: " +
                 alternative_for(program_of(invocation), invocation.arguments) + ".");
    }
  }

  const DecisionInputs& m_in;
  const CommandAnalysis& m_analysis;
  bool m_routed;
  std::vector<Refusal> m_refusals;
  size_t m_wrap_venvs = 0;  // refusals of venvs the wrap image runs as they are
};

Decision denied(const std::vector<Refusal>& refusals) {
  Decision decision{Verdict::deny, refusals.front().rule, "", "", false};
  std::vector<std::string> reasons;
  for (const Refusal& refusal : refusals) {
    std::string reason = with_rule_footer(refusal.reason, refusal.rule);
    if (std::find(reasons.begin(), reasons.end(), reason) == reasons.end() &&
        reasons.size() < k_reasons_per_refusal) {
      reasons.push_back(reason);
    }
  }
  decision.reason = join(reasons, "\n");
  return decision;
}

Decision allowed(std::string rule, std::string reason) {
  return Decision{Verdict::allow, std::move(rule), std::move(reason), "", false};
}

std::optional<Decision> parse_refusal(const CommandAnalysis& analysis) {
  for (const Finding& finding : analysis.findings) {
    if (finding.kind == FindingKind::parse_error && !finding.enclosing_shell) {
      return denied({{"unparseable", unparseable_reason(finding.detail)}});
    }
  }
  return std::nullopt;
}

// Wrap mode for an agent that applies no rewrite: the command as written would run on the host.
Decision cannot_wrap(std::string_view command, const DecisionInputs& inputs) {
  std::string binary = inputs.sandshim.empty() ? "sandshim" : shell_quote(inputs.sandshim.string());
  std::string reason =
      "sandshim: commands run inside the sandbox (hook.mode = wrap) and this agent "
      "cannot reroute them. Run it as `" +
      binary + " run -- bash -c '…'`" +
      (command.size() <= 200 ? ": `" + binary + " run -- bash -c " + shell_quote(command) + "`."
                             : ".");
  if (inputs.shell_prefix_agent) {
    reason +=
        "\nsandshim: this session's shell is not sandshim's; ask the user to run `sandshim "
        "install agent claude --mode wrap` and start a new session";
  }
  return denied({{"cannot-rewrite", reason}});
}

// The agent's shell is sandshim's (`sandshim -c`): the whole command runs in the wrap image
// whatever it says, in every mode, so only what cannot be parsed is refused.
Decision decide_in_sandbox_shell(const CommandAnalysis& analysis) {
  if (auto refusal = parse_refusal(analysis)) {
    return *refusal;
  }
  return allowed("shell-in-sandbox",
                 "sandshim: the agent's shell runs the whole command in a sandbox");
}

Decision decide_wrap(std::string_view command, const CommandAnalysis& analysis,
                     const DecisionInputs& inputs) {
  if (auto refusal = parse_refusal(analysis)) {
    return *refusal;
  }
  if (!inputs.can_rewrite) {
    return cannot_wrap(command, inputs);
  }
  Decision decision{Verdict::rewrite, "wrap",
                    "sandshim: the whole command runs in a sandbox (hook.mode = wrap)",
                    wrap_in_sandbox(command, inputs.sandshim, inputs.wrap_image, inputs.link,
                                    ShellRole::whole_shell),
                    false};
  return decision;
}

// A venv the wrap image can run (same python, same path, inside the workspace): the whole
// command, activation included, runs there, so its python is the venv's and sandboxed.
Decision venv_in_sandbox(std::string_view command, const DecisionInputs& inputs) {
  return Decision{
      Verdict::rewrite, "venv-in-sandbox",
      "sandshim: the command uses a venv, so all of it runs in a sandbox (" + inputs.wrap_image +
          ") with the venv's packages",
      wrap_in_sandbox(command, inputs.sandshim, inputs.wrap_image, inputs.link, ShellRole::part),
      false};
}

Decision decide_path(std::string_view command, bool already_routed, const CommandAnalysis& analysis,
                     const DecisionInputs& inputs) {
  bool routed = already_routed || inputs.can_rewrite || inputs.shim_dir_first_on_path;
  Judge judge(inputs, analysis, routed);
  std::vector<Refusal> refusals = judge.refusals();
  if (!refusals.empty() && inputs.can_rewrite && judge.only_venvs_the_wrap_image_runs()) {
    return venv_in_sandbox(command, inputs);
  }
  if (!refusals.empty()) {
    return denied(refusals);
  }
  if (already_routed) {
    return allowed("already-routed",
                   "sandshim: the command already routes interpreters to the "
                   "sandbox");
  }
  if (!inputs.can_rewrite || inputs.command_path_has_shims) {
    return inputs.shim_dir_first_on_path
               ? allowed("shim-on-path", "sandshim: the shims are first on this agent's PATH")
               : allowed("no-interpreter", "sandshim: no shimmed interpreter is called");
  }
  std::optional<std::string> through_script =
      inputs.routing_script.empty()
          ? std::nullopt
          : route_through_script(command, inputs.routing_script, inputs.link);
  return Decision{
      Verdict::rewrite, "path-rewrite",
      "sandshim: " + join_names(inputs.shimmed) +
          " reached by name run in a sandbox (the shims come first on PATH)",
      through_script.value_or(route_through_shims(command, inputs.shim_dir, inputs.link)), false};
}

Decision decide_deny(const CommandAnalysis& analysis, const DecisionInputs& inputs) {
  std::vector<Refusal> refusals = Judge(inputs, analysis, false).refusals();
  if (!refusals.empty()) {
    return denied(refusals);
  }
  return allowed("no-interpreter",
                 "sandshim: no interpreter runs outside the sandbox (hook.mode = deny)");
}

// A system script is root's and lies outside the places the agent writes: the workspace, the
// command's cwd and HOME (compared canonically, as the script's own path is).
std::function<bool(const std::filesystem::path&)> system_program_test(const DecisionInputs& in) {
  if (!in.owned_by_system) {
    return {};
  }
  return [owned = in.owned_by_system,
          places = std::vector{in.workspace, in.cwd, in.home}](const std::filesystem::path& file) {
    for (const std::filesystem::path& place : places) {
      std::error_code ec;
      std::filesystem::path canonical = std::filesystem::weakly_canonical(place, ec);
      if (!place.empty() && (ec || is_within(file, canonical))) {
        return false;
      }
    }
    return owned(file);
  };
}

}  // namespace

AnalysisOptions analysis_options(const DecisionInputs& inputs) {
  AnalysisOptions options;
  options.shimmed = inputs.shimmed;
  options.shim_dir = inputs.shim_dir;
  options.sandshim = inputs.sandshim;
  options.first_line_of = inputs.first_line_of;
  options.locate = inputs.locate;
  options.known_program_of = inputs.known_program_of;
  options.read_script = inputs.read_script;
  options.system_program = system_program_test(inputs);
  options.cwd = inputs.cwd;
  options.home = inputs.home;
  options.protected_paths = inputs.protected_paths;
  options.variable = inputs.variable;
  return options;
}

Decision decide(std::string_view command, const DecisionInputs& inputs) {
  if (inputs.mode != "path" && inputs.mode != "wrap" && inputs.mode != "deny") {
    return denied({{"unknown-mode", "sandshim: hook.mode " + code(inputs.mode) +
                                        " is not path, wrap or deny; nothing runs until the "
                                        "user fixes the policy."}});
  }
  std::optional<std::string_view> original =
      strip_routing(command, inputs.shim_dir, inputs.routing_script);
  std::string_view body = original.value_or(command);
  CommandAnalysis analysis = analyse_command(body, analysis_options(inputs));
  if (inputs.shell_in_sandbox) {
    return decide_in_sandbox_shell(analysis);
  }
  if (inputs.mode == "wrap") {
    return decide_wrap(command, analysis, inputs);
  }
  if (inputs.mode == "deny") {
    return decide_deny(analysis, inputs);
  }
  return decide_path(command, original.has_value(), analysis, inputs);
}

}  // namespace sandshim::hooks
