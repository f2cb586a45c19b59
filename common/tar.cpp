#include "common/tar.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace sandshim::tar {

namespace {

constexpr size_t k_block = 512;
constexpr size_t k_name_size = 100;
constexpr size_t k_prefix_size = 155;

// Header field offsets and sizes (POSIX.1-1988 ustar).
struct Field {
  size_t offset;
  size_t size;
};
constexpr Field k_name{0, 100};
constexpr Field k_mode{100, 8};
constexpr Field k_uid{108, 8};
constexpr Field k_gid{116, 8};
constexpr Field k_size{124, 12};
constexpr Field k_mtime{136, 12};
constexpr Field k_checksum{148, 8};
constexpr Field k_type{156, 1};
constexpr Field k_link{157, 100};
constexpr Field k_magic{257, 6};
constexpr Field k_version{263, 2};
constexpr Field k_prefix{345, 155};

void put_text(char* header, Field field, std::string_view text) {
  std::memcpy(header + field.offset, text.data(), std::min(text.size(), field.size));
}

// An octal number, zero-padded, NUL-terminated in its field.
void put_octal(char* header, Field field, uint64_t value) {
  std::string digits(field.size - 1, '0');
  for (size_t i = digits.size(); i > 0 && value != 0; --i, value >>= 3) {
    digits[i - 1] = static_cast<char>('0' + (value & 7));
  }
  put_text(header, field, digits);
}

uint32_t checksum_of(const char* header) {
  uint32_t sum = 0;
  for (size_t i = 0; i < k_block; ++i) {
    bool in_checksum = i >= k_checksum.offset && i < k_checksum.offset + k_checksum.size;
    sum += in_checksum ? ' ' : static_cast<unsigned char>(header[i]);
  }
  return sum;
}

char type_of(Kind kind) {
  switch (kind) {
    case Kind::directory:
      return '5';
    case Kind::symlink:
      return '2';
    case Kind::hardlink:
      return '1';
    default:
      return '0';
  }
}

// One pax record: "LEN key=value\n", where LEN counts itself.
std::string pax_record(std::string_view key, std::string_view value) {
  size_t body = 1 + key.size() + 1 + value.size() + 1;
  size_t length = body + 1;
  while (std::to_string(length).size() + body != length) {
    length = std::to_string(length).size() + body;
  }
  return std::to_string(length) + " " + std::string(key) + "=" + std::string(value) + "\n";
}

// Splits `path` into ustar's prefix and name; false when it does not fit.
bool split_ustar(const std::string& path, std::string& prefix, std::string& name) {
  if (path.size() <= k_name_size) {
    prefix.clear();
    name = path;
    return true;
  }
  for (size_t slash = path.find('/'); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    if (slash <= k_prefix_size && path.size() - slash - 1 <= k_name_size && slash > 0) {
      prefix = path.substr(0, slash);
      name = path.substr(slash + 1);
      return !name.empty();
    }
  }
  return false;
}

std::string archive_path(const Entry& entry) {
  return entry.kind == Kind::directory && !entry.path.ends_with('/') ? entry.path + "/"
                                                                     : entry.path;
}

}  // namespace

void Writer::add_data(std::string_view data) {
  m_out.append(data);
  m_out.append((k_block - data.size() % k_block) % k_block, '\0');
}

void Writer::add_header(const Entry& entry, char type, uint64_t size) {
  char header[k_block] = {};
  std::string prefix;
  std::string name;
  if (!split_ustar(archive_path(entry), prefix, name)) {
    name = archive_path(entry).substr(0, k_name_size);  // the pax header before it says all
  }
  put_text(header, k_name, name);
  put_text(header, k_prefix, prefix);
  put_octal(header, k_mode, entry.mode & 07777);
  put_octal(header, k_uid, entry.uid);
  put_octal(header, k_gid, entry.gid);
  put_octal(header, k_size, size);
  put_octal(header, k_mtime, static_cast<uint64_t>(std::max<int64_t>(entry.mtime, 0)));
  header[k_type.offset] = type;
  put_text(header, k_link, entry.link);
  put_text(header, k_magic, std::string_view("ustar\0", 6));
  put_text(header, k_version, "00");
  put_octal(header, k_checksum, checksum_of(header));
  m_out.append(header, k_block);
}

