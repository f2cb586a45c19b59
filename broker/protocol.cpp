#include "broker/protocol.hpp"

#include <signal.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <tuple>

#include "common/semver.hpp"
#include "common/strings.hpp"

namespace sandshim::broker {

namespace {

using nlohmann::json;

constexpr std::array<std::pair<Verb, std::string_view>, 5> k_verbs = {
    {{Verb::run, "run"},
     {Verb::record, "record"},
     {Verb::audit, "audit"},
     {Verb::status, "status"},
     {Verb::session_close, "session_close"}}};

constexpr std::array<std::string_view, 4> k_decisions = {"allow", "deny", "ask", "rewrite"};
constexpr std::array<std::string_view, 2> k_outcomes = {"ran", "not-run"};

// The text fields of a decision, in one table: the encoder and the decoder both walk it.
constexpr std::array<std::pair<const char*, std::string DecisionFields::*>, 12> k_decision_texts = {
    {{"agent", &DecisionFields::agent},
     {"event", &DecisionFields::event},
     {"session_id", &DecisionFields::session_id},
     {"tool_use_id", &DecisionFields::tool_use_id},
     {"cwd", &DecisionFields::cwd},
     {"original_command", &DecisionFields::original_command},
     {"rewritten_command", &DecisionFields::rewritten_command},
     {"decision", &DecisionFields::decision},
     {"answer", &DecisionFields::answer},
     {"permission_mode", &DecisionFields::permission_mode},
     {"reason", &DecisionFields::reason},
     {"rule", &DecisionFields::rule}}};

constexpr std::array<std::pair<const char*, std::string CompletionFields::*>, 4>
    k_completion_texts = {{{"tool_use_id", &CompletionFields::tool_use_id},
                           {"session_id", &CompletionFields::session_id},
                           {"outcome", &CompletionFields::outcome},
                           {"tool_response_tail", &CompletionFields::tool_response_tail}}};

// Thrown inside the decoders only; the public functions turn it into a ProtocolError.
struct Violation {
  std::string message;
};

// Nesting is bounded before the parser sees the text, so no input can make it recurse deeply.
bool nesting_within_limit(std::string_view text) {
  size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      escaped = !escaped && c == '\\';
      in_string = escaped || c != '"';
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > k_max_nesting) {
        return false;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return true;
}

json parse_object(std::string_view payload) {
  if (payload.size() > k_max_frame_bytes) {
    throw Violation{"frame over " + std::to_string(k_max_frame_bytes) + " bytes"};
  }
  if (!nesting_within_limit(payload)) {
    throw Violation{"nested deeper than " + std::to_string(k_max_nesting) + " levels"};
  }
  json value = json::parse(payload.begin(), payload.end(), nullptr, false);
  if (value.is_discarded() || !value.is_object()) {
    throw Violation{"not a JSON object"};
  }
  return value;
}

void require_keys(const json& object, const std::set<std::string>& allowed) {
  for (const auto& item : object.items()) {
    if (allowed.count(item.key()) == 0) {
      throw Violation{"unknown key \"" + item.key().substr(0, 64) + "\""};
    }
  }
}

void require_version(const json& object) {
  auto it = object.find("v");
  if (it == object.end() || !it->is_number_integer()) {
    throw Violation{"protocol version is missing"};
  }
  if (it->get<int64_t>() != k_protocol_version) {
    throw Violation{"protocol version " + std::to_string(it->get<int64_t>()) + " is not " +
                    std::to_string(k_protocol_version) +
                    " (the client and the broker are different sandshim versions: restart the "
                    "broker after an upgrade)"};
  }
}

std::string string_field(const json& value, std::string_view what) {
  if (!value.is_string()) {
    throw Violation{std::string(what) + " is not a string"};
  }
  const auto& text = value.get_ref<const std::string&>();
  if (text.size() > k_max_string_bytes || text.find('\0') != std::string::npos) {
    throw Violation{std::string(what) + " is too long or holds a NUL byte"};
  }
  return text;
}

const json& member(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end()) {
    throw Violation{std::string("missing key \"") + key + "\""};
  }
  return *it;
}

std::vector<std::string> string_list(const json& object, const char* key) {
  const json& list = member(object, key);
  if (!list.is_array() || list.size() > k_max_list_entries) {
    throw Violation{std::string(key) + " is not a list of at most " +
                    std::to_string(k_max_list_entries) + " strings"};
  }
  std::vector<std::string> strings;
  for (const auto& entry : list) {
    strings.push_back(string_field(entry, key));
  }
  return strings;
}

int64_t integer_field(const json& object, const char* key, int64_t low, int64_t high) {
  const json& value = member(object, key);
  if (!value.is_number_integer() || value.get<int64_t>() < low || value.get<int64_t>() > high) {
    throw Violation{std::string(key) + " is not an integer from " + std::to_string(low) + " to " +
                    std::to_string(high)};
  }
  return value.get<int64_t>();
}

void require_environment_entries(const std::vector<std::string>& env) {
  for (const auto& entry : env) {
    size_t equals = entry.find('=');
    if (equals == 0 || equals == std::string::npos) {
      throw Violation{"env holds an entry without NAME="};
    }
  }
}

std::optional<TerminalSize> terminal_field(const json& object) {
  auto it = object.find("terminal");
  if (it == object.end() || it->is_null()) {
    return std::nullopt;
  }
  if (!it->is_object()) {
    throw Violation{"terminal is not an object"};
  }
  require_keys(*it, {"rows", "cols"});
  return TerminalSize{static_cast<uint16_t>(integer_field(*it, "rows", 0, 65535)),
                      static_cast<uint16_t>(integer_field(*it, "cols", 0, 65535))};
}

std::optional<VersionAskField> version_ask_field(const json& object) {
  auto it = object.find("version_ask");
  if (it == object.end()) {
    return std::nullopt;
  }
  if (!it->is_object()) {
    throw Violation{"version_ask is not an object"};
  }
  require_keys(*it, {"source", "range"});
  VersionAskField ask{string_field(member(*it, "source"), "source"),
                      string_field(member(*it, "range"), "range")};
  if (!valid_version_ask(ask)) {
    throw Violation{
        "version_ask is not one of sandshim's files with a printable range of at most " +
        std::to_string(k_max_version_range_bytes) + " bytes"};
  }
  return ask;
}

// [[path, text], ...]: at most a few files, each an absolute path and its text.
std::vector<std::pair<std::string, std::string>> user_config_field(const json& object) {
  auto it = object.find("user_config");
  if (it == object.end()) {
    return {};
  }
  if (!it->is_array() || it->size() > k_max_user_config_files) {
    throw Violation{"user_config is not a list of at most " +
                    std::to_string(k_max_user_config_files) + " [path, text] pairs"};
  }
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& pair : *it) {
    if (!pair.is_array() || pair.size() != 2) {
      throw Violation{"user_config holds an entry that is not [path, text]"};
    }
    std::string path = string_field(pair[0], "user_config path");
    if (path.empty() || path.front() != '/') {
      throw Violation{"user_config path is not absolute"};
    }
    files.emplace_back(std::move(path), string_field(pair[1], "user_config text"));
  }
  return files;
}

