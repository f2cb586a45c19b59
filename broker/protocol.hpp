#pragma once

// The broker's wire protocol, version 5: the one place both sides agree on.
//
// A frame is a 4-byte big-endian length followed by that many bytes of one JSON object (at
// most k_max_frame_bytes). The client's first frame is a Request and carries, in the same
// sendmsg(2), exactly k_request_fds descriptors over SCM_RIGHTS: stdin, stdout, stderr and
// the cwd (O_PATH). Then the client sends Signal frames; the broker answers with one Exit
// frame (or closes the socket: the broker went away), which carries one read-only descriptor
// per file of git's state a run under sandbox.workspace = rw hands back (GitHandback). Who the
// caller is comes from SO_PEERCRED, never from a frame. Every object is parsed strictly: a version
// mismatch, an unknown key, a wrong type, a string with a NUL byte, a value over a limit refuses
// the frame.
//
// A request is one of five typed verbs. The broker serves each field it knows and nothing else
// of the client's process: no environment is adopted, no path the caller names is opened.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace sandshim::broker {

// 4: `run` carries the project's version ask. 5: `run` carries the caller's git identity and
// `exit` what a run under rw hands back of git's state. A client and a broker of different
// versions refuse each other's frames with the version each speaks.
inline constexpr int k_protocol_version = 7;
inline constexpr size_t k_max_frame_bytes = 1 << 20;
inline constexpr size_t k_max_list_entries = 4096;
inline constexpr size_t k_max_string_bytes = 128 * 1024;
inline constexpr size_t k_max_nesting = 3;  // object > list > [path, text]
inline constexpr size_t k_max_user_config_files = 4;
inline constexpr int k_request_fds = 4;  // stdin, stdout, stderr, cwd

enum class Verb { run, record, audit, status, session_close };

// What the project asks of its interpreter (sandbox.version_fit), as the client read it from the
// caller's files: the file's name (one of k_version_ask_sources, which also says the grammar, or
// an installed dependency's "node_modules/NAME/package.json (engines.node)", NAME npm's) and the
// range it gives, printable and at most k_max_version_range_bytes.
struct VersionAskField {
  std::string source;
  std::string range;
};
inline constexpr std::array<std::string_view, 5> k_version_ask_sources = {
    ".nvmrc", ".node-version", "package.json (engines.node)", ".python-version",
    "pyproject.toml (requires-python)"};
inline constexpr size_t k_max_version_range_bytes = 256;
bool valid_version_ask(const VersionAskField& ask);

struct TerminalSize {
  uint16_t rows = 0;
  uint16_t cols = 0;
};

// `run`: a shim's call (invoked_as python, node, sh: argv is the program's) or `sandshim run`
// (invoked_as "run": argv is its arguments, options and command, parsed by the broker).
struct RunCall {
  std::string invoked_as;
  std::vector<std::string> argv;
  // NAME=VALUE: only what the client's own policy lets into the sandbox; the broker filters
  // again with its own.
  std::vector<std::string> env;
  std::string agent;        // SANDSHIM_AGENT, else the agent its variables name
  std::string session_id;   // SANDSHIM_SESSION_ID
  std::string tool_use_id;  // SANDSHIM_TOOL_USE_ID
  // Claude Code in path mode, with no tool_use_id: the command its shell evaluates (found by
  // the client among its ancestors); the broker joins the run to the caller's own pending
  // decision for exactly that command of the session.
  std::string agent_command;
  bool dry_run = false;  // SANDSHIM_DRY_RUN
  std::string cwd;       // the path the client opened as its cwd descriptor
  // The caller's own config files (path, text): user layers the broker's policy may only let
  // tighten (the broker cannot open them itself).
  std::vector<std::pair<std::string, std::string>> user_config;
  std::optional<TerminalSize> terminal;
  std::optional<VersionAskField> version_ask;  // a python or node call in a project that asks
  // The caller's user.name and user.email from its global git config, as the client read them:
  // git inside a run under sandbox.workspace = rw commits as the caller ([key, value] pairs).
  std::vector<std::pair<std::string, std::string>> git_identity;
};
inline constexpr size_t k_max_git_identity_bytes = 256;

// A hook's decision as the broker records it; the broker adds the peer's uid and its own clock.
struct DecisionFields {
  std::string agent;
  std::string event;
  std::string session_id;
  std::string tool_use_id;
  std::string cwd;
  std::string original_command;
  std::string rewritten_command;
  std::string decision;  // allow, deny, ask, rewrite
  std::string answer;
  std::string permission_mode;
  std::string reason;
  std::string rule;
  int64_t payload_bytes = 0;
};

// A PostToolUse outcome for the caller's own pending decision of tool_use_id.
struct CompletionFields {
  std::string tool_use_id;
  std::string session_id;
  std::string outcome;  // ran, not-run
  std::optional<int> exit_code;
  std::string tool_response_tail;
};

// `record`: a hook's audit write; the hook itself ran in the caller's process.
struct RecordCall {
  std::variant<DecisionFields, CompletionFields> write;
};

// `audit`: `sandshim audit ARGS` on the broker's audit, the caller's own rows.
struct AuditCall {
  std::vector<std::string> args;
};

// `status`: `sandshim doctor`'s read-only question; it has no fields, so nothing the caller sends
// can name a path or change what the broker reports. The answer is one BrokerStatus object the
// worker writes on the stdout the client sent (a pipe of doctor's), then the Exit frame.
struct StatusCall {};

