#include "hooks/venvs.hpp"

#include <sstream>

#include "common/paths.hpp"
#include "common/strings.hpp"

namespace sandshim::hooks {

namespace fs = std::filesystem;

namespace {

// sandshim's images and the python each holds: install/images.sh installs Debian bookworm's
// python3 (3.11) in the python and wrap images.
struct KnownImage {
  std::string_view image;
  std::string_view home;
  std::string_view version;
};
constexpr KnownImage k_known_images[] = {
    {"sandshim/python:bookworm", "/usr/bin", "3.11"},
    {"sandshim/wrap:bookworm", "/usr/bin", "3.11"},
};

std::string trimmed(std::string_view text) {
  size_t begin = text.find_first_not_of(" \t\r");
  size_t end = text.find_last_not_of(" \t\r");
  return begin == std::string_view::npos ? std::string()
                                         : std::string(text.substr(begin, end - begin + 1));
}

// "3.11" of "3.11.2" or "3.13.0.final.0".
std::string major_minor(std::string_view version) {
  size_t first = version.find('.');
  size_t second = first == std::string_view::npos ? first : version.find('.', first + 1);
  return std::string(version.substr(0, second));
}

// /bin and /usr/bin are one directory on a merged-/usr system such as bookworm's images.
std::string without_usr_merge(std::string_view home) {
  std::string path = fs::path(home).lexically_normal().string();
  while (path.size() > 1 && path.ends_with('/')) {
    path.pop_back();
  }
  return path.starts_with("/usr/") ? path.substr(4) : path;
}

void apply_line(Venv& venv, std::string_view line) {
  size_t equals = line.find('=');
  if (equals == std::string_view::npos) {
    return;
  }
  std::string key = trimmed(line.substr(0, equals));
  std::string value = trimmed(line.substr(equals + 1));
  if (key == "home") {
    venv.home = value;
  } else if (key == "version" || (key == "version_info" && venv.version.empty())) {
    venv.version = value;
  } else if (key == "include-system-site-packages") {
    venv.system_site_packages = value == "true";
  }
}

}  // namespace

std::optional<Venv> read_venv(const fs::path& dir, const ReadFile& read) {
  std::optional<std::string> text = read ? read(dir / "pyvenv.cfg") : std::nullopt;
  if (!text) {
    return std::nullopt;
  }
  Venv venv{dir, "", "", false};
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    apply_line(venv, line);
  }
  return venv;
}

std::optional<fs::path> venv_dir_of(std::string_view program, const fs::path& cwd) {
  return bin_parent_of(program, cwd);
}

std::optional<ImagePython> image_python_of(std::string_view image) {
  for (const KnownImage& known : k_known_images) {
    if (known.image == image) {
      return ImagePython{std::string(known.home), std::string(known.version)};
    }
  }
  return std::nullopt;
}

std::string venv_mismatch(const Venv& venv, const std::string& image,
                          const std::optional<ImagePython>& python, const fs::path& workspace) {
  fs::path relative = venv.dir.lexically_relative(workspace);
  if (relative.empty() || *relative.begin() == "..") {
    return "it is outside the workspace " + quoted(workspace.string()) +
           ", which is all the sandbox sees";
  }
  if (!python) {
    return "";  // not sandshim's image: the run itself says whether its python fits
  }
  bool same_version = major_minor(venv.version) == python->version;
  bool same_home = without_usr_merge(venv.home) == without_usr_merge(python->home);
  if (same_version && same_home) {
    return "";
  }
  return "it was made by python " + (venv.version.empty() ? "?" : venv.version) + " in " +
         quoted(venv.home) + ", and the image " + image + " has python " + python->version +
         " in " + python->home;
}

}  // namespace sandshim::hooks
