#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "broker/protocol.hpp"
#include "broker/unix_socket.hpp"
#include "policy/policy.hpp"
#include "run/run_request.hpp"

namespace sandshim::broker {

// What a worker knows of its caller besides the request: the kernel's word and its own reads.
struct CallerFacts {
  PeerCredentials peer;
  std::filesystem::path home;  // the caller's home, from the password database
  std::filesystem::path cwd;   // a run's admitted cwd (its descriptor is the worker's cwd)
  std::vector<std::pair<std::string, std::string>> workspace_texts;  // read through it
  // The session's: a run calls it with its exit code once its row is complete (the session
  // answers the client, the worker lets the caller's descriptors go and waits for its exit).
  // With it what a run under rw hands back of git's state.
  std::function<void(int exit_code, shim::RunHandback handback)> tell_outcome;
  std::shared_ptr<shim::PreopenedStore> preopened_store;  // opened before the request came
};

// The run a typed `run` call asks for, built from its fields alone: the environment is what both
// the client's policy and `floor` (the broker's system file) let into a sandbox; the broker's
// policy source holds the caller's config texts and the workspace's.
shim::RunRequest run_request_of(const RunCall& call, const CallerFacts& facts,
                                const shim::Policy& floor);

// The broker's audit database, from its system file; empty when that file does not load (each
// run then refuses with its own line).
std::filesystem::path broker_audit_db();

// The broker's audit store as its system file names it, opened ahead of a request (nullptr
// when it cannot be: the run opens its own and says why).
std::shared_ptr<shim::PreopenedStore> preopen_broker_store();

// Serves one request in this process (the broker's worker, acting for the peer); returns the exit
// code the client gets.
int serve_request(const Request& request, const CallerFacts& facts);

// A request refused before it was served: the caller gets the one line, and a run's refusal is
// a `refused` row the caller's `sandshim audit` shows.
int refuse_request(const Request& request, const CallerFacts& facts, const std::string& refusal);

}  // namespace sandshim::broker
