#include "audit/anchor.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>

#include "common/error.hpp"
#include "common/escape.hpp"
#include "common/hex.hpp"
#include "common/io.hpp"
#include "common/sha256.hpp"
#include "common/strings.hpp"

namespace sandshim::audit {

namespace {

constexpr std::string_view k_header_tag = "sandshim-anchor";
constexpr std::string_view k_format = "2";
constexpr std::string_view k_hmac = "hmac:";
constexpr std::string_view k_checksum = "sha256:";

[[noreturn]] void anchor_error(const std::filesystem::path& path, const std::string& what) {
  throw Fatal("audit anchor " + quoted(path.string()) + ": " + what +
              "; fix: create it as root: install -o root -g sandshim -m 0660 /dev/null " +
              path.string() + " && chattr +a " + path.string());
}

bool has_append_only_flag(int fd) {
  int flags = 0;
  return ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 && (flags & FS_APPEND_FL) != 0;
}

// A field that holds no space and no line break: escape_text with spaces as \x20.
std::string field(std::string_view text) {
  std::string escaped;
  for (char c : escape_text(text)) {
    escaped += c == ' ' ? std::string("\\x20") : std::string(1, c);
  }
  return escaped;
}

std::string seal_of(std::string_view body, const ChainKey* key) {
  std::string message = "sandshim-anchor-v2";
  message += '\0';
  message += body;
  return key != nullptr ? std::string(k_hmac) + key->mac(message)
                        : std::string(k_checksum) + sha256_hex(message);
}

std::string sealed(const std::string& body, const ChainKey* key) {
  return body + " " + seal_of(body, key) + "\n";
}

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  for (size_t begin = 0;;) {
    size_t end = line.find(' ', begin);
    fields.push_back(line.substr(begin, end - begin));
    if (end == std::string_view::npos) {
      return fields;
    }
    begin = end + 1;
  }
}

std::optional<int64_t> number(std::string_view text) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    return std::nullopt;
  }
  return value;
}

bool is_hash(std::string_view text) {
  return text.size() == 64 && is_lower_hex(text);
}

// KIND CHAIN SEQ HASH TIME_MS, the body both formats share.
std::optional<AnchorEntry> parse_entry(const std::vector<std::string_view>& fields, int line) {
  if (fields.size() != 5 || (fields[0] != "head" && fields[0] != "prune") || !is_hash(fields[3])) {
    return std::nullopt;
  }
  auto chain = unescape_text(fields[1]);
  auto seq = number(fields[2]);
  auto time_ms = number(fields[4]);
  if (!chain || !seq || !time_ms) {
    return std::nullopt;
  }
  auto kind = fields[0] == "head" ? AnchorEntry::Kind::head : AnchorEntry::Kind::prune;
  return AnchorEntry{kind, *chain, *seq, std::string(fields[3]), *time_ms, line};
}

std::optional<AnchorOwner> parse_header(const std::vector<std::string_view>& fields, int line) {
  if (fields.size() != 4 || fields[0] != k_header_tag || fields[1] != k_format) {
    return std::nullopt;
  }
  auto chain = unescape_text(fields[2]);
  auto database = unescape_text(fields[3]);
  if (!chain || !database) {
    return std::nullopt;
  }
  return AnchorOwner{*chain, *database, line};
}

// One line as read: a header, an entry, or what is wrong with it.
struct ParsedLine {
  std::optional<AnchorOwner> header;
  std::optional<AnchorEntry> entry;
  std::string problem;
};

// Why the seal after the last space does not vouch for the rest, or "" when it does.
std::string seal_problem(std::string_view body, std::string_view seal, const ChainKey* key) {
  bool keyed = seal.starts_with(k_hmac);
  if (keyed && key == nullptr) {
    return "it is sealed with a chain key this reader does not have";
  }
  return seal == seal_of(body, keyed ? key : nullptr) ? "" : "its seal does not match its content";
}

ParsedLine parse_sealed(std::string_view text, int line, const ChainKey* key) {
  size_t space = text.rfind(' ');
  std::string_view body = text.substr(0, space);
  std::string_view seal = text.substr(space + 1);
  if (std::string problem = seal_problem(body, seal, key); !problem.empty()) {
    return ParsedLine{std::nullopt, std::nullopt, problem};
  }
  auto fields = split_fields(body);
  ParsedLine parsed{parse_header(fields, line), parse_entry(fields, line), ""};
  if (parsed.entry) {
    parsed.entry->keyed_seal = seal.starts_with(k_hmac);
  }
  if (!parsed.header && !parsed.entry) {
    parsed.problem = "it is sealed but not an anchor line";
  }
  return parsed;
}

ParsedLine parse_line(std::string_view text, int line, const ChainKey* key) {
  size_t space = text.rfind(' ');
  std::string_view last = space == std::string_view::npos ? "" : text.substr(space + 1);
  if (last.starts_with(k_hmac) || last.starts_with(k_checksum)) {
    return parse_sealed(text, line, key);
  }
  ParsedLine parsed{std::nullopt, parse_entry(split_fields(text), line), ""};
  if (parsed.entry) {
    parsed.entry->old_format = true;
  } else {
    parsed.problem = "it is not an anchor line";
  }
  return parsed;
}

// What a line the owner's writer did not write is, given what came before it.
std::string foreign_problem(const ParsedLine& parsed, const std::optional<AnchorOwner>& owner) {
  if (!parsed.problem.empty()) {
    return parsed.problem;
  }
  if (!owner) {
    return parsed.entry && !parsed.entry->old_format ? "a sealed line before the log's header" : "";
  }
  if (parsed.header && parsed.header->chain_id != owner->chain_id) {
    return "a second header, for chain " + parsed.header->chain_id;
  }
  if (parsed.entry && parsed.entry->old_format) {
    return "a line in the old format (1) after the log's header";
  }
  if (parsed.entry && parsed.entry->chain_id != owner->chain_id) {
    return "a line of chain " + quoted(parsed.entry->chain_id) + ", not of the log's chain " +
           owner->chain_id;
  }
  return "";
}