// [[key, value], ...]: user.name and user.email, printable, each value at most a few hundred bytes.
std::vector<std::pair<std::string, std::string>> git_identity_field(const json& object) {
  auto it = object.find("git_identity");
  if (it == object.end()) {
    return {};
  }
  if (!it->is_array() || it->size() > 2) {
    throw Violation{"git_identity is not a list of at most 2 [key, value] pairs"};
  }
  std::vector<std::pair<std::string, std::string>> identity;
  for (const auto& pair : *it) {
    if (!pair.is_array() || pair.size() != 2) {
      throw Violation{"git_identity holds an entry that is not [key, value]"};
    }
    std::string key = string_field(pair[0], "git_identity key");
    std::string value = string_field(pair[1], "git_identity value");
    if ((key != "user.name" && key != "user.email") || value.empty() ||
        value.size() > k_max_git_identity_bytes || has_control_characters(value)) {
      throw Violation{"git_identity holds other than a printable user.name or user.email"};
    }
    identity.emplace_back(std::move(key), std::move(value));
  }
  return identity;
}

std::string text_of(const json& object, const char* key) {
  return string_field(member(object, key), key);
}

bool bool_field(const json& object, const char* key) {
  const json& value = member(object, key);
  if (!value.is_boolean()) {
    throw Violation{std::string(key) + " is not true or false"};
  }
  return value.get<bool>();
}

