#include "audit/fleet_export.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include <fmt/format.h>

#include <bit>
#include <cerrno>
#include <cstring>

#include "audit/encoding.hpp"
#include "audit/time_spec.hpp"
#include "common/escape.hpp"
#include "common/hex.hpp"
#include "common/io.hpp"
#include "common/process.hpp"
#include "common/strings.hpp"
#include "common/unique_fd.hpp"

namespace sandshim::audit {

namespace {

std::string hex16(uint64_t bits) {
  return fmt::format("{:016x}", bits);
}

std::optional<SqlValue> decode_object(const Row& json) {
  if (json.size() != 1 || !json.begin().value().is_string()) {
    return std::nullopt;
  }
  const std::string& key = json.begin().key();
  const std::string& text = json.begin().value().get_ref<const std::string&>();
  if (key == "real") {
    if (text.size() != 16 || !is_lower_hex(text)) {
      return std::nullopt;
    }
    return SqlValue(std::bit_cast<double>(std::stoull(text, nullptr, 16)));
  }
  auto bytes = unescape_text(text);
  if (!bytes || (key != "text" && key != "blob")) {
    return std::nullopt;
  }
  return key == "text" ? SqlValue(std::move(*bytes)) : SqlValue(Blob{std::move(*bytes)});
}

class StreamSink : public RecordSink {
 public:
  explicit StreamSink(std::ostream& out) : m_out(out) {}
  void write_line(const std::string& line) override { m_out << line << '\n'; }
  void flush() override { m_out.flush(); }
  bool good() const override { return m_out.good(); }

 private:
  std::ostream& m_out;
};

class SyslogSink : public RecordSink {
 public:
  SyslogSink() { ::openlog("sandshim-audit", LOG_NDELAY, LOG_USER); }
  SyslogSink(const SyslogSink&) = delete;
  SyslogSink& operator=(const SyslogSink&) = delete;
  ~SyslogSink() override { ::closelog(); }
  void write_line(const std::string& line) override {
    ::syslog(LOG_INFO, "%s", line.c_str());  // JSON: no NUL, no raw control byte
  }
};

class SocketSink : public RecordSink {
 public:
  explicit SocketSink(const std::filesystem::path& path)
      : m_fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path.native().size() >= sizeof address.sun_path) {
      throw Fatal("collector socket " + quoted(path.string()) + ": the path is too long",
                  exit_code::k_usage);
    }
    std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
    if (!m_fd.valid() ||
        ::connect(m_fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
      throw Fatal("collector socket " + quoted(path.string()) + ": connect failed: " +
                      std::strerror(errno) + "; fix: start the collector, or export to a file",
                  exit_code::k_sandbox_error);
    }
  }
  void write_line(const std::string& line) override {
    std::string text = line + '\n';
    for (size_t sent = 0; m_good && sent < text.size();) {
      ssize_t n = retry_on_eintr(
          [&] { return ::send(m_fd.get(), text.data() + sent, text.size() - sent, MSG_NOSIGNAL); });
      m_good = n > 0;
      sent += static_cast<size_t>(std::max<ssize_t>(n, 0));
    }
  }
  bool good() const override { return m_good; }

 private:
  UniqueFd m_fd;
  bool m_good = true;
};

}  // namespace

Row encode_value(const SqlValue& value) {
  if (std::holds_alternative<std::monostate>(value)) {
    return nullptr;
  }
  if (const auto* number = std::get_if<int64_t>(&value)) {
    return *number;
  }
  if (const auto* real = std::get_if<double>(&value)) {
    return Row{{"real", hex16(std::bit_cast<uint64_t>(*real))}};
  }
  if (const auto* text = std::get_if<std::string>(&value)) {
    if (is_valid_utf8(*text)) {
      return *text;
    }
    return Row{{"text", escape_text(*text, k_no_escape_cap)}};
  }
  return Row{{"blob", escape_text(std::get<Blob>(value).bytes, k_no_escape_cap)}};
}

