#pragma once

// The broker's wire protocol, version 1: the one place both sides agree on.
//
// A frame is a 4-byte big-endian length followed by that many bytes of one JSON object (at
// most k_max_frame_bytes). The client's first frame is a Request and carries, in the same
// sendmsg(2), exactly k_request_fds descriptors over SCM_RIGHTS: stdin, stdout, stderr and
// the cwd (O_PATH). Then the client sends Signal frames; the broker answers with one Exit
// frame (or closes the socket: the broker went away). Who the caller is comes from
// SO_PEERCRED, never from a frame. Every object is parsed strictly: a version mismatch, an
// unknown key, a wrong type, a string with a NUL byte, a value over a limit refuses the frame.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace sandshim::broker {

inline constexpr int k_protocol_version = 1;
inline constexpr size_t k_max_frame_bytes = 1 << 20;
inline constexpr size_t k_max_list_entries = 4096;
inline constexpr size_t k_max_string_bytes = 128 * 1024;
inline constexpr size_t k_max_nesting = 3;  // object > list > [path, text]
inline constexpr size_t k_max_user_config_files = 4;
inline constexpr int k_request_fds = 4;     // stdin, stdout, stderr, cwd

// What the broker child runs as the caller: the same entry points as direct mode.
enum class Verb { shim, run, hook, audit };

struct TerminalSize {
  uint16_t rows = 0;
  uint16_t cols = 0;
};

// The client's first frame: what to run and with which environment. The fds travel beside it.
struct Request {
  Verb verb = Verb::shim;
  std::string invoked_as;         // the shim's name (python, node, sh), or the verb
  std::vector<std::string> argv;  // shim: the program's argv; others: the subcommand's args
  std::vector<std::string> env;   // NAME=VALUE; the broker filters it, never trusts it
  std::string cwd;                // the path the client opened as its cwd descriptor
  // The caller's own config files (path, text): user layers the broker's policy may only let
  // tighten (the broker cannot open them itself).
  std::vector<std::pair<std::string, std::string>> user_config;
  std::optional<TerminalSize> terminal;
};

// A signal the client received, to deliver to the run as if the shim had received it.
struct Signal {
  int number = 0;
};

// The broker's answer: how the run ended (signal set when it ended by one).
struct Exit {
  int code = 0;
  std::optional<int> signal;
};

using ClientMessage = std::variant<Request, Signal>;

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

// The 4-byte length prefix of a payload, and back (nullopt above the frame limit).
std::string frame_header(size_t payload_bytes);
std::optional<size_t> parse_frame_header(const unsigned char header[4]);

// The signals a client forwards: the ones the run loop handles.
bool is_forwardable_signal(int number);

// CLOCK_MONOTONIC in milliseconds with microseconds: the client and the broker's worker log
// it at debug, so bench/latency.sh can measure what the broker adds to a run.
double precise_monotonic_ms();

std::string_view verb_name(Verb verb);
std::optional<Verb> parse_verb(std::string_view name);

}  // namespace sandshim::broker