// Files the line, or notes it as the first junk; false once there is junk.
bool take_line(AnchorFile& file, std::string_view text, int line, const ChainKey* key) {
  ParsedLine parsed = parse_line(text, line, key);
  if (std::string problem = foreign_problem(parsed, file.owner); !problem.empty()) {
    file.junk = AnchorJunk{line, problem + ": " + quoted(text.substr(0, 80))};
    return false;
  }
  if (parsed.header && !file.owner) {
    file.owner = parsed.header;
  } else if (parsed.entry) {
    file.old_format_lines += parsed.entry->old_format ? 1 : 0;
    file.entries.push_back(*parsed.entry);
  }
  return true;
}

void take_lines(AnchorFile& file, const std::string& text, const ChainKey* key) {
  int line = 1;
  size_t begin = 0;
  for (size_t end = text.find('\n'); end != std::string::npos; end = text.find('\n', begin)) {
    if (!take_line(file, std::string_view(text).substr(begin, end - begin), line++, key)) {
      return;
    }
    begin = end + 1;
  }
  if (begin < text.size()) {
    file.junk = AnchorJunk{line, "it is cut short (no newline ends it): " +
                                     quoted(std::string_view(text).substr(begin, 80))};
  }
}

// The header a log's first lines name, if any (format-1 lines may come before it).
std::optional<AnchorOwner> claimed_owner(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) {
    anchor_error(path, "cannot read it: " + std::string(std::strerror(errno)));
  }
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    auto fields = split_fields(text);
    if (fields.size() == 5 && fields[0] == k_header_tag) {
      fields.pop_back();
      return parse_header(fields, line);
    }
  }
  return std::nullopt;
}

[[noreturn]] void refuse_foreign_log(const std::filesystem::path& path, const AnchorOwner& claimed,
                                     const AnchorOwner& owner) {
  throw Fatal("audit anchor " + quoted(path.string()) + " belongs to chain " + claimed.chain_id +
              " (database " + quoted(claimed.database.string()) + ", line " +
              std::to_string(claimed.line) + "), not to chain " + owner.chain_id + " of database " +
              quoted(owner.database.string()) +
              "; fix: give each database its own audit.anchor_file; if the first database was "
              "deleted or replaced, run `sandshim audit verify` before starting a new log");
}

// flock(2) on the log while its owner is checked and claimed, so two first writers write one
// header.
class LogLock {
 public:
  explicit LogLock(int fd) : m_fd(fd) { m_locked = ::flock(m_fd, LOCK_EX) == 0; }
  ~LogLock() {
    if (m_locked) {
      ::flock(m_fd, LOCK_UN);
    }
  }
  LogLock(const LogLock&) = delete;
  LogLock& operator=(const LogLock&) = delete;

 private:
  int m_fd;
  bool m_locked = false;
};

void write_line(int fd, const std::filesystem::path& path, const std::string& line) {
  if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    anchor_error(path, "cannot append to it: " + std::string(std::strerror(errno)));
  }
}

void claim(int fd, const std::filesystem::path& path, const AnchorOwner& owner,
           const ChainKey* key) {
  LogLock lock(fd);
  auto claimed = claimed_owner(path);
  if (!claimed) {
    write_line(fd, path, anchor_header(owner, key));
  } else if (claimed->chain_id != owner.chain_id) {
    refuse_foreign_log(path, *claimed, owner);
  }
}

}  // namespace

std::string anchor_line(const AnchorEntry& entry, const ChainKey* key) {
  std::string kind = entry.kind == AnchorEntry::Kind::head ? "head" : "prune";
  return sealed(kind + " " + field(entry.chain_id) + " " + std::to_string(entry.seq) + " " +
                    field(entry.hash) + " " + std::to_string(entry.time_ms),
                key);
}

std::string anchor_header(const AnchorOwner& owner, const ChainKey* key) {
  return sealed(std::string(k_header_tag) + " " + std::string(k_format) + " " +
                    field(owner.chain_id) + " " + field(owner.database.string()),
                key);
}

AnchorLog::AnchorLog(std::filesystem::path path, UniqueFd fd, std::optional<ChainKey> key)
    : m_path(std::move(path)), m_fd(std::move(fd)), m_key(std::move(key)) {}

AnchorLog AnchorLog::open_for_append(const std::filesystem::path& path, const AnchorOwner& owner,
                                     const ChainKey* key) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) {
    anchor_error(path, "cannot open it for appending: " + std::string(std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
      (st.st_mode & S_IWOTH) != 0) {
    anchor_error(path, "it must be a root-owned regular file that others cannot write");
  }
  claim(fd.get(), path, owner, key);
  return AnchorLog(path, std::move(fd), key != nullptr ? std::optional(*key) : std::nullopt);
}

void AnchorLog::append(const AnchorEntry& entry) {
  write_line(m_fd.get(), m_path, anchor_line(entry, m_key ? &*m_key : nullptr));
}

AnchorFile read_anchor_file(const std::filesystem::path& path, const ChainKey* key) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  struct stat st {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0) {
    anchor_error(path, "cannot read it: " + std::string(std::strerror(errno)));
  }
  AnchorFile file;
  file.root_owned = st.st_uid == 0 && (st.st_mode & S_IWOTH) == 0;
  file.append_only = has_append_only_flag(fd.get());
  take_lines(file, read_to_end(fd.get()).value_or(""), key);
  return file;
}

}  // namespace sandshim::audit