void Writer::add_pax(const Entry& entry) {
  std::string records;
  std::string prefix;
  std::string name;
  if (!split_ustar(archive_path(entry), prefix, name)) {
    records += pax_record("path", archive_path(entry));
  }
  if (entry.link.size() > k_link.size) {
    records += pax_record("linkpath", entry.link);
  }
  if (entry.data.size() >= (uint64_t{1} << 33)) {
    records += pax_record("size", std::to_string(entry.data.size()));
  }
  if (records.empty()) {
    return;
  }
  Entry pax;
  pax.path = "PaxHeaders/" + entry.path.substr(0, 80);
  pax.mode = 0644;
  add_header(pax, 'x', records.size());
  add_data(records);
}

void Writer::add(const Entry& entry) {
  add_pax(entry);
  bool has_data = entry.kind == Kind::file;
  add_header(entry, type_of(entry.kind), has_data ? entry.data.size() : 0);
  if (has_data) {
    add_data(entry.data);
  }
}

std::string Writer::finish() {
  m_out.append(2 * k_block, '\0');
  return std::exchange(m_out, {});
}

namespace {

class Reader {
 public:
  Reader(std::string_view archive, const ReadLimits& limits)
      : m_archive(archive), m_limits(limits) {}

  ReadResult run();

 private:
  // The numeric fields of one header, read before the entry is built.
  struct Numbers {
    uint64_t size = 0;
    uint64_t mode = 0;
    uint64_t uid = 0;
    uint64_t gid = 0;
    uint64_t mtime = 0;
  };

  bool next(ReadResult& result);
  bool checksum_matches(const char* header);
  bool is_end_block(const char* header);
  bool numbers_of(const char* header, char type, Numbers& numbers);
  bool number(const char* header, Field field, uint64_t& value);
  bool base256_number(const unsigned char* bytes, size_t size, uint64_t& value);
  bool octal_number(const unsigned char* bytes, size_t size, uint64_t& value);
  bool within_limits(char type, uint64_t size);
  bool take_data(uint64_t size, std::string_view& data);
  bool apply_extended(char type, std::string_view data);
  bool apply_pax(std::string_view records);
  bool split_pax_record(std::string_view records, size_t& length, std::string_view& key,
                        std::string& value);
  bool apply_pax_value(std::string_view key, const std::string& value);
  bool add_entry(ReadResult& result, const char* header, char type, const Numbers& numbers,
                 std::string_view data);
  Entry entry_of(const char* header, char type) const;
  bool fail(std::string why) {
    m_error = std::move(why);
    return false;
  }

  std::string_view m_archive;
  ReadLimits m_limits;
  size_t m_at = 0;
  uint64_t m_total = 0;
  std::optional<std::string> m_long_path;
  std::optional<std::string> m_long_link;
  std::optional<uint64_t> m_pax_size;
  bool m_ended = false;  // the end-of-archive block was seen: nothing was cut off
  std::string m_error;
};

std::string field_text(const char* header, Field field) {
  const char* start = header + field.offset;
  return std::string(start, strnlen(start, field.size));
}

bool Reader::number(const char* header, Field field, uint64_t& value) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(header + field.offset);
  value = 0;
  if ((bytes[0] & 0x80) != 0) {
    return base256_number(bytes, field.size, value);
  }
  return octal_number(bytes, field.size, value);
}

// GNU's base-256 form: big-endian after the marker bit, for values octal cannot hold.
bool Reader::base256_number(const unsigned char* bytes, size_t size, uint64_t& value) {
  if ((bytes[0] & 0x40) != 0) {
    return fail("a negative number in a header");
  }
  for (size_t i = 0; i < size; ++i) {
    if (value > (UINT64_MAX >> 8)) {
      return fail("a number too large in a header");
    }
    value = (value << 8) | (i == 0 ? (bytes[i] & 0x3f) : bytes[i]);
  }
  return true;
}

// Octal digits, optionally led by spaces and ended by spaces or NULs (writers differ).
bool Reader::octal_number(const unsigned char* bytes, size_t size, uint64_t& value) {
  size_t i = 0;
  while (i < size && bytes[i] == ' ') {
    ++i;
  }
  for (; i < size && bytes[i] >= '0' && bytes[i] <= '7'; ++i) {
    if (value > (UINT64_MAX >> 3)) {
      return fail("a number too large in a header");
    }
    value = (value << 3) | (bytes[i] - '0');
  }
  for (; i < size; ++i) {
    if (bytes[i] != ' ' && bytes[i] != '\0') {
      return fail("a header field that is not an octal number");
    }
  }
  return true;
}

