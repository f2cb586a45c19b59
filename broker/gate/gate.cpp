// sandshim-gate: the first program of a container the broker starts. Before the caller's
// command runs, it checks that the workspace the engine mounted (by name, so a rename or a
// symlink swapped in after the broker's check would be followed) is the directory the caller's
// descriptor held: same device and inode, for the mount and for the working directory. Static,
// so it runs in any image; it links nothing of sandshim.
//
// The binds the engine made inside the workspace (sandbox.workspace = rw's read-only names,
// sandbox.writable's paths; also by name) follow as TARGET DEV:INO pairs: what TARGET leads to
// (a link the workspace holds is followed, as the engine followed it) must be what the broker
// found beneath the workspace.
//
//   sandshim-gate WORKSPACE DEV:INO CWD_DEV:INO [TARGET DEV:INO]... -- PROGRAM [ARG...]
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

constexpr int k_refused = 125;  // as docker run: nothing of the caller's ran
constexpr int k_not_executable = 126;
constexpr int k_not_found = 127;

void say(const std::string& line) {
  std::string text = "sandshim: " + line + "\n";
  (void)!::write(STDERR_FILENO, text.data(), text.size());
}

std::string identity_of(const char* path) {
  struct stat st {};
  if (::lstat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
    return "";
  }
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

bool is_held_directory(const char* path, const char* expected) {
  return identity_of(path) == expected;
}

// DEV:INO of what PATH leads to, links followed; "" when it leads nowhere.
std::string followed_identity_of(const char* path) {
  struct stat st {};
  if (::stat(path, &st) != 0) {
    return "";
  }
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

int exec_command(char** argv) {
  ::execvp(argv[0], argv);
  int error = errno;
  say(std::string(argv[0]) + ": " + std::strerror(error));
  return error == ENOENT ? k_not_found : k_not_executable;
}

// WORKSPACE DEV:INO CWD_DEV:INO, then TARGET DEV:INO pairs up to "--": the index of "--", or 0.
int separator_of(int argc, char** argv) {
  for (int i = 4; i < argc; i += 2) {
    if (std::strcmp(argv[i], "--") == 0) {
      return i + 1 < argc ? i : 0;
    }
  }
  return 0;
}

// The first TARGET of the pairs that is not what the broker found there, or nullptr.
const char* first_swapped_mount(char** argv, int separator) {
  for (int i = 4; i < separator; i += 2) {
    if (followed_identity_of(argv[i]) != argv[i + 1]) {
      return argv[i];
    }
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  int separator = argc >= 6 ? separator_of(argc, argv) : 0;
  if (separator == 0) {
    say("usage: sandshim-gate WORKSPACE DEV:INO CWD_DEV:INO [TARGET DEV:INO]... -- PROGRAM "
        "[ARG...]; nothing ran");
    return k_refused;
  }
  if (!is_held_directory(argv[1], argv[2]) || !is_held_directory(".", argv[3])) {
    say("the workspace the engine mounted at '" + std::string(argv[1]) +
        "' is not the caller's directory (renamed or replaced by a symlink while the run "
        "started); refusing it; nothing ran");
    return k_refused;
  }
  if (const char* swapped = first_swapped_mount(argv, separator)) {
    say("what the engine mounted at '" + std::string(swapped) +
        "' is not what the workspace held there when the broker checked it (renamed or "
        "replaced by a symlink while the run started); refusing it; nothing ran");
    return k_refused;
  }
  return exec_command(argv + separator + 1);
}