template <size_t N>
void require_one_of(const std::string& value, const std::array<std::string_view, N>& words,
                    const char* what) {
  if (std::find(words.begin(), words.end(), value) == words.end()) {
    std::string list;
    for (auto word : words) {
      list += (list.empty() ? "" : ", ") + std::string(word);
    }
    throw Violation{std::string(what) + " is not one of " + list};
  }
}

// The text fields of a table, once the object is known to hold no key but those and `other`.
template <typename Fields, size_t N>
Fields texts_of(const json& object,
                const std::array<std::pair<const char*, std::string Fields::*>, N>& table,
                const char* other) {
  std::set<std::string> keys = {other};
  for (const auto& [key, field] : table) {
    keys.insert(key);
  }
  require_keys(object, keys);
  Fields fields;
  for (const auto& [key, field] : table) {
    fields.*field = text_of(object, key);
  }
  return fields;
}

RunCall decode_run(const json& object) {
  require_keys(object, {"v", "type", "verb", "log", "invoked_as", "argv", "env", "agent",
                        "session_id", "tool_use_id", "agent_command", "dry_run", "cwd",
                        "user_config", "terminal", "version_ask", "git_identity"});
  RunCall run;
  run.invoked_as = text_of(object, "invoked_as");
  if (run.invoked_as.empty() || run.invoked_as.size() > 255 ||
      run.invoked_as.find('/') != std::string::npos) {
    throw Violation{"invoked_as is not a plain command name"};
  }
  run.argv = string_list(object, "argv");
  if (run.argv.empty()) {
    throw Violation{"a run request has an empty argv"};
  }
  run.env = string_list(object, "env");
  require_environment_entries(run.env);
  run.agent = text_of(object, "agent");
  run.session_id = text_of(object, "session_id");
  run.tool_use_id = text_of(object, "tool_use_id");
  run.agent_command = text_of(object, "agent_command");
  run.dry_run = bool_field(object, "dry_run");
  run.cwd = text_of(object, "cwd");
  if (run.cwd.empty() || run.cwd.front() != '/') {
    throw Violation{"cwd is not an absolute path"};
  }
  run.user_config = user_config_field(object);
  run.terminal = terminal_field(object);
  run.version_ask = version_ask_field(object);
  run.git_identity = git_identity_field(object);
  return run;
}

DecisionFields decode_decision(const json& object) {
  auto decision = texts_of(object, k_decision_texts, "payload_bytes");
  require_one_of(decision.decision, k_decisions, "decision");
  decision.payload_bytes = integer_field(object, "payload_bytes", 0, int64_t{1} << 40);
  return decision;
}

CompletionFields decode_completion(const json& object) {
  auto completion = texts_of(object, k_completion_texts, "exit_code");
  require_one_of(completion.outcome, k_outcomes, "outcome");
  if (completion.tool_use_id.empty()) {
    throw Violation{"tool_use_id is empty"};
  }
  if (object.contains("exit_code")) {
    completion.exit_code =
        static_cast<int>(integer_field(object, "exit_code", INT32_MIN, INT32_MAX));
  }
  return completion;
}

const json& object_field(const json& object, const char* key) {
  const json& value = member(object, key);
  if (!value.is_object()) {
    throw Violation{std::string(key) + " is not an object"};
  }
  return value;
}

// Exactly one of "decision" (a new row) and "completion" (the outcome of the caller's own).
RecordCall decode_record(const json& object) {
  require_keys(object, {"v", "type", "verb", "log", "decision", "completion"});
  if (object.contains("decision") == object.contains("completion")) {
    throw Violation{"a record request holds exactly one of decision and completion"};
  }
  if (object.contains("decision")) {
    return RecordCall{decode_decision(object_field(object, "decision"))};
  }
  return RecordCall{decode_completion(object_field(object, "completion"))};
}

AuditCall decode_audit(const json& object) {
  require_keys(object, {"v", "type", "verb", "log", "args"});
  return AuditCall{string_list(object, "args")};
}

StatusCall decode_status_call(const json& object) {
  require_keys(object, {"v", "type", "verb", "log"});
  return StatusCall{};
}

bool is_agent_name_byte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

bool is_printable_byte(char c) {
  auto byte = static_cast<unsigned char>(c);
  return byte >= 0x20 && byte != 0x7f;
}

