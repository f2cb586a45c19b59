#include <catch2/catch.hpp>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "common/io.hpp"
#include "common/unique_fd.hpp"

using namespace sandshim;

namespace {

std::atomic<int> g_handled{0};

extern "C" void count_signal(int /*signal*/) {
  g_handled.fetch_add(1);
}

// Installs a SIGUSR1 handler without SA_RESTART for the test's lifetime, so a blocking read that
// the signal interrupts fails with EINTR instead of being restarted by the kernel.
class InterruptingHandler {
 public:
  InterruptingHandler() {
    struct sigaction action {};
    action.sa_handler = count_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;
    ::sigaction(SIGUSR1, &action, &m_previous);
  }
  InterruptingHandler(const InterruptingHandler&) = delete;
  InterruptingHandler& operator=(const InterruptingHandler&) = delete;
  ~InterruptingHandler() { ::sigaction(SIGUSR1, &m_previous, nullptr); }

 private:
  struct sigaction m_previous {};
};

// SIGPIPE ignored for the test's lifetime, so a write to a closed pipe fails with EPIPE.
class IgnoredSigpipe {
 public:
  IgnoredSigpipe() : m_previous(::signal(SIGPIPE, SIG_IGN)) {}
  IgnoredSigpipe(const IgnoredSigpipe&) = delete;
  IgnoredSigpipe& operator=(const IgnoredSigpipe&) = delete;
  ~IgnoredSigpipe() { ::signal(SIGPIPE, m_previous); }

 private:
  sighandler_t m_previous;
};

std::string pattern(size_t size) {
  std::string text(size, '\0');
  for (size_t i = 0; i < size; ++i) {
    text[i] = static_cast<char>('a' + i % 26);
  }
  return text;
}

}  // namespace

TEST_CASE("retry_on_eintr calls again only on EINTR and keeps the last errno", "[io]") {
  int calls = 0;
  auto twice_interrupted = [&] {
    ++calls;
    errno = EINTR;
    return calls < 3 ? -1 : 7;
  };
  CHECK(retry_on_eintr(twice_interrupted) == 7);
  CHECK(calls == 3);

  calls = 0;
  auto failing = [&] {
    ++calls;
    errno = EBADF;
    return -1;
  };
  CHECK(retry_on_eintr(failing) == -1);
  CHECK(errno == EBADF);
  CHECK(calls == 1);
}

TEST_CASE("a signal interrupting a blocking read is retried, not taken for an error", "[io]") {
  InterruptingHandler handler;
  Pipe pipe = make_pipe();
  pthread_t reader = ::pthread_self();
  g_handled = 0;
  bool wrote = false;  // Catch2's assertions stay on the test's own thread
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the reader blocks by then
    ::pthread_kill(reader, SIGUSR1);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    wrote = write_all(pipe.write.get(), "after the signal");
    pipe.write.reset();
  });
  int interrupted = 0;
  char buffer[64];
  ssize_t n = retry_on_eintr([&] {
    ssize_t got = ::read(pipe.read.get(), buffer, sizeof buffer);
    interrupted += got < 0 && errno == EINTR ? 1 : 0;
    return got;
  });
  writer.join();
  CHECK(wrote);
  CHECK(g_handled == 1);
  CHECK(interrupted == 1);  // the EINTR path really ran
  REQUIRE(n == 16);
  CHECK(std::string(buffer, 16) == "after the signal");
}

TEST_CASE("read_to_end reads across a signal to the writer's close", "[io]") {
  InterruptingHandler handler;
  Pipe pipe = make_pipe();
  pthread_t reader = ::pthread_self();
  g_handled = 0;
  bool wrote = false;
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::pthread_kill(reader, SIGUSR1);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    wrote = write_all(pipe.write.get(), "one ");
    ::pthread_kill(reader, SIGUSR1);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    wrote = write_all(pipe.write.get(), "two") && wrote;
    pipe.write.reset();
  });
  auto text = read_to_end(pipe.read.get());
  writer.join();
  CHECK(wrote);
  CHECK(g_handled == 2);
  REQUIRE(text);
  CHECK(*text == "one two");
}