std::optional<SqlValue> decode_value(const Row& json) {
  if (json.is_null()) {
    return SqlValue();
  }
  if (json.is_number_integer()) {
    if (json.is_number_unsigned() && json.get<uint64_t>() > INT64_MAX) {
      return std::nullopt;
    }
    return SqlValue(json.get<int64_t>());
  }
  if (json.is_string()) {
    return SqlValue(json.get<std::string>());
  }
  if (json.is_object()) {
    return decode_object(json);
  }
  return std::nullopt;
}

std::unique_ptr<RecordSink> stream_sink(std::ostream& out) {
  return std::make_unique<StreamSink>(out);
}

std::unique_ptr<RecordSink> syslog_sink() {
  return std::make_unique<SyslogSink>();
}

std::unique_ptr<RecordSink> socket_sink(const std::filesystem::path& path) {
  return std::make_unique<SocketSink>(path);
}

namespace {

// One link read back from the database: its table, position, hash and link columns.
struct ExportedLink {
  const ChainTable* table = nullptr;
  int64_t seq = 0;
  std::string row_hash;
  std::vector<SqlValue> values;  // link_column_names(*table) order
};

// The links of one table in (after, up_to], in chain order.
class TableCursor {
 public:
  TableCursor(Database& db, const ChainTable& table, int64_t after, int64_t up_to)
      : m_table(table),
        m_select(db,
                 "SELECT chain_seq, row_hash, " + join(link_column_names(table), ", ") + " FROM " +
                     std::string(table.table) +
                     " WHERE chain_seq > ? AND chain_seq <= ? ORDER BY chain_seq",
                 "read the links to export") {
    m_select.bind(1, after).bind(2, up_to);
    m_valid = m_select.step();
  }
  bool valid() const { return m_valid; }
  int64_t seq() const { return m_select.column_int(0); }
  ExportedLink take() {
    ExportedLink link{&m_table, seq(), m_select.column_text(1), {}};
    for (int column = 2; column < m_select.column_count(); ++column) {
      link.values.push_back(m_select.column(column));
    }
    m_valid = m_select.step();
    return link;
  }

