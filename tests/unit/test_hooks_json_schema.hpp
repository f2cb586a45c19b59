#pragma once

// A validator for the subset of JSON Schema (draft-07) that Codex's embedded hook schemas use:
// boolean schemas, $ref to #/definitions, allOf, type, const, enum, properties, required and
// additionalProperties. Enough to hold our answers to exactly what Codex accepts.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sandshim::testing {

using SchemaJson = nlohmann::json;

inline bool has_type(const SchemaJson& value, const std::string& type) {
  if (type == "string")
    return value.is_string();
  if (type == "boolean")
    return value.is_boolean();
  if (type == "object")
    return value.is_object();
  if (type == "array")
    return value.is_array();
  if (type == "null")
    return value.is_null();
  if (type == "integer")
    return value.is_number_integer();
  if (type == "number")
    return value.is_number();
  return false;
}

inline bool matches_type(const SchemaJson& value, const SchemaJson& type) {
  if (type.is_string()) {
    return has_type(value, type.get<std::string>());
  }
  for (const auto& one : type) {
    if (has_type(value, one.get<std::string>())) {
      return true;
    }
  }
  return false;
}

inline void validate_schema(const SchemaJson& value, const SchemaJson& schema,
                            const SchemaJson& root, const std::string& at,
                            std::vector<std::string>& errors);

inline void validate_object(const SchemaJson& value, const SchemaJson& schema,
                            const SchemaJson& root, const std::string& at,
                            std::vector<std::string>& errors) {
  SchemaJson properties = schema.value("properties", SchemaJson::object());
  for (const auto& key : schema.value("required", SchemaJson::array())) {
    if (!value.contains(key.get<std::string>())) {
      errors.push_back(at + ": missing required " + key.get<std::string>());
    }
  }
  for (const auto& [key, item] : value.items()) {
    if (properties.contains(key)) {
      validate_schema(item, properties[key], root, at + "." + key, errors);
    } else if (schema.contains("additionalProperties") && schema["additionalProperties"] == false) {
      errors.push_back(at + ": unexpected key " + key);
    }
  }
}

inline void validate_schema(const SchemaJson& value, const SchemaJson& schema,
                            const SchemaJson& root, const std::string& at,
                            std::vector<std::string>& errors) {
  if (schema.is_boolean()) {
    if (!schema.get<bool>()) {
      errors.push_back(at + ": no value allowed");
    }
    return;
  }
  if (schema.contains("$ref")) {
    std::string ref = schema["$ref"];
    validate_schema(value, root["definitions"][ref.substr(ref.rfind('/') + 1)], root, at, errors);
  }
  for (const auto& part : schema.value("allOf", SchemaJson::array())) {
    validate_schema(value, part, root, at, errors);
  }
  if (schema.contains("type") && !matches_type(value, schema["type"])) {
    errors.push_back(at + ": wrong type " + value.dump());
  }
  if (schema.contains("const") && value != schema["const"]) {
    errors.push_back(at + ": not " + schema["const"].dump());
  }
  if (schema.contains("enum") &&
      std::find(schema["enum"].begin(), schema["enum"].end(), value) == schema["enum"].end()) {
    errors.push_back(at + ": " + value.dump() + " not in " + schema["enum"].dump());
  }
  if (value.is_object()) {
    validate_object(value, schema, root, at, errors);
  }
}

// The reasons `value` does not validate against `schema`; empty when it does.
inline std::vector<std::string> schema_errors(const SchemaJson& value, const SchemaJson& schema) {
  std::vector<std::string> errors;
  validate_schema(value, schema, schema, "$", errors);
  return errors;
}

}  // namespace sandshim::testing