// A non-empty text of at most `cap` bytes, each one `allowed`.
std::string bounded_text(const json& object, const char* key, size_t cap, bool (*allowed)(char),
                         const char* shape) {
  std::string text = text_of(object, key);
  if (text.empty() || text.size() > cap || !std::all_of(text.begin(), text.end(), allowed)) {
    throw Violation{std::string(key) + " is not " + shape + " of 1 to " + std::to_string(cap) +
                    " bytes"};
  }
  return text;
}

SessionCloseCall decode_session_close(const json& object) {
  require_keys(object, {"v", "type", "verb", "log", "agent", "session_id"});
  return {bounded_text(object, "agent", k_max_agent_bytes, is_agent_name_byte,
                       "an agent's name (a-z, 0-9, -)"),
          bounded_text(object, "session_id", k_max_session_id_bytes, is_printable_byte,
                       "a printable session id")};
}

Request::Call decode_call(Verb verb, const json& object) {
  switch (verb) {
    case Verb::record:
      return decode_record(object);
    case Verb::audit:
      return decode_audit(object);
    case Verb::status:
      return decode_status_call(object);
    case Verb::session_close:
      return decode_session_close(object);
    case Verb::run:
      break;
  }
  return decode_run(object);
}

std::string log_level_field(const json& object) {
  if (!object.contains("log")) {
    return "";
  }
  std::string level = text_of(object, "log");
  if (level.size() > 16) {
    throw Violation{"log is not a log level"};
  }
  return level;
}

Request decode_request(const json& object) {
  auto verb = parse_verb(text_of(object, "verb"));
  if (!verb) {
    throw Violation{"verb is not one of run, record, audit, status, session_close"};
  }
  return Request{decode_call(*verb, object), log_level_field(object)};
}

Signal decode_signal(const json& object) {
  require_keys(object, {"v", "type", "signal"});
  Signal signal{static_cast<int>(integer_field(object, "signal", 1, 64))};
  if (!is_forwardable_signal(signal.number)) {
    throw Violation{"signal " + std::to_string(signal.number) + " is not forwarded"};
  }
  return signal;
}

std::string type_of(const json& object) {
  return string_field(member(object, "type"), "type");
}

json versioned(const char* type) {
  return json{{"v", k_protocol_version}, {"type", type}};
}

}  // namespace

namespace {

// "node_modules/NAME/package.json (engines.node)" with NAME one npm would publish: a name,
// never a path that climbs.
bool is_dependency_source(std::string_view source) {
  constexpr std::string_view prefix = "node_modules/";
  constexpr std::string_view suffix = "/package.json (engines.node)";
  return source.size() > prefix.size() + suffix.size() && source.starts_with(prefix) &&
         source.ends_with(suffix) &&
         is_npm_package_name(
             source.substr(prefix.size(), source.size() - prefix.size() - suffix.size()));
}

}  // namespace

