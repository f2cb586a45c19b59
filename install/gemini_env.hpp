#pragma once

// Gemini CLI's route to the shims without a rewrite. Gemini CLI runs every shell command, and
// every hook, as `bash -c` in its own environment, into which it loads the nearest .gemini/.env
// (only variables not already set). A BASH_ENV line there names a file bash reads first:
// sandshim's puts the shim directory first on PATH. The hook sees the same PATH as the command
// it judges, so when the shims are first it leaves the command as the model wrote it, and the
// user's own rules for shell commands match it as they did without sandshim.

#include <filesystem>
#include <string>

#include "install/agent_settings.hpp"

namespace sandshim::install {

struct GeminiEnvRequest {
  std::filesystem::path env_file;  // .gemini/.env of the project or of the user
  std::filesystem::path dotenv;    // the project's own .env beside it ("" for the user's file)
  std::filesystem::path shim_dir;
  bool uninstall = false;
  bool dry_run = false;
};

struct GeminiEnvChange {
  Change change = Change::unchanged;
  std::string note;  // what it means for the user (printed beside the file)
};

// The script BASH_ENV names: the shim directory first on PATH, once, and BASH_ENV unset so the
// commands' own bash scripts and the sandbox do not see it.
std::filesystem::path gemini_bash_env_script();
std::string gemini_bash_env_text(const std::filesystem::path& shim_dir);

// Adds (or with `uninstall` removes) sandshim's BASH_ENV line in the request's env file and
// writes the script; leaves a BASH_ENV the user set, and a project whose own .env a new
// .gemini/.env would hide from Gemini CLI, as they are (commands then get the PATH prefix).
GeminiEnvChange update_gemini_env(const GeminiEnvRequest& request);

}  // namespace sandshim::install
