#include "broker/daemon.hpp"

#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <optional>

#include "broker/session.hpp"
#include "broker/unix_socket.hpp"
#include "common/error.hpp"

namespace sandshim::broker {

namespace {

// The daemon's own signals, read in its poll loop: children ending, and the request to stop.
UniqueFd daemon_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) {
    sigaddset(&set, sig);
  }
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
  UniqueFd fd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!fd.valid()) {
    throw Fatal(std::string("signalfd failed: ") + std::strerror(errno));
  }
  return fd;
}

// Admission per uid: at most max_runs_per_user sessions run at once for one uid; the others
// wait in that uid's own queue, so one user's flood never delays another user's requests.
class Admission {
 public:
  explicit Admission(const DaemonOptions& options) : m_options(options) {}

  void admit(UniqueFd connection, const PeerCredentials& peer) {
    auto& queue = m_queued[peer.uid];
    if (m_running_per_uid[peer.uid] < m_options.max_runs_per_user) {
      start(std::move(connection), peer, "");
    } else if (queue.size() < static_cast<size_t>(m_options.max_queued_per_user)) {
      queue.push_back({std::move(connection), peer});
    } else {
      start(std::move(connection), peer,
            "uid " + std::to_string(peer.uid) + " has " + std::to_string(queue.size()) +
                " requests waiting already (--max-queued-per-user); retry later; nothing ran");
    }
  }

  // A session is ready before a connection comes (one at a time): a new one is forked right
  // after each handoff, so the fork, the worker's fork and its opening of the audit store are
  // never on a request's path. A spare that died is replaced when the next request comes.
  void prepare_spare() {
    if (!m_spare) {
      m_spare = SpareSession::fork(m_options.request_timeout_ms);
    }
  }

  // A session ended: its uid may start the next request it queued.
  void ended(pid_t pid) {
    if (m_spare && m_spare->pid() == pid) {
      m_spare.reset();
      return;
    }
    auto it = m_sessions.find(pid);
    if (it == m_sessions.end()) {
      return;
    }
    uid_t uid = it->second;
    m_sessions.erase(it);
    --m_running_per_uid[uid];
    auto& queue = m_queued[uid];
    if (!queue.empty()) {
      Waiting next = std::move(queue.front());
      queue.pop_front();
      start(std::move(next.connection), next.peer, "");
    }
  }

 private:
  struct Waiting {
    UniqueFd connection;
    PeerCredentials peer;
  };

  void start(UniqueFd connection, const PeerCredentials& peer, const std::string& refusal) {
    pid_t pid = hand_to_spare(connection.get(), refusal);
    if (pid > 0) {
      m_sessions[pid] = peer.uid;
      ++m_running_per_uid[peer.uid];
    } else {
      spdlog::warn("no session could take a request of uid {}; its client sees the broker go",
                   peer.uid);
    }
    prepare_spare();
  }

  // The spare's pid once it has the connection; a spare that died meanwhile is replaced once.
  pid_t hand_to_spare(int connection, const std::string& refusal) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      prepare_spare();
      if (!m_spare) {
        return 0;
      }
      SpareSession spare = std::move(*m_spare);
      m_spare.reset();
      if (spare.hand_over(connection, refusal)) {
        return spare.pid();
      }
    }
    return 0;
  }

  const DaemonOptions& m_options;
  std::map<pid_t, uid_t> m_sessions;
  std::map<uid_t, int> m_running_per_uid;
  std::map<uid_t, std::deque<Waiting>> m_queued;
  std::optional<SpareSession> m_spare;
};

void accept_one(int listen_fd, Admission& admission) {
  UniqueFd connection(::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC));
  if (!connection.valid()) {
    if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) {
      spdlog::warn("accept failed: {}", std::strerror(errno));
    }
    return;
  }
  PeerCredentials peer = peer_credentials(connection.get());
  spdlog::debug("connection from pid {} uid {} gid {}", peer.pid, peer.uid, peer.gid);
  admission.admit(std::move(connection), peer);
}

// Reaps every ended child; false when a stop signal came.
bool handle_signals(int signal_fd, Admission& admission) {
  bool keep_going = true;
  signalfd_siginfo info{};
  while (::read(signal_fd, &info, sizeof info) == sizeof info) {
    if (info.ssi_signo != SIGCHLD) {
      spdlog::info("signal {}: stopping; running requests end with the broker", info.ssi_signo);
      keep_going = false;
    }
  }
  pid_t pid = 0;
  int status = 0;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
    admission.ended(pid);
  }
  return keep_going;
}

}  // namespace

int serve(const DaemonOptions& options) {
  UniqueFd signals = daemon_signals();
  UniqueFd listener = listen_unix(options.socket, options.socket_mode, 512);
  Admission admission(options);
  admission.prepare_spare();
  spdlog::info("listening on {} ({} runs per uid at once)", options.socket.string(),
               options.max_runs_per_user);
  bool running = true;
  while (running) {
    pollfd fds[2] = {{listener.get(), POLLIN, 0}, {signals.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) {
      throw Fatal(std::string("poll failed: ") + std::strerror(errno));
    }
    if ((fds[1].revents & POLLIN) != 0) {
      running = handle_signals(signals.get(), admission);
    }
    if (running && (fds[0].revents & POLLIN) != 0) {
      accept_one(listener.get(), admission);
    }
  }
  ::unlink(options.socket.c_str());
  return exit_code::k_ok;
}

}  // namespace sandshim::broker