bool valid_version_ask(const VersionAskField& ask) {
  bool printable =
      std::all_of(ask.range.begin(), ask.range.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
  return printable && !ask.range.empty() && ask.range.size() <= k_max_version_range_bytes &&
         (std::find(k_version_ask_sources.begin(), k_version_ask_sources.end(), ask.source) !=
              k_version_ask_sources.end() ||
          is_dependency_source(ask.source));
}

namespace {

void add_run(json& object, const RunCall& run) {
  object["invoked_as"] = run.invoked_as;
  object["argv"] = run.argv;
  object["env"] = run.env;
  object["agent"] = run.agent;
  object["session_id"] = run.session_id;
  object["tool_use_id"] = run.tool_use_id;
  object["agent_command"] = run.agent_command;
  object["dry_run"] = run.dry_run;
  object["cwd"] = run.cwd;
  object["user_config"] = json::array();
  for (const auto& [path, text] : run.user_config) {
    object["user_config"].push_back({path, text});
  }
  if (run.terminal) {
    object["terminal"] = {{"rows", run.terminal->rows}, {"cols", run.terminal->cols}};
  }
  if (run.version_ask) {
    object["version_ask"] = {{"source", run.version_ask->source},
                             {"range", run.version_ask->range}};
  }
  if (!run.git_identity.empty()) {
    object["git_identity"] = json::array();
    for (const auto& [key, value] : run.git_identity) {
      object["git_identity"].push_back({key, value});
    }
  }
}

json decision_object(const DecisionFields& decision) {
  json object = json::object();
  for (const auto& [key, field] : k_decision_texts) {
    object[key] = decision.*field;
  }
  object["payload_bytes"] = decision.payload_bytes;
  return object;
}

json completion_object(const CompletionFields& completion) {
  json object = json::object();
  for (const auto& [key, field] : k_completion_texts) {
    object[key] = completion.*field;
  }
  if (completion.exit_code) {
    object["exit_code"] = *completion.exit_code;
  }
  return object;
}

void add_record(json& object, const RecordCall& record) {
  if (const auto* decision = std::get_if<DecisionFields>(&record.write)) {
    object["decision"] = decision_object(*decision);
  } else {
    object["completion"] = completion_object(std::get<CompletionFields>(record.write));
  }
}

}  // namespace

std::string encode(const Request& request) {
  json object = versioned("request");
  object["verb"] = verb_name(verb_of(request));
  if (!request.log_level.empty()) {
    object["log"] = request.log_level;
  }
  if (const auto* run = std::get_if<RunCall>(&request.call)) {
    add_run(object, *run);
  } else if (const auto* record = std::get_if<RecordCall>(&request.call)) {
    add_record(object, *record);
  } else if (const auto* audit = std::get_if<AuditCall>(&request.call)) {
    object["args"] = audit->args;
  } else if (const auto* close = std::get_if<SessionCloseCall>(&request.call)) {
    object["agent"] = close->agent;
    object["session_id"] = close->session_id;
  }
  return object.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string encode(const Signal& signal) {
  json object = versioned("signal");
  object["signal"] = signal.number;
  return object.dump();
}

std::string encode(const Exit& exit) {
  json object = versioned("exit");
  object["code"] = exit.code;
  if (exit.signal) {
    object["signal"] = *exit.signal;
  }
  if (exit.git) {
    object["git_workspace"] = exit.git->workspace;
    object["git_id"] = exit.git->git_id;
    object["git_files"] = json::array();
    for (const GitFileHanded& file : exit.git->files) {
      object["git_files"].push_back({file.name, file.host_mark, file.written});
    }
    object["git_left_behind"] = exit.git->left_behind;
  }
  if (exit.created) {
    object["created_workspace"] = exit.created->workspace;
    object["created_run_id"] = exit.created->run_id;
    object["created_names"] = exit.created->names;
    object["created_links"] = json::array();
    for (const auto& [name, text] : exit.created->links) {
      object["created_links"].push_back({name, text});
    }
  }
  return object.dump(-1, ' ', false, json::error_handler_t::replace);
}

size_t written_files(const Exit& exit) {
  return !exit.git ? 0
                   : static_cast<size_t>(
                         std::count_if(exit.git->files.begin(), exit.git->files.end(),
                                       [](const GitFileHanded& file) { return file.written; }));
}

std::variant<ClientMessage, ProtocolError> decode_client_message(std::string_view payload) {
  try {
    json object = parse_object(payload);
    require_version(object);
    std::string type = type_of(object);
    if (type == "request") {
      return std::variant<ClientMessage, ProtocolError>(
          std::in_place_index<0>, std::in_place_index<0>, decode_request(object));
    }
    if (type == "signal") {
      return ClientMessage{std::in_place_type<Signal>, decode_signal(object)};
    }
    return ProtocolError{"type is not request or signal"};
  } catch (const Violation& violation) {
    return ProtocolError{violation.message};
  }
}

namespace {

// One directory entry's name: printable, no separator, not . or ..
bool is_entry_name(const std::string& name) {
  return !name.empty() && name.size() <= 255 && name != "." && name != ".." &&
         name.find('/') == std::string::npos && !has_control_characters(name);
}

bool is_mark(const std::string& text) {
  static const std::regex mark("|[0-9]{1,20}:[0-9]{1,20}:-?[0-9]{1,20}");
  return std::regex_match(text, mark);
}

GitFileHanded git_file_of(const json& entry) {
  if (!entry.is_array() || entry.size() != 3 || !entry[2].is_boolean()) {
    throw Violation{"git_files holds an entry that is not [name, mark, written]"};
  }
  GitFileHanded file{string_field(entry[0], "git_files name"),
                     string_field(entry[1], "git_files mark"), entry[2].get<bool>()};
  if (!is_entry_name(file.name) || !is_mark(file.host_mark)) {
    throw Violation{"git_files holds a name that is not at .git's top, or a bad mark"};
  }
  return file;
}

GitHandback git_handback_of(const json& object) {
  static const std::regex id("[0-9]{1,20}:[0-9]{1,20}");
  GitHandback git{text_of(object, "git_workspace"), text_of(object, "git_id"), {}, {}};
  if (!git.workspace.starts_with('/') || !std::regex_match(git.git_id, id)) {
    throw Violation{"git_workspace is not absolute, or git_id not DEV:INO"};
  }
  const json& files = member(object, "git_files");
  if (!files.is_array() || files.size() > k_max_git_files) {
    throw Violation{"git_files is not a list of at most " + std::to_string(k_max_git_files)};
  }
  for (const auto& entry : files) {
    git.files.push_back(git_file_of(entry));
  }
  git.left_behind = string_list(object, "git_left_behind");
  if (!std::all_of(git.left_behind.begin(), git.left_behind.end(), is_entry_name)) {
    throw Violation{"git_left_behind holds a name that is not at .git's top"};
  }
  return git;
}

// [NAME, TEXT]: a protected link to make again; its text is a link's (at most PATH_MAX - 1).
std::pair<std::string, std::string> link_of(const json& entry) {
  if (!entry.is_array() || entry.size() != 2) {
    throw Violation{"a created_links entry is not [name, text]"};
  }
  std::string name = string_field(entry[0], "created_links");
  std::string text = string_field(entry[1], "created_links");
  if (!is_entry_name(name) || text.empty() || text.size() >= 4096) {
    throw Violation{"a created_links entry is not an entry name and a link's text"};
  }
  return {name, text};
}

CreatedNames created_names_of(const json& object) {
  static const std::regex run_id("[A-Za-z0-9-]{1,64}");
  CreatedNames created{text_of(object, "created_workspace"),
                       text_of(object, "created_run_id"),
                       string_list(object, "created_names"),
                       {}};
  const json& links = member(object, "created_links");
  if (!links.is_array() || links.size() > k_max_created_names) {
    throw Violation{"created_links is not a list of at most " +
                    std::to_string(k_max_created_names) + " links"};
  }
  for (const json& entry : links) {
    created.links.push_back(link_of(entry));
  }
  if (!created.workspace.starts_with('/') || !std::regex_match(created.run_id, run_id) ||
      created.names.size() > k_max_created_names ||
      !std::all_of(created.names.begin(), created.names.end(), is_entry_name)) {
    throw Violation{
        "created_workspace is not absolute, created_run_id not a run id, or "
        "created_names not at most " +
        std::to_string(k_max_created_names) + " entry names"};
  }
  return created;
}

}  // namespace

std::variant<Exit, ProtocolError> decode_exit(std::string_view payload) {
  try {
    json object = parse_object(payload);
    require_version(object);
    require_keys(object, {"v", "type", "code", "signal", "git_workspace", "git_id", "git_files",
                          "git_left_behind", "created_workspace", "created_run_id", "created_names",
                          "created_links"});
    if (type_of(object) != "exit") {
      return ProtocolError{"type is not exit"};
    }
    Exit exit{static_cast<int>(integer_field(object, "code", 0, 255)), std::nullopt, std::nullopt,
              std::nullopt};
    if (object.contains("signal")) {
      exit.signal = static_cast<int>(integer_field(object, "signal", 1, 64));
    }
    if (object.contains("git_workspace")) {
      exit.git = git_handback_of(object);
    }
    if (object.contains("created_workspace")) {
      exit.created = created_names_of(object);
    }
    return exit;
  } catch (const Violation& violation) {
    return ProtocolError{violation.message};
  }
}

namespace {

// The verdict-and-line pairs of a status, in one table: the encoder and the decoder both walk it.
constexpr std::array<
    std::tuple<const char*, const char*, bool BrokerStatus::*, std::string BrokerStatus::*>, 3>
    k_status_parts = {{{"policy_ok", "policy", &BrokerStatus::policy_ok, &BrokerStatus::policy},
                       {"engine_ok", "engine", &BrokerStatus::engine_ok, &BrokerStatus::engine},
                       {"audit_ok", "audit", &BrokerStatus::audit_ok, &BrokerStatus::audit}}};

ImageStatus decode_image(const json& object) {
  if (!object.is_object()) {
    throw Violation{"images holds an entry that is not an object"};
  }
  require_keys(object, {"image", "commands", "present"});
  return {text_of(object, "image"), text_of(object, "commands"), bool_field(object, "present")};
}

std::vector<ImageStatus> images_field(const json& object) {
  const json& list = member(object, "images");
  if (!list.is_array() || list.size() > k_max_list_entries) {
    throw Violation{"images is not a list of at most " + std::to_string(k_max_list_entries) +
                    " images"};
  }
  std::vector<ImageStatus> images;
  for (const auto& entry : list) {
    images.push_back(decode_image(entry));
  }
  return images;
}

}  // namespace

std::string encode(const BrokerStatus& status) {
  json object = versioned("status");
  object["version"] = status.version;
  object["system_config"] = status.system_config;
  for (const auto& [ok_key, line_key, ok, line] : k_status_parts) {
    object[ok_key] = status.*ok;
    object[line_key] = status.*line;
  }
  object["images"] = json::array();
  for (const auto& image : status.images) {
    object["images"].push_back(
        {{"image", image.image}, {"commands", image.commands}, {"present", image.present}});
  }
  object["pool"] = status.pool;
  object["engines_answering"] = status.engines_answering;
  object["engines_total"] = status.engines_total;
  object["engines"] = status.engines;
  return object.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::variant<BrokerStatus, ProtocolError> decode_status(std::string_view payload) {
  try {
    json object = parse_object(payload);
    require_version(object);
    require_keys(object, {"v", "type", "version", "system_config", "policy_ok", "policy",
                          "engine_ok", "engine", "images", "audit_ok", "audit", "pool",
                          "engines_answering", "engines_total", "engines"});
    if (type_of(object) != "status") {
      return ProtocolError{"type is not status"};
    }
    BrokerStatus status;
    status.version = text_of(object, "version");
    status.system_config = text_of(object, "system_config");
    for (const auto& [ok_key, line_key, ok, line] : k_status_parts) {
      status.*ok = bool_field(object, ok_key);
      status.*line = text_of(object, line_key);
    }
    status.images = images_field(object);
    status.pool = text_of(object, "pool");
    status.engines_total = integer_field(object, "engines_total", 0, k_max_list_entries);
    status.engines_answering = integer_field(object, "engines_answering", 0, status.engines_total);
    status.engines = text_of(object, "engines");
    return status;
  } catch (const Violation& violation) {
    return ProtocolError{violation.message};
  }
}

std::string encode(const SessionClosed& closed) {
  json object = versioned("session_closed");
  object["closed"] = closed.closed;
  return object.dump();
}

std::variant<SessionClosed, ProtocolError> decode_session_closed(std::string_view payload) {
  try {
    json object = parse_object(payload);
    require_version(object);
    require_keys(object, {"v", "type", "closed"});
    if (type_of(object) != "session_closed") {
      return ProtocolError{"type is not session_closed"};
    }
    return SessionClosed{integer_field(object, "closed", 0, INT64_MAX)};
  } catch (const Violation& violation) {
    return ProtocolError{violation.message};
  }
}

std::string frame_header(size_t payload_bytes) {
  auto n = static_cast<uint32_t>(payload_bytes);
  return {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
          static_cast<char>(n)};
}

std::optional<size_t> parse_frame_header(const unsigned char header[4]) {
  size_t n = size_t{header[0]} << 24 | size_t{header[1]} << 16 | size_t{header[2]} << 8 |
             size_t{header[3]};
  if (n == 0 || n > k_max_frame_bytes) {
    return std::nullopt;
  }
  return n;
}

bool is_forwardable_signal(int number) {
  return number == SIGINT || number == SIGTERM || number == SIGHUP || number == SIGQUIT;
}

double precise_monotonic_ms() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

Verb verb_of(const Request& request) {
  constexpr Verb k_by_index[] = {Verb::run, Verb::record, Verb::audit, Verb::status,
                                 Verb::session_close};
  return k_by_index[request.call.index()];
}

std::string_view verb_name(Verb verb) {
  for (const auto& [value, name] : k_verbs) {
    if (value == verb) {
      return name;
    }
  }
  return "run";
}

std::optional<Verb> parse_verb(std::string_view name) {
  for (const auto& [value, text] : k_verbs) {
    if (text == name) {
      return value;
    }
  }
  return std::nullopt;
}

}  // namespace sandshim::broker
