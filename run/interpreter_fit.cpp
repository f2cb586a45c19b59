#include "run/interpreter_fit.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <array>
#include <nlohmann/json.hpp>

#include "common/io.hpp"
#include "common/strings.hpp"
#include "common/unique_fd.hpp"

namespace sandshim::shim {

namespace fs = std::filesystem;

namespace {

// A package.json of a few megabytes is a lockfile's job; past this it asks nothing.
constexpr size_t k_max_project_file_bytes = 1024 * 1024;

// The file's text when it is a regular file (not a link) within the cap.
std::optional<std::string> read_project_file(const fs::path& file) {
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  struct stat st {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<size_t>(st.st_size) > k_max_project_file_bytes) {
    return std::nullopt;
  }
  std::optional<std::string> text = read_to_end(fd.get(), k_max_project_file_bytes);
  return text && text->size() <= k_max_project_file_bytes ? text : std::nullopt;
}

// nvm's release-line aliases that name one major version.
std::optional<std::string> lts_major(std::string_view alias) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 4> k_lines = {
      {{"lts/gallium", "16"}, {"lts/hydrogen", "18"}, {"lts/iron", "20"}, {"lts/jod", "22"}}};
  for (const auto& [name, major] : k_lines) {
    if (alias == name) {
      return std::string(major);
    }
  }
  return std::nullopt;
}

// `.nvmrc` / `.node-version`: the first word of the first line that is not a comment.
std::optional<VersionAsk> version_file_ask(const fs::path& file) {
  std::optional<std::string> text = read_project_file(file);
  if (!text) {
    return std::nullopt;
  }
  for (const std::string& line : split_lines(*text)) {
    std::vector<std::string> words = split_words(line);
    if (words.empty() || words[0].starts_with('#')) {
      continue;
    }
    std::string range = lts_major(words[0]).value_or(words[0]);
    return VersionAsk{range, file.filename().string()};
  }
  return std::nullopt;
}

std::optional<VersionAsk> engines_ask(const fs::path& file) {
  std::optional<std::string> text = read_project_file(file);
  if (!text) {
    return std::nullopt;
  }
  nlohmann::json package = nlohmann::json::parse(*text, nullptr, false);
  if (!package.is_object() || !package.contains("engines") || !package["engines"].is_object()) {
    return std::nullopt;
  }
  const nlohmann::json& node = package["engines"]["node"];
  if (!node.is_string()) {
    return std::nullopt;
  }
  return VersionAsk{node.get<std::string>(), "package.json (engines.node)"};
}

std::optional<VersionAsk> ask_in(const fs::path& dir) {
  for (const char* name : {".nvmrc", ".node-version"}) {
    if (std::optional<VersionAsk> ask = version_file_ask(dir / name)) {
      return ask;
    }
  }
  return engines_ask(dir / "package.json");
}

}  // namespace

std::optional<VersionAsk> node_version_ask(const fs::path& cwd, const fs::path& workspace) {
  fs::path dir = cwd.lexically_normal();
  fs::path top = workspace.lexically_normal();
  for (int depth = 0; depth < 64; ++depth) {
    if (std::optional<VersionAsk> ask = ask_in(dir)) {
      return ask;
    }
    if (dir == top || dir == dir.parent_path() || !dir.string().starts_with(top.string())) {
      break;
    }
    dir = dir.parent_path();
  }
  return std::nullopt;
}

std::optional<std::string> image_interpreter_version(std::string_view image,
                                                     std::string_view interpreter) {
  // Debian bookworm's nodejs (18.20.4+dfsg-1~deb12u2; the suite docker.host_mode fails when the
  // image says otherwise), as install/images.sh installs it.
  static constexpr std::array<std::string_view, 2> k_bookworm_node_images = {
      "sandshim/node:bookworm", "sandshim/wrap:bookworm"};
  if (interpreter == "node" && one_of(k_bookworm_node_images, image)) {
    return "18.20.4";
  }
  return std::nullopt;
}

}  // namespace sandshim::shim
