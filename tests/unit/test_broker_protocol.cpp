#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "broker/protocol.hpp"
#include "broker/serve.hpp"
#include "broker/session.hpp"
#include "broker/unix_socket.hpp"
#include "broker/workspace_config.hpp"
#include "broker/workspace_identity.hpp"
#include "common/error.hpp"
#include "run/interpreter_fit.hpp"
#include "test_shim_support.hpp"

using namespace sandshim::broker;
using sandshim::UniqueFd;
using sandshim::test::ScratchDir;
namespace fs = std::filesystem;

namespace {

RunCall sample_run() {
  RunCall run;
  run.invoked_as = "python";
  run.argv = {"python", "-c", "print(1)"};
  run.env = {"LANG=C.UTF-8", "EMPTY="};
  run.agent = "claude-code";
  run.session_id = "s-1";
  run.tool_use_id = "toolu_1";
  run.agent_command = "python3 -c 'print(1)'";
  run.dry_run = true;
  run.cwd = "/srv/project/src";
  run.user_config = {{"/home/a/.config/sandshim/config", "[sandbox]\nmemory = 256m\n"}};
  run.terminal = TerminalSize{24, 80};
  run.version_ask = VersionAskField{"package.json (engines.node)", ">=20"};
  return run;
}

Request sample_request() {
  return Request{sample_run(), "debug"};
}

DecisionFields sample_decision() {
  return {"claude-code",
          "PreToolUse",
          "s-1",
          "toolu_1",
          "/srv/p",
          "python x.py",
          "sandshim run -- python x.py",
          "rewrite",
          "updatedInput",
          "default",
          "sandshim: why",
          "rewrite-shimmed",
          512};
}

template <typename Call>
Call read_back(const Request& request) {
  auto decoded = decode_client_message(encode(request));
  REQUIRE(std::holds_alternative<ClientMessage>(decoded));
  const auto& again = std::get<Request>(std::get<ClientMessage>(decoded));
  CHECK(again.log_level == request.log_level);
  REQUIRE(std::holds_alternative<Call>(again.call));
  return std::get<Call>(again.call);
}

// A run request with one key's JSON replaced (or added): what a hostile client might send.
std::string run_with(const std::string& key, const std::string& json_value) {
  std::string payload = encode(sample_request());
  std::string needle = "\"" + key + "\":";
  size_t at = payload.find(needle);
  if (at == std::string::npos) {
    return payload.substr(0, payload.size() - 1) + "," + needle + json_value + "}";
  }
  size_t start = at + needle.size();
  size_t depth = 0;
  size_t end = start;
  bool in_string = false;
  for (; end < payload.size(); ++end) {
    char c = payload[end];
    if (in_string) {
      in_string = !(c == '"' && payload[end - 1] != '\\');
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if ((c == ']' || c == '}') && depth-- == 0) {
      break;
    } else if (c == ',' && depth == 0) {
      break;
    }
  }
  return payload.substr(0, start) + json_value + payload.substr(end);
}

std::string error_of(std::string_view payload) {
  auto decoded = decode_client_message(payload);
  const auto* error = std::get_if<ProtocolError>(&decoded);
  return error == nullptr ? "" : error->message;
}

struct SocketPair {
  UniqueFd a;
  UniqueFd b;
  SocketPair() {
    int fds[2] = {-1, -1};
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
    a.reset(fds[0]);
    b.reset(fds[1]);
  }
};

}  // namespace

TEST_CASE("a run request reads back as it was sent, every field", "[broker]") {
  RunCall run = read_back<RunCall>(sample_request());
  CHECK(run.invoked_as == "python");
  CHECK(run.argv == std::vector<std::string>{"python", "-c", "print(1)"});
  CHECK(run.env == std::vector<std::string>{"LANG=C.UTF-8", "EMPTY="});
  CHECK(run.agent == "claude-code");
  CHECK(run.session_id == "s-1");
  CHECK(run.tool_use_id == "toolu_1");
  CHECK(run.agent_command == "python3 -c 'print(1)'");
  CHECK(run.dry_run);
  CHECK(run.cwd == "/srv/project/src");
  REQUIRE(run.user_config.size() == 1);
  CHECK(run.user_config[0].first == "/home/a/.config/sandshim/config");
  CHECK(run.user_config[0].second == "[sandbox]\nmemory = 256m\n");
  REQUIRE(run.terminal);
  CHECK(run.terminal->rows == 24);
  CHECK(run.terminal->cols == 80);
  RunCall plain = sample_run();
  plain.terminal.reset();
  CHECK_FALSE(read_back<RunCall>(Request{plain, ""}).terminal);
  REQUIRE(run.version_ask);
  CHECK(run.version_ask->source == "package.json (engines.node)");
  CHECK(run.version_ask->range == ">=20");
  plain.version_ask.reset();
  CHECK_FALSE(read_back<RunCall>(Request{plain, ""}).version_ask);
}

TEST_CASE("record and audit requests read back as they were sent", "[broker]") {
  DecisionFields sent = sample_decision();
  auto decision =
      std::get<DecisionFields>(read_back<RecordCall>(Request{RecordCall{sent}, ""}).write);
  CHECK(decision.agent == sent.agent);
  CHECK(decision.event == sent.event);
  CHECK(decision.session_id == sent.session_id);
  CHECK(decision.tool_use_id == sent.tool_use_id);
  CHECK(decision.cwd == sent.cwd);
  CHECK(decision.original_command == sent.original_command);
  CHECK(decision.rewritten_command == sent.rewritten_command);
  CHECK(decision.decision == "rewrite");
  CHECK(decision.answer == sent.answer);
  CHECK(decision.permission_mode == sent.permission_mode);
  CHECK(decision.reason == sent.reason);
  CHECK(decision.rule == sent.rule);
  CHECK(decision.payload_bytes == 512);

  CompletionFields done{"toolu_1", "s-1", "ran", 3, "tail\n"};
  auto completion =
      std::get<CompletionFields>(read_back<RecordCall>(Request{RecordCall{done}, ""}).write);
  CHECK(completion.tool_use_id == "toolu_1");
  CHECK(completion.session_id == "s-1");
  CHECK(completion.outcome == "ran");
  CHECK(completion.exit_code == 3);
  CHECK(completion.tool_response_tail == "tail\n");
  done.exit_code.reset();
  CHECK_FALSE(std::get<CompletionFields>(read_back<RecordCall>(Request{RecordCall{done}, ""}).write)
                  .exit_code);

  CHECK(read_back<AuditCall>(Request{AuditCall{{"list", "--json"}}, ""}).args ==
        std::vector<std::string>{"list", "--json"});
}

TEST_CASE("a session_close request carries an agent's name and a session id, typed and capped",
          "[broker]") {
  auto back = read_back<SessionCloseCall>(Request{SessionCloseCall{"claude-code", "abc-123"}, ""});
  CHECK(back.agent == "claude-code");
  CHECK(back.session_id == "abc-123");
  CHECK(verb_of(Request{SessionCloseCall{}, ""}) == Verb::session_close);
  std::string close = R"({"v":7,"type":"request","verb":"session_close",)";
  auto with = [&](const std::string& agent, const std::string& session_id) {
    return error_of(close + R"("agent":)" + agent + R"(,"session_id":)" + session_id + "}");
  };
  CHECK(with(R"("codex")", R"("s")").empty());
  CHECK(with("1", R"("s")") == "agent is not a string");
  CHECK(with(R"("codex")", "[]") == "session_id is not a string");
  CHECK(with(R"("codex")", "null") == "session_id is not a string");
  CHECK(error_of(close + R"("agent":"codex"})") == "missing key \"session_id\"");
  for (const char* key : {"uid", "tool_use_id", "outcome", "db"}) {
    CHECK(error_of(close + R"("agent":"codex","session_id":"s",")" + key + R"(":"x"})") ==
          "unknown key \"" + std::string(key) + "\"");
  }
  std::string bad_agent = "agent is not an agent's name (a-z, 0-9, -) of 1 to 64 bytes";
  for (std::string agent : {"", "Claude", "claude code", "../x", "claude\\u00e9"}) {
    CHECK(with("\"" + agent + "\"", R"("s")") == bad_agent);
  }
  CHECK(with("\"" + std::string(64, 'a') + "\"", R"("s")").empty());
  CHECK(with("\"" + std::string(65, 'a') + "\"", R"("s")") == bad_agent);
  std::string bad_session = "session_id is not a printable session id of 1 to 256 bytes";
  CHECK(with(R"("codex")", "\"" + std::string(256, 's') + "\"").empty());
  CHECK(with(R"("codex")", "\"" + std::string(257, 's') + "\"") == bad_session);
  CHECK(with(R"("codex")", "\"" + std::string(k_max_string_bytes + 1, 's') + "\"") ==
        "session_id is too long or holds a NUL byte");
  CHECK(with(R"("codex")", R"("a\u0000")") == "session_id is too long or holds a NUL byte");
  for (std::string session : {"", "a\\nb", "a\\u0001", "a\\u007f"}) {
    CHECK(with(R"("codex")", "\"" + session + "\"") == bad_session);
  }
}

TEST_CASE("session_close answers how many rows it closed, strictly", "[broker]") {
  auto closed = decode_session_closed(encode(SessionClosed{4}));
  REQUIRE(std::holds_alternative<SessionClosed>(closed));
  CHECK(std::get<SessionClosed>(closed).closed == 4);
  auto error = [](std::string_view payload) {
    auto decoded = decode_session_closed(payload);
    return std::holds_alternative<ProtocolError>(decoded) ? std::get<ProtocolError>(decoded).message
                                                          : "";
  };
  CHECK(error(R"({"v":7,"type":"session_closed","closed":-1})") ==
        "closed is not an integer from 0 to 9223372036854775807");
  CHECK(error(R"({"v":7,"type":"session_closed","closed":"1"})") ==
        "closed is not an integer from 0 to 9223372036854775807");
  CHECK(error(R"({"v":7,"type":"session_closed","closed":1,"uid":0})") == "unknown key \"uid\"");
  CHECK(error(R"({"v":7,"type":"status","closed":1})") == "type is not session_closed");
  CHECK(error(R"({"v":2,"type":"session_closed","closed":1})").starts_with("protocol version 2"));
  CHECK(error("") == "not a JSON object");
}

TEST_CASE("a status request has no field: nothing the caller sends names a path", "[broker]") {
  read_back<StatusCall>(Request{StatusCall{}, "debug"});
  CHECK(verb_of(Request{StatusCall{}, ""}) == Verb::status);
  std::string status = R"({"v":7,"type":"request","verb":"status")";
  for (const char* key : {"db", "args", "cwd", "env", "path", "system_config", "uid"}) {
    CHECK(error_of(status + ",\"" + key + "\":\"/x\"}") ==
          std::string("unknown key \"") + key + "\"");
  }
}

namespace {

BrokerStatus sample_status() {
  BrokerStatus status;
  status.version = "0.9.0";
  status.system_config = "/etc/sandshim/config";
  status.policy_ok = true;
  status.policy = "loads";
  status.engine_ok = true;
  status.engine = "docker 20.10.24, rootful, cgroup v1";
  status.images = {{"sandshim/python:3.11", "python, python3", true},
                   {"sandshim/node:20", "node", false}};
  status.audit_ok = false;
  status.audit = "FAILED (replaced): x";
  status.pool = "off";
  status.engines_answering = 1;
  status.engines_total = 2;
  status.engines = "1 of 2 answer (no engine.max_runs): a 0 in flight; b does not answer: x";
  return status;
}

std::string status_error(std::string_view payload) {
  auto decoded = decode_status(payload);
  const auto* error = std::get_if<ProtocolError>(&decoded);
  return error == nullptr ? "" : error->message;
}

}  // namespace

TEST_CASE("the broker's status reads back as it was sent, and strictly", "[broker]") {
  BrokerStatus sent = sample_status();
  auto decoded = decode_status(encode(sent));
  REQUIRE(std::holds_alternative<BrokerStatus>(decoded));
  const auto& got = std::get<BrokerStatus>(decoded);
  CHECK(got.version == sent.version);
  CHECK(got.system_config == sent.system_config);
  CHECK(got.policy_ok);
  CHECK(got.engine == sent.engine);
  REQUIRE(got.images.size() == 2);
  CHECK(got.images[0].image == "sandshim/python:3.11");
  CHECK(got.images[0].commands == "python, python3");
  CHECK(got.images[0].present);
  CHECK_FALSE(got.images[1].present);
  CHECK_FALSE(got.audit_ok);
  CHECK(got.audit == sent.audit);
  CHECK(got.pool == "off");
  CHECK(got.engines_answering == 1);
  CHECK(got.engines_total == 2);
  CHECK(got.engines == sent.engines);
  CHECK(encode(got) == encode(sent));

  std::string text = encode(sent);
  CHECK(status_error(text.substr(0, text.size() - 1) + R"(,"uid":0})") == "unknown key \"uid\"");
  CHECK(status_error(R"({"v":7,"type":"exit"})") == "type is not status");
  std::string wrong = text;
  wrong.replace(wrong.find("\"engine_ok\":true"), 16, "\"engine_ok\":1   ");
  CHECK(status_error(wrong) == "engine_ok is not true or false");
  std::string more = text;
  more.replace(more.find("\"engines_answering\":1"), 21, R"("engines_answering":3)");
  CHECK(status_error(more) == "engines_answering is not an integer from 0 to 2");
}

TEST_CASE("signals and exits read back; only the run loop's signals are forwarded", "[broker]") {
  auto signal = decode_client_message(encode(Signal{2}));
  REQUIRE(std::holds_alternative<ClientMessage>(signal));
  CHECK(std::get<Signal>(std::get<ClientMessage>(signal)).number == 2);
  CHECK(error_of(R"({"v":7,"type":"signal","signal":9})") == "signal 9 is not forwarded");
  auto exit = decode_exit(encode(Exit{130, 2, std::nullopt, std::nullopt}));
  REQUIRE(std::holds_alternative<Exit>(exit));
  CHECK(std::get<Exit>(exit).code == 130);
  CHECK(std::get<Exit>(exit).signal == 2);
  CHECK(std::holds_alternative<ProtocolError>(decode_exit(R"({"v":7,"type":"exit","code":300})")));
}

TEST_CASE("a frame that breaks a rule is refused, naming the rule", "[broker]") {
  CHECK(error_of("[1]") == "not a JSON object");
  CHECK(error_of("{") == "not a JSON object");
  CHECK(error_of(R"({"v":6,"type":"signal","signal":2})") ==
        "protocol version 6 is not 7 (the client and the broker are different sandshim versions: "
        "restart the broker after an upgrade)");
  CHECK(error_of(R"({"type":"signal","signal":2})") == "protocol version is missing");
  CHECK(error_of(R"({"v":7,"type":"signal","signal":2,"uid":0})") == "unknown key \"uid\"");
  CHECK(error_of(R"({"v":7,"type":"hello"})") == "type is not request or signal");
  CHECK(error_of(R"({"v":7,"type":"request","verb":"hook","argv":[]})") ==
        "verb is not one of run, record, audit, status, session_close");
  CHECK(error_of(R"({"v":7,"type":"request","verb":"shim","argv":[]})") ==
        "verb is not one of run, record, audit, status, session_close");
  CHECK(error_of(run_with("uid", "0")) == "unknown key \"uid\"");
  CHECK(error_of(run_with("environ", "[]")) == "unknown key \"environ\"");
  CHECK(error_of(run_with("invoked_as", R"("../x")")) == "invoked_as is not a plain command name");
  CHECK(error_of(run_with("invoked_as", R"("")")) == "invoked_as is not a plain command name");
  CHECK(error_of(run_with("argv", R"(["a\u0000b"])")) == "argv is too long or holds a NUL byte");
  CHECK(error_of(run_with("argv", "[]")) == "a run request has an empty argv");
  CHECK(error_of(run_with("argv", R"([[["x"]]])")) == "nested deeper than 3 levels");
  CHECK(error_of(run_with("env", R"(["=x"])")) == "env holds an entry without NAME=");
  CHECK(error_of(run_with("env", R"(["NOEQUALS"])")) == "env holds an entry without NAME=");
  CHECK(error_of(run_with("dry_run", "1")) == "dry_run is not true or false");
  CHECK(error_of(run_with("agent", "7")) == "agent is not a string");
  CHECK(error_of(run_with("cwd", R"("relative")")) == "cwd is not an absolute path");
  CHECK(error_of(run_with("terminal", R"({"rows":1,"cols":70000})")) ==
        "cols is not an integer from 0 to 65535");
  CHECK(error_of(run_with("user_config", R"([["rel", "x"]])")) ==
        "user_config path is not absolute");
  CHECK(error_of(run_with("user_config",
                          R"([["/a","x"],["/b","x"],["/c","x"],["/d","x"],["/e","x"]])")) ==
        "user_config is not a list of at most 4 [path, text] pairs");
  CHECK(error_of(run_with("log", R"("debugdebugdebugdebug")")) == "log is not a log level");
  // The ask names one of sandshim's files, never a path, and a short printable range.
  std::string not_an_ask =
      "version_ask is not one of sandshim's files with a printable range of at most 256 bytes";
  CHECK(error_of(run_with("version_ask", R"({"source":"/etc/shadow","range":">=1"})")) ==
        not_an_ask);
  CHECK(error_of(run_with("version_ask", R"({"source":".nvmrc","range":"20\n"})")) == not_an_ask);
  CHECK(error_of(run_with("version_ask", R"({"source":".nvmrc","range":""})")) == not_an_ask);
  CHECK(error_of(run_with("version_ask", "\"" + std::string(300, '1') + "\"")) ==
        "version_ask is not an object");
  CHECK(error_of(run_with("version_ask", R"({"source":".nvmrc","range":"20","path":"/x"})")) ==
        "unknown key \"path\"");
  std::string huge(k_max_string_bytes + 1, 'x');
  CHECK(error_of(run_with("session_id", "\"" + huge + "\"")) ==
        "session_id is too long or holds a NUL byte");
  std::string many = "[";
  for (size_t i = 0; i <= k_max_list_entries; ++i) {
    many += std::string(i == 0 ? "" : ",") + "\"A=1\"";
  }
  CHECK(error_of(run_with("env", many + "]")) == "env is not a list of at most 4096 strings");

  std::string record = R"({"v":7,"type":"request","verb":"record",)";
  CHECK(error_of(record + R"("argv":[]})") == "unknown key \"argv\"");
  CHECK(error_of(record + R"("log":""})") ==
        "a record request holds exactly one of decision and completion");
  std::string decision = encode(Request{RecordCall{sample_decision()}, ""});
  std::string both = decision.substr(0, decision.size() - 1) + R"(,"completion":{}})";
  CHECK(error_of(both) == "a record request holds exactly one of decision and completion");
  std::string with_uid = decision;
  with_uid.replace(with_uid.find("\"agent\""), 0, R"("uid":0,)");
  CHECK(error_of(with_uid) == "unknown key \"uid\"");
  std::string with_id = decision;
  with_id.replace(with_id.find("\"agent\""), 0, R"("decision_id":"x",)");
  CHECK(error_of(with_id) == "unknown key \"decision_id\"");
  DecisionFields bad = sample_decision();
  bad.decision = "maybe";
  CHECK(error_of(encode(Request{RecordCall{bad}, ""})) ==
        "decision is not one of allow, deny, ask, rewrite");
  CHECK(
      error_of(
          record +
          R"("completion":{"tool_use_id":"","session_id":"","outcome":"ran","tool_response_tail":""}})") ==
      "tool_use_id is empty");
  CHECK(
      error_of(
          record +
          R"("completion":{"tool_use_id":"","session_id":"s","outcome":"turn-end","tool_response_tail":""}})") ==
      "outcome is not one of ran, not-run");
  CHECK(
      error_of(
          record +
          R"("completion":{"tool_use_id":"t","session_id":"","outcome":"won","tool_response_tail":""}})") ==
      "outcome is not one of ran, not-run");
  CHECK(
      error_of(
          record +
          R"("completion":{"tool_use_id":"t","session_id":"","outcome":"ran","tool_response_tail":"","time_ms":1}})") ==
      "unknown key \"time_ms\"");
  CHECK(error_of(record + R"("completion":{"tool_use_id":"t","session_id":"","outcome":"ran"}})") ==
        "missing key \"tool_response_tail\"");
  CHECK(error_of(record + R"("decision":"x"})") == "decision is not an object");

  CHECK(error_of(R"({"v":7,"type":"request","verb":"audit","args":["list"],"env":[]})") ==
        "unknown key \"env\"");
  CHECK(error_of(R"({"v":7,"type":"request","verb":"audit"})") == "missing key \"args\"");
  CHECK(error_of(R"({"v":7,"type":"request","verb":"status","args":["verify"]})") ==
        "unknown key \"args\"");
}

TEST_CASE("every source the protocol carries is a file sandshim reads, with its grammar",
          "[broker]") {
  for (std::string_view source : k_version_ask_sources) {
    auto ask = sandshim::shim::claimed_version_ask(source, "1");
    REQUIRE(ask);
    CHECK(ask->pep440 == (source.find("python") != std::string_view::npos));
  }
}

TEST_CASE("an installed dependency's engines.node is a source by npm's name, never a path",
          "[broker]") {
  CHECK(valid_version_ask({"node_modules/undici/package.json (engines.node)", ">=20.18.1"}));
  CHECK(valid_version_ask({"node_modules/@fastify/x/package.json (engines.node)", ">=20"}));
  for (const char* source :
       {"node_modules/../../etc/package.json (engines.node)",
        "node_modules//package.json (engines.node)", "node_modules/a/b/package.json (engines.node)",
        "node_modules/A/package.json (engines.node)",
        "node_modules/a\x1b[31m/package.json (engines.node)", "node_modules/a/package.json"}) {
    CHECK_FALSE(valid_version_ask({source, ">=20"}));
  }
}

TEST_CASE("the frame length is bounded both ways", "[broker]") {
  const unsigned char zero[4] = {0, 0, 0, 0};
  const unsigned char huge[4] = {0x7f, 0, 0, 0};
  const unsigned char one[4] = {0, 0, 0, 1};
  CHECK_FALSE(parse_frame_header(zero));
  CHECK_FALSE(parse_frame_header(huge));
  CHECK(parse_frame_header(one) == 1u);
  std::string header = frame_header(k_max_frame_bytes);
  CHECK(parse_frame_header(reinterpret_cast<const unsigned char*>(header.data())) ==
        k_max_frame_bytes);
}

TEST_CASE("a frame carries its descriptors; unexpected ones break it", "[broker]") {
  SocketPair pair;
  UniqueFd null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  REQUIRE(send_frame(pair.a.get(), encode(sample_request()),
                     {null_fd.get(), null_fd.get(), null_fd.get(), null_fd.get()}));
  ReadResult received = read_frame(pair.b.get(), 1000, k_request_fds);
  REQUIRE(received.status == ReadStatus::ok);
  CHECK(received.frame.fds.size() == 4);
  CHECK(received.frame.payload == encode(sample_request()));

  REQUIRE(send_frame(pair.a.get(), encode(Signal{15}), {null_fd.get()}));
  CHECK(read_frame(pair.b.get(), 1000, 0).status == ReadStatus::broken);
}

TEST_CASE("a peer that closes or stays silent ends the read", "[broker]") {
  SocketPair pair;
  CHECK(read_frame(pair.b.get(), 50, 0).status == ReadStatus::timed_out);
  std::string partial = frame_header(10) + "{";
  REQUIRE(::write(pair.a.get(), partial.data(), partial.size()) ==
          static_cast<ssize_t>(partial.size()));
  pair.a.reset();
  CHECK(read_frame(pair.b.get(), 1000, 0).status == ReadStatus::closed);
}

TEST_CASE("the peer's identity is the kernel's", "[broker]") {
  SocketPair pair;
  PeerCredentials peer = peer_credentials(pair.b.get());
  CHECK(peer.uid == ::getuid());
  CHECK(peer.gid == ::getgid());
  CHECK(peer.pid == ::getpid());
}

TEST_CASE("a run's request holds the typed fields and only allowlisted variables", "[broker]") {
  RunCall call = sample_run();
  call.env = {"LANG=C",
              "PYTHONPATH=src",
              "SANDSHIM_CONFIG=/tmp/evil",
              "SANDSHIM_AUDIT_DB=/x.db",
              "DOCKER_HOST=tcp://x",
              "LD_PRELOAD=/x.so",
              "PATH=/evil",
              "HOME=/evil",
              "XDG_CONFIG_HOME=/evil",
              "GITHUB_TOKEN=t",
              "SANDSHIM_AGENT=codex",
              "MY_VAR=1"};
  CallerFacts facts;
  facts.home = "/home/alice";
  facts.cwd = "/srv/project/src";
  facts.workspace_texts = {{"/srv/project/.sandshim.conf", "[sandbox]\npids = 8\n"}};
  sandshim::shim::Policy floor;
  sandshim::shim::RunRequest request = run_request_of(call, facts, floor);
  CHECK(request.environment == std::vector<std::string>{"LANG=C", "PYTHONPATH=src"});
  CHECK(request.invoked_as == "python");
  CHECK(request.command == call.argv);
  CHECK(request.dry_run);
  CHECK(request.caller.agent == "claude-code");
  CHECK(request.caller.agent_session == "s-1");
  CHECK(request.caller.tool_use_id == "toolu_1");
  CHECK(request.cwd == "/srv/project/src");
  CHECK(request.home == "/home/alice");
  REQUIRE(request.broker);
  CHECK(request.broker->user_texts == call.user_config);
  CHECK(request.broker->workspace_texts == facts.workspace_texts);
  // The project's ask is data with the grammar its source says.
  REQUIRE(request.version_ask);
  CHECK(request.version_ask->range == ">=20");
  CHECK_FALSE(request.version_ask->pep440);
  call.version_ask = VersionAskField{"pyproject.toml (requires-python)", ">=3.12"};
  CHECK(run_request_of(call, facts, floor).version_ask->pep440);
  // The floor's allowlist decides, not the caller's: a name the system file allows passes.
  floor.env_allow = {"MY_VAR"};
  CHECK(run_request_of(call, facts, floor).environment ==
        std::vector<std::string>{"LANG=C", "PYTHONPATH=src", "MY_VAR=1"});
}

TEST_CASE("system directories and engine-socket holders are never a workspace", "[broker]") {
  CHECK(is_system_directory("/run"));
  CHECK(is_system_directory("/var/run/docker"));
  CHECK(is_system_directory("/proc/self"));
  CHECK_FALSE(is_system_directory("/srv/project"));
  UniqueFd run(::open("/run", O_PATH | O_DIRECTORY | O_CLOEXEC));
  CHECK_THROWS_WITH(admit_cwd(run.get(), "/run", "/home/x", {}),
                    Catch::Contains("system directories (/run, /var/run, /proc, /sys, /dev)"));
  ScratchDir dir;
  fs::create_directories(dir.path() / "ws");
  UniqueFd ws(::open((dir.path() / "ws").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  CHECK_THROWS_WITH(admit_cwd(ws.get(), dir.path() / "ws", "/home/x", {dir.path() / "ws/e.sock"}),
                    Catch::Contains("it holds the engine socket"));
  CHECK(admit_cwd(ws.get(), dir.path() / "ws", "/home/x", {"/var/run/docker.sock"}) ==
        dir.path() / "ws");
}

TEST_CASE("a workspace renamed or replaced by a symlink after the client opened it is refused",
          "[broker]") {
  ScratchDir dir;
  fs::create_directories(dir.path() / "ws");
  fs::create_directories(dir.path() / "other");
  UniqueFd ws(::open((dir.path() / "ws").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  CHECK(admit_cwd(ws.get(), dir.path() / "ws", "/home/x", {}) == dir.path() / "ws");
  fs::rename(dir.path() / "ws", dir.path() / "moved");
  fs::create_directory_symlink(dir.path() / "other", dir.path() / "ws");
  CHECK_THROWS_WITH(admit_cwd(ws.get(), dir.path() / "ws", "/home/x", {}),
                    Catch::Contains("changed (renamed or replaced) after the caller opened it"));
}

TEST_CASE("a symlink in the workspace's path is refused", "[broker]") {
  ScratchDir dir;
  fs::create_directories(dir.path() / "real/ws");
  fs::create_directory_symlink(dir.path() / "real", dir.path() / "link");
  UniqueFd ws(::open((dir.path() / "real/ws").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  // The stated path goes through the link; the kernel's name of the directory does not.
  CHECK_THROWS_WITH(admit_cwd(ws.get(), dir.path() / "link/ws", "/home/x", {}),
                    Catch::Contains("changed"));
}

namespace {

std::string write_file(const fs::path& file, const std::string& text) {
  std::ofstream(file, std::ios::binary) << text;
  return text;
}

std::vector<std::pair<std::string, std::string>> configs_of(const fs::path& dir) {
  UniqueFd fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  return read_workspace_configs(fd.get(), dir);
}

}  // namespace

TEST_CASE("the workspace's files are read through the cwd descriptor, outermost first",
          "[broker]") {
  ScratchDir dir;
  fs::path outer = dir.path() / "outer";
  fs::create_directories(outer / ".git");
  fs::create_directories(outer / "vendor/inner/.git");
  fs::create_directories(outer / "vendor/inner/src");
  write_file(outer / ".sandshim.conf", "[sandbox]\npids = 64\n");
  write_file(outer / "vendor/.sandshim.conf", "[sandbox]\npids = 48\n");
  write_file(outer / "vendor/inner/.sandshim.conf", "[sandbox]\npids = 32\n");
  write_file(outer / "vendor/inner/src/.sandshim.conf", "ignored: not the workspace's top\n");
  auto texts = configs_of(outer / "vendor/inner/src");
  REQUIRE(texts.size() == 3);
  CHECK(texts[0].first == (outer / ".sandshim.conf").string());
  CHECK(texts[1].second == "[sandbox]\npids = 48\n");
  CHECK(texts[2].first == (outer / "vendor/inner/.sandshim.conf").string());
  // Without a repository the cwd is the workspace.
  fs::create_directories(dir.path() / "plain");
  write_file(dir.path() / "plain/.sandshim.conf", "[sandbox]\npids = 16\n");
  CHECK(configs_of(dir.path() / "plain").size() == 1);
  fs::create_directories(dir.path() / "empty");
  CHECK(configs_of(dir.path() / "empty").empty());
}

TEST_CASE("a workspace file that is a link, not a regular file or too large is refused unread",
          "[broker]") {
  ScratchDir dir;
  fs::path ws = dir.path() / "ws";
  fs::create_directories(ws);
  std::string secret = write_file(dir.path() / "key", "THE-SECRET-KEY\n");
  fs::create_symlink(dir.path() / "key", ws / ".sandshim.conf");
  CHECK_THROWS_WITH(configs_of(ws),
                    Catch::Contains("is a symbolic link") && !Catch::Contains("THE-SECRET"));
  fs::remove(ws / ".sandshim.conf");
  REQUIRE(::mkfifo((ws / ".sandshim.conf").c_str(), 0600) == 0);
  CHECK_THROWS_WITH(configs_of(ws), Catch::Contains("is not a regular file"));
  fs::remove(ws / ".sandshim.conf");
  write_file(ws / ".sandshim.conf", std::string(k_max_workspace_config_bytes + 1, '#'));
  CHECK_THROWS_WITH(configs_of(ws),
                    Catch::Contains("is larger than the cap") && Catch::Contains("at most 64 KiB"));
  write_file(ws / ".sandshim.conf", std::string(k_max_workspace_config_bytes, '#'));
  CHECK(configs_of(ws).size() == 1);
}

TEST_CASE("protocol: an exit hands back git's state as names, marks and a count of descriptors") {
  Exit exit{0, std::nullopt,
            GitHandback{"/home/dev/project",
                        "2049:131",
                        {{"HEAD", "12:21:1700000000000000000", true},
                         {"MERGE_HEAD", "", false},
                         {"index", "13:900:5", true}},
                        {"config", "ORIG_HEAD (not in git's shape)"}},
            std::nullopt};
  auto decoded = decode_exit(encode(exit));
  REQUIRE(std::holds_alternative<Exit>(decoded));
  const Exit& back = std::get<Exit>(decoded);
  REQUIRE(back.git);
  CHECK(back.git->workspace == "/home/dev/project");
  CHECK(back.git->git_id == "2049:131");
  REQUIRE(back.git->files.size() == 3);
  CHECK(back.git->files[1].name == "MERGE_HEAD");
  CHECK_FALSE(back.git->files[1].written);
  CHECK(back.git->left_behind.size() == 2);
  CHECK(written_files(back) == 2);
  CHECK(written_files(Exit{1, std::nullopt, std::nullopt, std::nullopt}) == 0);
  for (const auto& [bad, what] :
       std::vector<std::pair<GitFileHanded, const char*>>{{{"../config", "", true}, "a path"},
                                                          {{"HEAD", "/etc/passwd", true}, "a mark"},
                                                          {{"", "", true}, "an empty name"}}) {
    Exit broken = exit;
    broken.git->files[0] = bad;
    INFO(what);
    CHECK(std::holds_alternative<ProtocolError>(decode_exit(encode(broken))));
  }
  Exit relative = exit;
  relative.git->workspace = "project";
  CHECK(std::holds_alternative<ProtocolError>(decode_exit(encode(relative))));
}

TEST_CASE("protocol: an exit names the protected names a run created, entry names only") {
  Exit exit{0, std::nullopt, std::nullopt,
            CreatedNames{"/home/dev/project",
                         "0123abcd-9",
                         {".envrc", ".claude", "CLAUDE.md"},
                         {{"CLAUDE.md", "AGENTS.md"}, {"GEMINI.md", "../docs/rules.md"}}}};
  auto decoded = decode_exit(encode(exit));
  REQUIRE(std::holds_alternative<Exit>(decoded));
  REQUIRE(std::get<Exit>(decoded).created);
  CHECK(std::get<Exit>(decoded).created->names == exit.created->names);
  CHECK(std::get<Exit>(decoded).created->run_id == "0123abcd-9");
  CHECK(written_files(std::get<Exit>(decoded)) == 0);
  for (const auto& [name, run_id, workspace] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"../.envrc", "0123", "/home/dev/project"},
           {".claude/settings.json", "0123", "/home/dev/project"},
           {"..", "0123", "/home/dev/project"},
           {".envrc", "../x", "/home/dev/project"},
           {".envrc", "0123", "project"}}) {
    Exit broken = exit;
    broken.created->names = {name};
    broken.created->run_id = run_id;
    broken.created->workspace = workspace;
    INFO(name << " " << run_id << " " << workspace);
    CHECK(std::holds_alternative<ProtocolError>(decode_exit(encode(broken))));
  }
  Exit many = exit;
  many.created->names.assign(k_max_created_names + 1, ".envrc");
  CHECK(std::holds_alternative<ProtocolError>(decode_exit(encode(many))));
  // The links to make again: an entry name each, and a link's text (never empty, under PATH_MAX).
  CHECK(std::get<Exit>(decoded).created->links == exit.created->links);
  for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{
           {"../CLAUDE.md", "AGENTS.md"},
           {"CLAUDE.md", ""},
           {"CLAUDE.md", std::string(4096, 'a')},
           {"CLAUDE.md", std::string("AGENTS.md\0x", 11)}}) {
    Exit broken = exit;
    broken.created->links = {{name, text}};
    INFO(name << " " << text.size());
    CHECK(std::holds_alternative<ProtocolError>(decode_exit(encode(broken))));
  }
  Exit many_links = exit;
  many_links.created->links.assign(k_max_created_names + 1, {"CLAUDE.md", "AGENTS.md"});
  CHECK(std::holds_alternative<ProtocolError>(decode_exit(encode(many_links))));
}

TEST_CASE(
    "protocol: a run carries the caller's git identity, printable user.name and user.email only") {
  RunCall run;
  run.invoked_as = "python3";
  run.argv = {"python3", "-c", "pass"};
  run.cwd = "/home/dev/project";
  run.git_identity = {{"user.name", "Dev One"}, {"user.email", "dev@example.com"}};
  auto decoded = decode_client_message(encode(Request{run, ""}));
  REQUIRE(std::holds_alternative<ClientMessage>(decoded));
  const auto& request = std::get<Request>(std::get<ClientMessage>(decoded));
  CHECK(std::get<RunCall>(request.call).git_identity == run.git_identity);
  for (const auto& bad : std::vector<std::pair<std::string, std::string>>{
           {"core.fsmonitor", "touch pwned"}, {"user.name", "two\nlines"}, {"user.email", ""}}) {
    RunCall broken = run;
    broken.git_identity = {bad};
    INFO(bad.first);
    CHECK(
        std::holds_alternative<ProtocolError>(decode_client_message(encode(Request{broken, ""}))));
  }
}