// `session_close`: the agent's session (or turn) is over; the broker closes the peer's own
// decisions of that session still pending (`not-run`, or `ran` when a run joined one) and
// answers how many on the stdout the client sent (a SessionClosed object), then the Exit frame.
inline constexpr size_t k_max_agent_bytes = 64;
inline constexpr size_t k_max_session_id_bytes = 256;
struct SessionCloseCall {
  std::string agent;       // the audit's name of the agent: claude-code, codex…
  std::string session_id;  // the agent's session id: printable, at most 256 bytes
};

// The answer to `session_close`.
struct SessionClosed {
  int64_t closed = 0;
};

struct Request {
  using Call = std::variant<RunCall, RecordCall, AuditCall, StatusCall, SessionCloseCall>;
  Call call;
  std::string log_level;  // SANDSHIM_LOG: the level the worker logs at on the caller's stderr
};

// A signal the client received, to deliver to the run as if the shim had received it.
struct Signal {
  int number = 0;
};

// The broker's answer: how the run ended (signal set when it ended by one). A record answers
// 0 when written, k_record_not_pending when no pending decision of the caller's matched.
// A run under sandbox.workspace = rw hands back what it changed of git's state (the broker's
// user never writes the caller's .git): the client carries it to WORKSPACE/.git as the caller.
// Each file names one of git's state files and the mark the host's copy had when the broker read
// it ("" when absent); a written one's content comes as a read-only descriptor with the Exit
// frame, in the files' order.
struct GitFileHanded {
  std::string name;
  std::string host_mark;
  bool written = false;  // else the run removed it
};
struct GitHandback {
  std::string workspace;  // absolute
  std::string git_id;     // DEV:INO of the .git the broker read
  std::vector<GitFileHanded> files;
  std::vector<std::string> left_behind;  // changed in the sandbox, not git's state: named only
};
inline constexpr size_t k_max_git_files = 14;  // git's state files: at most one descriptor each

// The names that steer the host (.envrc, .claude, CLAUDE.md…) a run under rw created at the
// workspace root: the client moves each aside, as the caller, as direct mode does.
struct CreatedNames {
  std::string workspace;  // absolute
  std::string run_id;
  std::vector<std::string> names;  // each one entry at the workspace's top
  // Protected links the run removed or replaced, NAME and the link's text: made again.
  std::vector<std::pair<std::string, std::string>> links;
};
inline constexpr size_t k_max_created_names = 32;

struct Exit {
  int code = 0;
  std::optional<int> signal;
  std::optional<GitHandback> git;
  std::optional<CreatedNames> created;
};
// The descriptors an Exit frame carries: one per written file of its git handback.
size_t written_files(const Exit& exit);
inline constexpr int k_record_not_pending = 3;

using ClientMessage = std::variant<Request, Signal>;

// One image of the broker's policy (images.COMMAND) and whether its engine holds it.
struct ImageStatus {
  std::string image;
  std::string commands;  // "python, python3": a string, so a status nests no deeper than 3
  bool present = false;
};

// What the broker sees, for `sandshim doctor` in broker mode: each part's verdict and one line.
// It only reports: probing the engine, inspecting images and verifying the chain change nothing.
struct BrokerStatus {
  std::string version;        // the broker's sandshim version
  std::string system_config;  // the broker's system file (its policy's floor)
  bool policy_ok = false;
  std::string policy;  // loaded, or why not
  bool engine_ok = false;
  std::string engine;  // "docker 20.10.24, rootful, cgroup v1", or why it does not answer
  std::vector<ImageStatus> images;
  bool audit_ok = false;
  std::string audit;  // `sandshim audit verify`'s line, as the caller would see it
  std::string pool;   // the warm pool's setting
  // engine.endpoints, each engine pinged for this status: how many answer of how many, and the
  // line that names each one's load or failure (empty without engine.endpoints).
  int64_t engines_answering = 0;
  int64_t engines_total = 0;
  std::string engines;
};

// A frame that breaks the protocol: the message says which rule.
struct ProtocolError {
  std::string message;
};

// Encoders: the JSON payload of one frame.
std::string encode(const Request& request);
std::string encode(const Signal& signal);
std::string encode(const Exit& exit);

// Strict decoders of one frame's payload; never throw.
std::variant<ClientMessage, ProtocolError> decode_client_message(std::string_view payload);
std::variant<Exit, ProtocolError> decode_exit(std::string_view payload);
std::string encode(const BrokerStatus& status);
std::variant<BrokerStatus, ProtocolError> decode_status(std::string_view payload);
std::string encode(const SessionClosed& closed);
std::variant<SessionClosed, ProtocolError> decode_session_closed(std::string_view payload);

// The 4-byte length prefix of a payload, and back (nullopt above the frame limit).
std::string frame_header(size_t payload_bytes);
std::optional<size_t> parse_frame_header(const unsigned char header[4]);

// The signals a client forwards: the ones the run loop handles.
bool is_forwardable_signal(int number);

// CLOCK_MONOTONIC in milliseconds with microseconds: the client and the broker's worker log
// it at debug, so bench/latency.sh can measure what the broker adds to a run.
double precise_monotonic_ms();

Verb verb_of(const Request& request);
std::string_view verb_name(Verb verb);
std::optional<Verb> parse_verb(std::string_view name);

}  // namespace sandshim::broker
