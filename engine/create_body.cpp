#include "engine/create_body.hpp"

#include <cstdlib>

namespace sandshim::shim::create_body {

std::string joined(const std::vector<std::string>& parts) {
  std::string text;
  for (const auto& part : parts) {
    text += (text.empty() ? "" : ",") + part;
  }
  return text;
}

void set_if(nlohmann::json& object, const char* key, const std::optional<int64_t>& value) {
  if (value) {
    object[key] = *value;
  }
}

double cpus_given(double cpus) {
  return std::strtod(cpus_text(cpus).c_str(), nullptr);
}

void set_program(nlohmann::json& config, const CreateSpec& spec, const ProgramKeys& keys) {
  if (!spec.entrypoint.empty()) {
    config[keys.entrypoint] = nlohmann::json::array({spec.entrypoint});
  }
  config[keys.image] = spec.image;
  if (!spec.command.empty()) {
    config[keys.command] = spec.command;
  }
}

std::optional<std::string> resolved(const EnvVar& var, const std::vector<std::string>& client_env) {
  if (var.value) {
    return var.name + "=" + *var.value;
  }
  for (const std::string& entry : client_env) {
    if (entry.size() > var.name.size() && entry.starts_with(var.name) &&
        entry[var.name.size()] == '=') {
      return entry;
    }
  }
  return std::nullopt;
}

ApiCreate serialize(const CreateSpec& spec, const CreateInputs& inputs, nlohmann::json base,
                    std::span<const Section> sections) {
  if (spec.name.empty() || spec.image.empty()) {
    return {std::nullopt, "no image or no --name"};
  }
  if (!spec.pull.empty() && spec.pull != "never") {
    return {std::nullopt, *cannot("--pull=" + spec.pull, "the API never pulls")};
  }
  Draft draft;
  draft.config = std::move(base);
  draft.inputs = &inputs;
  draft.request.name = spec.name;
  draft.request.tty = spec.tty;
  draft.request.interactive = spec.interactive;
  for (Section section : sections) {
    if (auto problem = section(spec, draft)) {
      return {std::nullopt, *problem};
    }
  }
  draft.request.body = draft.config.dump();
  return {std::move(draft.request), ""};
}

}  // namespace sandshim::shim::create_body
