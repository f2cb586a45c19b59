#include "install/codex_route.hpp"

#include "hooks/agents/agent.hpp"
#include "hooks/rewrite.hpp"
#include "install/atomic_file.hpp"

namespace sandshim::install {

namespace fs = std::filesystem;

std::string codex_route_rule(const fs::path& script) {
  return "# Written by `sandshim install agent codex`: the commands sandshim's hook routes begin\n"
         "# with `. " +
         script.string() +
         " … &&`, which puts the shims first on PATH; this rule\n"
         "# lets that part through, so the user's own rules judge the command after it.\n"
         "prefix_rule(pattern=[\".\", \"" +
         script.string() + "\"], decision=\"allow\")\n";
}

CodexRouteChange update_codex_route(const fs::path& shim_dir, bool uninstall, bool dry_run) {
  hooks::Agent codex = *hooks::agent_named("codex");
  fs::path script = codex->routing_script();
  CodexRouteChange result{Change::unchanged, codex->config_dir() / "rules" / "sandshim.rules", ""};
  std::optional<std::string> before = read_file(result.file);
  if (uninstall) {
    result.change = before ? Change::deleted : Change::absent;
    if (before && !dry_run) {
      fs::remove(result.file);
    }
    return result;
  }
  std::string rule = codex_route_rule(script);
  result.change = !before ? Change::created : *before == rule ? Change::unchanged : Change::updated;
  result.note = "routed commands source " + script.string() + ", which this rule allows";
  if (!dry_run) {
    write_file_atomically(script, hooks::routing_script_text(shim_dir));
    if (result.change != Change::unchanged) {
      write_file_atomically(result.file, rule);
    }
  }
  return result;
}

}  // namespace sandshim::install
