#pragma once

// What docker's and podman's create serializers share (engine_create.cpp, podman_create.cpp):
// the body while it is built, and the small conversions both make the same way.

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/engine_create.hpp"

namespace sandshim::shim::create_body {

// The create body while it is built, and what the spec says about the run itself.
struct Draft {
  nlohmann::json config = nlohmann::json::object();
  CreateRequest request;
  const CreateInputs* inputs = nullptr;

  nlohmann::json& host() { return config["HostConfig"]; }
};

// Why a field cannot be carried; nullopt when it was.
using Problem = std::optional<std::string>;

// One part of the spec into the body; the first problem leaves the run to the client.
using Section = Problem (*)(const CreateSpec&, Draft&);

// The problem of `field` (as the client flag that carries it): `why` it has no API form here.
inline Problem cannot(const std::string& field, const std::string& why) {
  return field + " (" + why + ")";
}

// Parts joined by commas, as a tmpfs takes its options.
std::string joined(const std::vector<std::string>& parts);

// `key` set to `value` when there is one.
void set_if(nlohmann::json& object, const char* key, const std::optional<int64_t>& value);

// The CPU count as the client reads it from `--cpus` (cpus_text), so both paths round alike.
double cpus_given(double cpus);

// The body's keys of what runs: the entrypoint, the image and the command.
struct ProgramKeys {
  const char* entrypoint;
  const char* image;
  const char* command;
};

// What runs into `config` under `keys`: the image, and the entrypoint and command it has.
void set_program(nlohmann::json& config, const CreateSpec& spec, const ProgramKeys& keys);

// NAME=VALUE of `var`: its own value, or by name the first of `client_env`; nullopt when the
// client's environment has none (the client then passes nothing).
std::optional<std::string> resolved(const EnvVar& var, const std::vector<std::string>& client_env);

// The body of `spec`: `base`, then each section in order; the request, or the first problem.
ApiCreate serialize(const CreateSpec& spec, const CreateInputs& inputs, nlohmann::json base,
                    std::span<const Section> sections);

}  // namespace sandshim::shim::create_body