TEST_CASE("write_all writes more than a pipe holds, and read_to_end takes all of it", "[io]") {
  Pipe pipe = make_pipe();
  std::string data = pattern(3 << 20);
  std::optional<std::string> read;
  std::thread reader([&] { read = read_to_end(pipe.read.get()); });
  CHECK(write_all(pipe.write.get(), data));
  pipe.write.reset();
  reader.join();
  REQUIRE(read);
  CHECK(*read == data);
}

TEST_CASE("write_all fails with EPIPE when the read end is closed", "[io]") {
  IgnoredSigpipe ignored;
  Pipe pipe = make_pipe();
  pipe.read.reset();
  errno = 0;
  CHECK_FALSE(write_all(pipe.write.get(), "nobody reads this"));
  CHECK(errno == EPIPE);
  CHECK(write_all(pipe.write.get(), ""));  // nothing to write is not an error
}

TEST_CASE("read_to_end stops one byte past its limit", "[io]") {
  auto read_with_limit = [](size_t limit) {
    Pipe pipe = make_pipe();
    REQUIRE(write_all(pipe.write.get(), "0123456789"));
    pipe.write.reset();
    return read_to_end(pipe.read.get(), limit);
  };
  CHECK(read_with_limit(0) == std::string("0"));
  CHECK(read_with_limit(4) == std::string("01234"));
  CHECK(read_with_limit(9) == std::string("0123456789"));
  CHECK(read_with_limit(10) == std::string("0123456789"));
  CHECK(read_with_limit(100) == std::string("0123456789"));
}

TEST_CASE("read_to_end fails with the read's errno", "[io]") {
  errno = 0;
  CHECK_FALSE(read_to_end(-1));
  CHECK(errno == EBADF);
}

TEST_CASE("write_all_waiting waits on a non-blocking descriptor that is full", "[io]") {
  Pipe pipe = make_pipe();
  ::fcntl(pipe.write.get(), F_SETFL, ::fcntl(pipe.write.get(), F_GETFL) | O_NONBLOCK);
  std::string data = pattern(1 << 20);
  CHECK_FALSE(write_all(pipe.write.get(), data));  // the plain one gives up at EAGAIN
  CHECK(errno == EAGAIN);
  auto first = read_to_end(pipe.read.get(), 0);  // the pipe is full: its first byte is there
  REQUIRE(first);
  CHECK(*first == "a");

  Pipe second = make_pipe();
  ::fcntl(second.write.get(), F_SETFL, ::fcntl(second.write.get(), F_GETFL) | O_NONBLOCK);
  std::optional<std::string> read;
  std::thread reader([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the writer meets EAGAIN first
    read = read_to_end(second.read.get());
  });
  CHECK(write_all_waiting(second.write.get(), data));
  second.write.reset();
  reader.join();
  REQUIRE(read);
  CHECK(*read == data);
}

TEST_CASE("read_file_text: a regular file's whole text, within its cap, a link only when followed",
          "[io]") {
  char dir_template[] = "/tmp/sandshim-io-XXXXXX";
  REQUIRE(::mkdtemp(dir_template) != nullptr);
  std::string dir = dir_template;
  std::string file = dir + "/text";
  REQUIRE(write_all(UniqueFd(::open(file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600)).get(),
                    "0123456789"));
  REQUIRE(::symlink("text", (dir + "/link").c_str()) == 0);
  REQUIRE(::mkfifo((dir + "/fifo").c_str(), 0600) == 0);

  CHECK(read_file_text(file) == "0123456789");
  CHECK(read_file_text(file, {.max_bytes = 10}) == "0123456789");
  CHECK_FALSE(read_file_text(file, {.max_bytes = 9}));  // longer than its cap: none, not a part
  CHECK(read_file_text(dir + "/link") == "0123456789");
  CHECK_FALSE(read_file_text(dir + "/link", {.follow_link = false}));
  CHECK_FALSE(read_file_text(dir + "/fifo"));  // no writer: it would block, so it is refused
  CHECK_FALSE(read_file_text(dir));
  CHECK_FALSE(read_file_text(dir + "/missing"));
  CHECK(read_file_text("/proc/self/mountinfo").value_or("").find(" / ") != std::string::npos);

  for (const char* name : {"/text", "/link", "/fifo"}) {
    ::unlink((dir + name).c_str());
  }
  ::rmdir(dir.c_str());
}
