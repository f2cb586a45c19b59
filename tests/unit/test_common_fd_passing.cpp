// common/fd_passing.hpp: descriptors over a unix socket, as the broker and the launcher pass them.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <string>

#include "common/fd_passing.hpp"

using sandshim::k_max_passed_fds;
using sandshim::receive_with_fds;
using sandshim::send_with_fds;

namespace {

struct SocketPair {
  int fds[2] = {-1, -1};
  SocketPair() { REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0); }
  ~SocketPair() {
    ::close(fds[0]);
    ::close(fds[1]);
  }
};

bool is_open(int fd) {
  return ::fcntl(fd, F_GETFD) != -1;
}

}  // namespace

TEST_CASE("fd passing: bytes and descriptors arrive together, close-on-exec", "[fd-passing]") {
  SocketPair pair;
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  const int passed[3] = {pipe_fds[0], pipe_fds[1], pipe_fds[1]};
  REQUIRE(send_with_fds(pair.fds[0], "head", 4, passed, 3) == 4);
  char buffer[8] = {};
  auto received = receive_with_fds(pair.fds[1], buffer, sizeof buffer, 0);
  CHECK(received.bytes == 4);
  CHECK(std::string(buffer, 4) == "head");
  CHECK(received.complete);
  REQUIRE(received.fd_count == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK((::fcntl(received.fds[i], F_GETFD) & FD_CLOEXEC) != 0);
  }
  CHECK(::write(received.fds[1], "x", 1) == 1);  // the pipe's write end, passed
  char got = 0;
  CHECK(::read(pipe_fds[0], &got, 1) == 1);
  CHECK(got == 'x');
  for (int fd : {pipe_fds[0], pipe_fds[1], received.fds[0], received.fds[1], received.fds[2]}) {
    ::close(fd);
  }
}

TEST_CASE("fd passing: too many to send is refused; too many received are closed", "[fd-passing]") {
  SocketPair pair;
  int many[k_max_passed_fds + 2];
  for (int& fd : many) {
    fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  }
  errno = 0;
  CHECK(send_with_fds(pair.fds[0], "x", 1, many, k_max_passed_fds + 1) == -1);
  CHECK(errno == EINVAL);

  // A sender that is not ours: one message with more descriptors than a receiver takes.
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof many)] = {};
  iovec io{const_cast<char*>("y"), 1};
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof many);
  std::memcpy(CMSG_DATA(header), many, sizeof many);
  REQUIRE(::sendmsg(pair.fds[0], &message, 0) == 1);
  char buffer = 0;
  auto received = receive_with_fds(pair.fds[1], &buffer, 1, 0);
  CHECK(received.bytes == 1);
  CHECK_FALSE(received.complete);
  CHECK(received.fd_count <= k_max_passed_fds);
  for (size_t i = 0; i < received.fd_count; ++i) {
    CHECK(is_open(received.fds[i]));
    ::close(received.fds[i]);
  }
  for (int fd : many) {
    ::close(fd);
  }
}

TEST_CASE("fd passing: a message without descriptors, and a closed peer", "[fd-passing]") {
  SocketPair pair;
  REQUIRE(send_with_fds(pair.fds[0], "ab", 2, nullptr, 0) == 2);
  char buffer[4] = {};
  auto received = receive_with_fds(pair.fds[1], buffer, sizeof buffer, 0);
  CHECK(received.bytes == 2);
  CHECK(received.fd_count == 0);
  CHECK(received.complete);
  ::shutdown(pair.fds[0], SHUT_WR);
  CHECK(receive_with_fds(pair.fds[1], buffer, sizeof buffer, 0).bytes == 0);
  CHECK(receive_with_fds(pair.fds[1], buffer, sizeof buffer, MSG_DONTWAIT).bytes == 0);
}