 private:
  const ChainTable& m_table;
  Statement m_select;
  bool m_valid = false;
};

Row identity(const ExportPlan& plan, const ChainState& state, std::string_view record) {
  return Row{{"record", record}, {"host", plan.host}, {"chain_id", state.chain_id}};
}

Row head_record(const ExportPlan& plan, const ChainState& state) {
  Row head = identity(plan, state, "head");
  head["key_id"] = state.key_id ? Row(*state.key_id) : Row(nullptr);
  head["keyed_from_seq"] = state.keyed_from_seq;
  head["head_seq"] = state.head_seq;
  head["head_hash"] = state.head_hash;
  head["anchor_seq"] = state.anchor_seq;
  head["anchor_hash"] = state.anchor_hash;
  head["anchor_ms"] = state.anchor_ms ? Row(*state.anchor_ms) : Row(nullptr);
  head["state_mac"] = state.state_mac;
  head["time_ms"] = wall_clock_ms();
  return head;
}

std::string hash_at(Database& db, int64_t seq, const ChainState& state) {
  if (seq == state.anchor_seq) {
    return state.anchor_hash;
  }
  Statement select(db,
                   "SELECT row_hash FROM runs WHERE chain_seq = ?1 UNION ALL "
                   "SELECT row_hash FROM decisions WHERE chain_seq = ?1",
                   "read the export's starting link");
  select.bind(1, seq);
  if (seq < state.anchor_seq || seq > state.head_seq || !select.step()) {
    throw Fatal("--after " + std::to_string(seq) + ": the chain holds positions " +
                    std::to_string(state.anchor_seq + 1) + " to " + std::to_string(state.head_seq),
                exit_code::k_usage);
  }
  return select.column_text(0);
}

Row begin_record(Database& db, const ExportPlan& plan, const ChainState& state, int64_t after) {
  Row begin = identity(plan, state, "begin");
  begin["after_seq"] = after;
  begin["after_hash"] = hash_at(db, after, state);
  begin["time_ms"] = wall_clock_ms();
  return begin;
}

Row row_record(const ExportPlan& plan, const ChainState& state, const ExportedLink& link) {
  Row row = identity(plan, state, "row");
  row["kind"] = link.table->kind;
  row["seq"] = link.seq;
  row["row_hash"] = link.row_hash;
  Row columns = Row::object();
  std::vector<std::string> names = link_column_names(*link.table);
  for (size_t i = 0; i < names.size(); ++i) {
    columns[names[i]] = encode_value(link.values[i]);
  }
  row["columns"] = std::move(columns);
  return row;
}

// --- OCSF: Process Activity (1007) for runs, API Activity (6003) for hook decisions ---

std::string text_of(const Row& columns, const char* name) {
  const Row& value = columns[name];
  if (value.is_string()) {
    return value.get<std::string>();
  }
  return value.is_object() ? value.begin().value().get<std::string>() : "";
}

// OCSF's uid and status_code are strings: an integer column as its decimal text, null as "".
std::string number_text(const Row& columns, const char* name) {
  const Row& value = columns[name];
  return value.is_number_integer() ? std::to_string(value.get<int64_t>()) : "";
}

std::string command_line(const Row& columns) {
  Row argv = Row::parse(text_of(columns, "argv"), nullptr, false);
  std::vector<std::string> words;
  if (argv.is_array()) {
    for (const auto& word : argv) {
      words.push_back(word.is_string() ? word.get<std::string>() : "");
    }
  }
  return shell_join(words);
}

// An OCSF event class and activity: the numbers and their names.
struct OcsfClass {
  int class_uid;
  const char* class_name;
  int category_uid;
  const char* category_name;
  int activity_id;
  const char* activity_name;
};

constexpr OcsfClass k_process_launch{1007, "Process Activity", 1, "System Activity", 1, "Launch"};
constexpr OcsfClass k_hook_decision{6003, "API Activity", 6, "Application Activity",
                                    99,   "Hook decision"};

Row ocsf_base(const ExportPlan& plan, const ChainState& state, const ExportedLink& link,
              const OcsfClass& ocsf, const std::string& uid) {
  return Row{{"class_uid", ocsf.class_uid},
             {"class_name", ocsf.class_name},
             {"category_uid", ocsf.category_uid},
             {"category_name", ocsf.category_name},
             {"activity_id", ocsf.activity_id},
             {"activity_name", ocsf.activity_name},
             {"type_uid", ocsf.class_uid * 100 + ocsf.activity_id},
             {"severity_id", 1},
             {"metadata",
              {{"version", "1.3.0"},
               {"product", {{"name", "sandshim"}, {"vendor_name", "sandshim"}}},
               {"uid", uid},
               {"log_name", link.table->table},
               {"sequence", link.seq}}},
             {"device", {{"hostname", plan.host}}},
             {"unmapped",
              {{"host", plan.host},
               {"chain_id", state.chain_id},
               {"chain_seq", link.seq},
               {"row_hash", link.row_hash}}}};
}

int status_id_of(const std::string& status) {
  return status == "ok" ? 1 : 2;  // Success, Failure
}

// Who started the run: the user, the agent's process and session that called the shim.
Row ocsf_run_actor(const Row& columns) {
  return {{"user", {{"uid", number_text(columns, "uid")}}},
          {"process", {{"pid", columns["pid"]}, {"name", text_of(columns, "parent_name")}}},
          {"app_name", text_of(columns, "agent")},
          {"session", {{"uid", text_of(columns, "agent_session")}}}};
}

// What ran: the command and the container it ran in.
Row ocsf_run_process(const Row& columns) {
  return {{"cmd_line", command_line(columns)},
          {"name", text_of(columns, "invoked_as")},
          {"working_directory", text_of(columns, "cwd")},
          {"user", {{"uid", number_text(columns, "uid")}}},
          {"container",
           {{"name", text_of(columns, "container_name")},
            {"runtime", text_of(columns, "engine")},
            {"image",
             {{"name", text_of(columns, "image")}, {"uid", text_of(columns, "image_digest")}}}}}};
}

Row ocsf_run(const ExportPlan& plan, const ChainState& state, const ExportedLink& link,
             const Row& columns) {
  Row event = ocsf_base(plan, state, link, k_process_launch, text_of(columns, "run_id"));
  std::string status = text_of(columns, "status");
  event["time"] = columns["start_ms"];
  event["start_time"] = columns["start_ms"];
  event["end_time"] = columns["end_ms"];
  event["duration"] = columns["duration_ms"];
  event["status"] = status;
  event["status_id"] = status_id_of(status);
  event["status_code"] = number_text(columns, "exit_code");
  event["status_detail"] = text_of(columns, "message");
  event["exit_code"] = columns["exit_code"];
  event["actor"] = ocsf_run_actor(columns);
  event["process"] = ocsf_run_process(columns);
  event["unmapped"]["run_id"] = text_of(columns, "run_id");
  event["unmapped"]["tool_use_id"] = text_of(columns, "tool_use_id");
  event["unmapped"]["limits"] = text_of(columns, "limits");
  event["unmapped"]["policy_digest"] = text_of(columns, "policy_digest");
  return event;
}

int disposition_id_of(const std::string& decision) {
  if (decision == "allow") {
    return 1;  // Allowed
  }
  return decision == "deny" ? 2 : 99;  // Blocked; a rewrite is Other
}

Row ocsf_decision(const ExportPlan& plan, const ChainState& state, const ExportedLink& link,
                  const Row& columns) {
  Row event = ocsf_base(plan, state, link, k_hook_decision, text_of(columns, "decision_id"));
  std::string decision = text_of(columns, "decision");
  event["time"] = columns["time_ms"];
  event["status"] = decision;
  event["status_id"] = decision == "deny" ? 2 : 1;
  event["status_detail"] = text_of(columns, "reason");
  event["disposition"] = decision;
  event["disposition_id"] = disposition_id_of(decision);
  event["actor"] = {{"user", {{"uid", number_text(columns, "uid")}}},
                    {"app_name", text_of(columns, "agent")},
                    {"session", {{"uid", text_of(columns, "session_id")}}}};
  event["api"] = {{"operation", text_of(columns, "event")},
                  {"request", {{"uid", text_of(columns, "tool_use_id")}}}};
  event["src_endpoint"] = {{"hostname", plan.host}};
  event["unmapped"]["original_command"] = text_of(columns, "original_command");
  event["unmapped"]["rewritten_command"] = text_of(columns, "rewritten_command");
  event["unmapped"]["rule"] = text_of(columns, "rule");
  return event;
}

Row ocsf_record(const ExportPlan& plan, const ChainState& state, const ExportedLink& link) {
  Row columns = row_record(plan, state, link)["columns"];
  return link.table == &k_run_chain ? ocsf_run(plan, state, link, columns)
                                    : ocsf_decision(plan, state, link, columns);
}

void write_links(Database& db, const ExportPlan& plan, const ChainState& state, int64_t after,
                 RecordSink& sink) {
  TableCursor runs(db, k_run_chain, after, state.head_seq);
  TableCursor decisions(db, k_decision_chain, after, state.head_seq);
  while (runs.valid() || decisions.valid()) {
    bool take_run = runs.valid() && (!decisions.valid() || runs.seq() <= decisions.seq());
    ExportedLink link = take_run ? runs.take() : decisions.take();
    Row record = plan.format == ExportFormat::ocsf ? ocsf_record(plan, state, link)
                                                   : row_record(plan, state, link);
    sink.write_line(to_json_text(record));
  }
}

}  // namespace

int64_t export_pass(Database& db, const ExportPlan& plan, int64_t exported, RecordSink& sink) {
  Transaction snapshot(db, Transaction::Mode::deferred);
  auto state = read_chain_state(db);
  if (!state) {
    throw Fatal("audit database " + quoted(db.path().string()) +
                    ": the chain_state row is missing; fix: run `sandshim audit verify`",
                exit_code::k_sandbox_error);
  }
  bool fleet = plan.format == ExportFormat::fleet;
  if (exported < 0) {
    exported = plan.after_seq < 0 ? state->anchor_seq : plan.after_seq;
    if (fleet) {
      sink.write_line(to_json_text(begin_record(db, plan, *state, exported)));
    }
  } else if (state->head_seq <= exported) {
    return exported;
  }
  if (fleet) {
    sink.write_line(to_json_text(head_record(plan, *state)));
  }
  write_links(db, plan, *state, exported, sink);
  sink.flush();
  return state->head_seq;
}

}  // namespace sandshim::audit