bool Reader::take_data(uint64_t size, std::string_view& data) {
  uint64_t padded = size + (k_block - size % k_block) % k_block;
  if (size > m_archive.size() || padded > m_archive.size() - m_at) {
    return fail("the archive ends inside an entry's data");
  }
  data = m_archive.substr(m_at, size);
  m_at += padded;
  return true;
}

// pax records: "LEN key=value\n" each; path, linkpath and size are the keys that matter.
bool Reader::apply_pax(std::string_view records) {
  while (!records.empty()) {
    size_t length = 0;
    std::string_view key;
    std::string value;
    if (!split_pax_record(records, length, key, value) || !apply_pax_value(key, value)) {
      return false;
    }
    records.remove_prefix(length);
  }
  return true;
}

// Reads the first record of `records`; `length` is how many bytes it takes, LEN included.
bool Reader::split_pax_record(std::string_view records, size_t& length, std::string_view& key,
                              std::string& value) {
  size_t space = records.find(' ');
  if (space == std::string_view::npos || space == 0 || space > 20) {
    return fail("a malformed pax record");
  }
  uint64_t declared = 0;
  for (char c : records.substr(0, space)) {
    if (c < '0' || c > '9') {
      return fail("a malformed pax record");
    }
    declared = declared * 10 + static_cast<uint64_t>(c - '0');
  }
  if (declared <= space + 2 || declared > records.size() || records[declared - 1] != '\n') {
    return fail("a malformed pax record");
  }
  std::string_view record = records.substr(space + 1, declared - space - 2);
  size_t equals = record.find('=');
  if (equals == std::string_view::npos) {
    return fail("a malformed pax record");
  }
  length = declared;
  key = record.substr(0, equals);
  value = std::string(record.substr(equals + 1));
  return true;
}

// Keeps the keys that override the next header; other keys (mtime, uname…) are ignored.
bool Reader::apply_pax_value(std::string_view key, const std::string& value) {
  if (key == "path") {
    m_long_path = value;
  } else if (key == "linkpath") {
    m_long_link = value;
  } else if (key == "size") {
    if (value.empty() || value.size() > 19 ||
        value.find_first_not_of("0123456789") != std::string::npos) {
      return fail("a pax size that is not a number");
    }
    m_pax_size = std::stoull(value);
  }
  return true;
}

Kind kind_of(char type) {
  switch (type) {
    case '0':
    case '\0':
    case '7':
      return Kind::file;
    case '5':
      return Kind::directory;
    case '2':
      return Kind::symlink;
    case '1':
      return Kind::hardlink;
    default:
      return Kind::other;
  }
}

Entry Reader::entry_of(const char* header, char type) const {
  Entry entry;
  std::string prefix = field_text(header, k_prefix);
  std::string name = field_text(header, k_name);
  bool ustar = std::memcmp(header + k_magic.offset, "ustar", 5) == 0;
  entry.path = m_long_path ? *m_long_path : (ustar && !prefix.empty() ? prefix + "/" + name : name);
  entry.link = m_long_link ? *m_long_link : field_text(header, k_link);
  entry.kind = kind_of(type);
  if (entry.kind == Kind::file && entry.path.ends_with('/')) {
    entry.kind = Kind::directory;  // old tars mark directories by the slash alone
  }
  while (entry.path.size() > 1 && entry.path.ends_with('/')) {
    entry.path.pop_back();
  }
  return entry;
}

// Headers that describe the entry after them rather than an entry of their own.
bool is_extended(char type) {
  return type == 'x' || type == 'g' || type == 'L' || type == 'K';
}

bool Reader::next(ReadResult& result) {
  if (m_archive.size() - m_at < k_block) {
    return fail("the archive ends without its end-of-archive blocks");
  }
  const char* header = m_archive.data() + m_at;
  if (is_end_block(header)) {
    return true;
  }
  if (!checksum_matches(header)) {
    return false;
  }
  m_at += k_block;
  char type = header[k_type.offset];
  Numbers numbers;
  if (!numbers_of(header, type, numbers)) {
    return false;
  }
  std::string_view data;
  // Directories and links carry no data whatever their size field says.
  bool has_data = is_extended(type) || kind_of(type) == Kind::file || kind_of(type) == Kind::other;
  if (!within_limits(type, numbers.size) || (has_data && !take_data(numbers.size, data))) {
    return false;
  }
  if (is_extended(type)) {
    return apply_extended(type, data);
  }
  return add_entry(result, header, type, numbers, data);
}

