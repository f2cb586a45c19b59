#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sandshim::hooks {

// The files of the programs the analysis must recognise whatever they are called (interpreters,
// shells, engine clients, loaders, command-running tools), found on the system's PATH and the
// agent's, so a copy, link or hard link of one is known for what it is.
class KnownPrograms {
 public:
  // `search_path` is a PATH value searched after the system's; `sandshim` (what every shim
  // link resolves to) is never a known program.
  KnownPrograms(const std::string& search_path, const std::filesystem::path& sandshim);

  // Which known program `file` (through its links) is: by inode, or by identical content.
  std::optional<std::string> of(const std::filesystem::path& file) const;

 private:
  struct Entry {
    std::string name;
    std::filesystem::path file;
  };
  std::map<std::pair<uintmax_t, uintmax_t>, std::string> m_by_inode;
  std::map<uintmax_t, std::vector<Entry>> m_by_size;
};

// The file bash would run for a command word: a path (from `cwd`) or the first match on
// `path_variable`, canonical; nullopt when there is none.
std::optional<std::filesystem::path> locate_program(const std::string& command,
                                                    const std::filesystem::path& cwd,
                                                    const std::string& path_variable);

// The text of a script file a host shell would read (a regular file up to 1 MiB; nullopt for a
// binary: no #! and a NUL in its first 4 KiB).
std::optional<std::string> read_script_file(const std::filesystem::path& file);

// Whose files count as the system's: `uid`'s (root) at and below `top` ("/"). Tests stand a
// fixture directory and their own uid in for / and root.
struct SystemOwner {
  uid_t uid = 0;
  std::filesystem::path top = "/";
};

// True when only root can have written `file` (canonical) or put it there: it is a regular file,
// and it and every directory above it up to `owner.top` belong to `owner.uid` and are writable by
// neither group nor others. A sticky world-writable directory (/tmp) fails: any user can create
// a file in it. An ACL granting another user write shows in the group bits and fails too. A
// symbolic link in such a directory counts when the file it ends at does.
bool owned_by_system(const std::filesystem::path& file, const SystemOwner& owner = {});

}  // namespace sandshim::hooks
