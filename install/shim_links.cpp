#include "install/shim_links.hpp"

#include <boost/program_options.hpp>
#include <iostream>

#include "common/command_doc.hpp"
#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/strings.hpp"
#include "policy/policy.hpp"

namespace sandshim::install {

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

struct LinkOptions {
  fs::path dir;
  shim::Policy policy;
};

po::options_description dir_options() {
  po::options_description options("Options");
  options.add_options()("dir", po::value<std::string>()->value_name("DIR"),
                        "shim directory (default: shim.dir)");
  return options;
}

// Parses [--dir DIR]; nullopt after printing help.
std::optional<LinkOptions> parse_link_options(const std::vector<std::string>& args,
                                              const CommandDoc& doc) {
  po::variables_map vm;
  if (!parse_subcommand_options(args, doc, vm)) {
    return std::nullopt;
  }
  LinkOptions result{{}, shim::load_policy({})};
  result.dir = vm.count("dir") != 0 ? fs::absolute(vm["dir"].as<std::string>())
                                    : result.policy.effective_shim_dir();
  return result;
}

bool links_to(const fs::path& link, const fs::path& target) {
  std::error_code ec;
  return fs::is_symlink(fs::symlink_status(link, ec)) && fs::read_symlink(link, ec) == target;
}

// The target of `link` when it is a link to another sandshim binary (a build tree's, an older
// install's, or one since removed), which install may replace; "" for anything else.
std::string other_sandshim_target(const fs::path& link) {
  std::error_code ec;
  if (!fs::is_symlink(link, ec)) {
    return "";
  }
  fs::path target = fs::read_symlink(link, ec);
  return !ec && target.filename() == "sandshim" ? target.string() : "";
}

}  // namespace

CommandDoc install_shims_doc() {
  return make_command_doc(
      "install", "install the shims (or: install agent NAME, install git-hooks)",
      "sandshim install [--dir DIR]\n"
      "sandshim install agent NAME [OPTIONS]\n"
      "sandshim install git-hooks [OPTIONS]\n\n"
      "Creates a link named after each shimmed command (images.* in the policy) to this binary.\n"
      "Then put DIR first on PATH: eval \"$(sandshim env)\"",
      dir_options(), {}, {"agent", "git-hooks"});
}

CommandDoc uninstall_shims_doc() {
  return make_command_doc("uninstall", "remove the shims",
                          "sandshim uninstall [--dir DIR]\n\nRemoves the links `sandshim "
                          "install` created (links to this binary only).",
                          dir_options());
}

CommandDoc env_doc() {
  po::options_description options("Options");
  options.add_options()("shell", po::value<std::string>()->default_value("sh")->value_name("SHELL"),
                        "sh (bash, zsh, dash) or fish");
  return make_command_doc(
      "env", "print the shell line that puts the shims first on PATH",
      "sandshim env [--shell sh|fish]\n\nPrints the line that puts the shim directory first "
      "on PATH:\n  eval \"$(sandshim env)\"             # bash, zsh\n"
      "  sandshim env --shell fish | source    # fish",
      options);
}

int install_shims_main(const std::vector<std::string>& args) {
  auto options = parse_link_options(args, install_shims_doc());
  if (!options) {
    return exit_code::k_ok;
  }
  fs::path self = self_executable();
  fs::create_directories(options->dir);
  for (const auto& [command, image] : options->policy.images) {
    fs::path link = options->dir / command;
    std::error_code ec;
    if (links_to(link, self)) {
      continue;
    }
    std::string was;
    if (fs::exists(fs::symlink_status(link, ec))) {
      was = other_sandshim_target(link);
      if (was.empty()) {
        throw Fatal(quoted(link.string()) + " exists and is not sandshim's link; remove it first");
      }
      fs::remove(link);
    }
    fs::create_symlink(self, link);
    std::cout << "linked " << link.string() << " -> " << self.string()
              << (was.empty() ? "" : " (was -> " + was + ")") << "\n";
  }
  std::cout << "shims in " << options->dir.string() << "; put them first on PATH with:\n  eval \"$("
            << shell_quote(self.string()) << " env)\"\n";
  return exit_code::k_ok;
}

int uninstall_shims_main(const std::vector<std::string>& args) {
  auto options = parse_link_options(args, uninstall_shims_doc());
  if (!options) {
    return exit_code::k_ok;
  }
  fs::path self = self_executable();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(options->dir, ec)) {
    if (links_to(entry.path(), self)) {
      fs::remove(entry.path());
      std::cout << "removed " << entry.path().string() << "\n";
    }
  }
  if (fs::is_empty(options->dir, ec)) {
    fs::remove(options->dir, ec);
  }
  return exit_code::k_ok;
}

int env_main(const std::vector<std::string>& args) {
  po::variables_map vm;
  if (!parse_subcommand_options(args, env_doc(), vm)) {
    return exit_code::k_ok;
  }
  std::string dir = shim::load_policy({}).effective_shim_dir().string();
  std::string shell = vm["shell"].as<std::string>();
  if (shell == "fish") {
    std::cout << "set -gx PATH " << shell_quote(dir) << " $PATH\n";
  } else if (shell == "sh" || shell == "bash" || shell == "zsh" || shell == "dash") {
    std::cout << "export PATH=" << shell_quote(dir) << ":\"$PATH\"\n";
  } else {
    throw Fatal("unknown shell " + quoted(shell) + ": use sh, bash, zsh or fish",
                exit_code::k_usage);
  }
  return exit_code::k_ok;
}

}  // namespace sandshim::install
