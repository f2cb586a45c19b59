#include "engine/seccomp.hpp"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/sha256.hpp"
#include "common/strings.hpp"

namespace sandshim::shim {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr uint64_t k_clone_newuser = 0x10000000;
constexpr int k_enosys = 38;
constexpr int k_eperm = 1;
constexpr const char* k_namespace_calls[] = {"clone", "clone3", "unshare"};

bool is_namespace_call(const json& name) {
  return std::any_of(std::begin(k_namespace_calls), std::end(k_namespace_calls),
                     [&](const char* call) { return name == call; });
}

// A rule on `call` whose flags (argument 0 on x86 and arm) have CLONE_NEWUSER set (`set`) or
// clear.
json on_newuser_flag(const char* call, bool set, json action) {
  json rule = {{"names", {call}},
               {"args",
                {{{"index", 0},
                  {"value", k_clone_newuser},
                  {"valueTwo", set ? k_clone_newuser : 0},
                  {"op", "SCMP_CMP_MASKED_EQ"}}}}};
  rule.update(action);
  return rule;
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string seccomp_without_user_namespaces(const std::string& engine_profile_json) {
  json profile = json::parse(engine_profile_json);
  for (auto& rule : profile.at("syscalls")) {
    auto& names = rule.at("names");
    names.erase(std::remove_if(names.begin(), names.end(), is_namespace_call), names.end());
  }
  auto& rules = profile["syscalls"];
  rules.erase(std::remove_if(rules.begin(), rules.end(),
                             [](const json& rule) { return rule.at("names").empty(); }),
              rules.end());
  for (const char* call : {"clone", "unshare"}) {
    rules.push_back(on_newuser_flag(call, false, {{"action", "SCMP_ACT_ALLOW"}}));
    rules.push_back(
        on_newuser_flag(call, true, {{"action", "SCMP_ACT_ERRNO"}, {"errnoRet", k_eperm}}));
  }
  rules.push_back({{"names", {"clone3"}}, {"action", "SCMP_ACT_ERRNO"}, {"errnoRet", k_enosys}});
  return profile.dump(1);
}

std::string seccomp_for_gvisor(const std::string& profile_json) {
  json profile = json::parse(profile_json);
  auto& rules = profile.at("syscalls");
  rules.erase(
      std::remove_if(rules.begin(), rules.end(),
                     [](const json& rule) { return rule.at("names") == json::array({"clone3"}); }),
      rules.end());
  rules.push_back({{"names", {"clone3"}}, {"action", "SCMP_ACT_ALLOW"}});
  return profile.dump(1);
}

namespace {

// podman's default profile, which the sandbox's is derived from; Fatal when neither copy is there.
fs::path podman_seccomp_profile() {
  for (const char* candidate :
       {"/etc/containers/seccomp.json", "/usr/share/containers/seccomp.json"}) {
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) {
      return candidate;
    }
  }
  throw Fatal(
      "podman's default seccomp profile (/usr/share/containers/seccomp.json) is "
      "missing; install golang-github-containers-common (install/deps.sh --with-podman or "
      "--with-gvisor)");
}

}  // namespace

fs::path sandbox_seccomp_profile(bool gvisor) {
  fs::path source = podman_seccomp_profile();
  std::string derived;
  try {
    derived = seccomp_without_user_namespaces(read_text(source));
    if (gvisor) {
      derived = seccomp_for_gvisor(derived);
    }
  } catch (const json::exception& e) {
    throw Fatal("cannot read podman's seccomp profile " + quoted(source.string()) + ": " +
                e.what());
  }
  fs::path dir = xdg_directory("state") / "sandshim" / "seccomp";
  std::string prefix = gvisor ? "runsc-" : "podman-";
  fs::path file = dir / (prefix + sha256_hex(derived).substr(0, 16) + ".json");
  std::error_code ec;
  if (!fs::exists(file, ec)) {
    fs::create_directories(dir, ec);
    fs::path partial = file.string() + ".partial";
    std::ofstream(partial) << derived;
    fs::rename(partial, file, ec);
    if (ec) {
      throw Fatal("cannot write the seccomp profile " + quoted(file.string()) + ": " +
                  ec.message());
    }
  }
  return file;
}

}  // namespace sandshim::shim