bool Reader::checksum_matches(const char* header) {
  uint64_t stored = 0;
  if (!number(header, k_checksum, stored)) {
    return false;
  }
  if (stored != checksum_of(header)) {
    return fail("a header's checksum does not match");
  }
  return true;
}

// An all-zero block ends the archive; what follows it is padding.
bool Reader::is_end_block(const char* header) {
  if (!std::all_of(header, header + k_block, [](char c) { return c == '\0'; })) {
    return false;
  }
  m_at = m_archive.size();
  m_ended = true;
  return true;
}

// The header's numbers, with a file's size taken from the pax record before it when it had one.
bool Reader::numbers_of(const char* header, char type, Numbers& numbers) {
  if (!number(header, k_size, numbers.size) || !number(header, k_mode, numbers.mode) ||
      !number(header, k_uid, numbers.uid) || !number(header, k_gid, numbers.gid) ||
      !number(header, k_mtime, numbers.mtime)) {
    return false;
  }
  if (m_pax_size && kind_of(type) == Kind::file) {
    numbers.size = *m_pax_size;
  }
  return true;
}

// Checked before the data is taken, so a hostile size field never gets to allocate.
bool Reader::within_limits(char type, uint64_t size) {
  if (is_extended(type)) {
    if (size > (1 << 20)) {
      return fail("an extended header larger than 1 MiB");
    }
  } else if (kind_of(type) == Kind::file) {
    m_total += size;
    if (m_total > m_limits.max_total_bytes || size > m_limits.max_total_bytes) {
      return fail("the archive holds more than " + std::to_string(m_limits.max_total_bytes) +
                  " bytes");
    }
  }
  return true;
}

// pax ('x') and GNU long names ('L', 'K') apply to the next entry; global pax ('g') is ignored.
bool Reader::apply_extended(char type, std::string_view data) {
  if (type == 'x') {
    return apply_pax(data);
  }
  if (type == 'L' || type == 'K') {
    std::string text(data.substr(0, strnlen(data.data(), data.size())));
    (type == 'L' ? m_long_path : m_long_link) = text;
  }
  return true;
}

bool Reader::add_entry(ReadResult& result, const char* header, char type, const Numbers& numbers,
                       std::string_view data) {
  if (result.entries.size() >= m_limits.max_entries) {
    return fail("the archive holds more than " + std::to_string(m_limits.max_entries) + " entries");
  }
  Entry entry = entry_of(header, type);
  entry.mode = static_cast<uint32_t>(numbers.mode & 07777);
  entry.uid = static_cast<uint32_t>(std::min<uint64_t>(numbers.uid, UINT32_MAX));
  entry.gid = static_cast<uint32_t>(std::min<uint64_t>(numbers.gid, UINT32_MAX));
  entry.mtime = static_cast<int64_t>(std::min<uint64_t>(numbers.mtime, INT64_MAX));
  if (entry.kind == Kind::file) {
    entry.data = std::string(data);
  }
  result.entries.push_back(std::move(entry));
  m_long_path.reset();
  m_long_link.reset();
  m_pax_size.reset();
  return true;
}

ReadResult Reader::run() {
  ReadResult result;
  while (m_at < m_archive.size() || !m_ended) {
    if (!next(result)) {
      result.entries.clear();
      result.error = m_error;
      return result;
    }
  }
  return result;
}

}  // namespace

ReadResult read(std::string_view archive, const ReadLimits& limits) {
  if (archive.empty()) {
    return {{}, "the archive is empty"};
  }
  return Reader(archive, limits).run();
}

std::optional<std::string> unsafe_path(std::string_view path) {
  if (path.empty()) {
    return "an empty path";
  }
  if (path.front() == '/') {
    return "an absolute path";
  }
  if (path.find('\0') != std::string_view::npos) {
    return "a path with a NUL";
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = std::min(path.find('/', start), path.size());
    if (path.substr(start, end - start) == "..") {
      return "a path with ..";
    }
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace sandshim::tar
