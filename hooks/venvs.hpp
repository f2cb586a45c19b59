#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace sandshim::hooks {

// A Python virtual environment as its pyvenv.cfg describes it.
struct Venv {
  std::filesystem::path dir;  // the directory holding pyvenv.cfg
  std::string home;           // the interpreter's directory its bin/python links to
  std::string version;        // "3.11.2"
  bool system_site_packages = false;
};

// The interpreter an image provides, where a venv made from it links.
struct ImagePython {
  std::string home;     // "/usr/bin"
  std::string version;  // "3.11": major.minor
};

using ReadFile = std::function<std::optional<std::string>(const std::filesystem::path& file)>;

// The venv at `dir`, when `dir/pyvenv.cfg` can be read: venvs are told apart from other
// directories by that file alone, as python itself does.
std::optional<Venv> read_venv(const std::filesystem::path& dir, const ReadFile& read);

// The venv directory a program path such as `.venv/bin/python` or `env/bin/activate` would
// belong to (`<dir>/bin/<file>`), made absolute against `cwd`; nullopt for any other shape.
std::optional<std::filesystem::path> venv_dir_of(std::string_view program,
                                                 const std::filesystem::path& cwd);

// The interpreter of sandshim's own images (install/images.sh builds them from Debian
// bookworm); nullopt for an image sandshim did not build, whose python it cannot know.
std::optional<ImagePython> image_python_of(std::string_view image);

// Why `venv` cannot run inside `image` (version or interpreter path differ, or it lies outside
// the workspace the sandbox mounts), or empty when it can.
std::string venv_mismatch(const Venv& venv, const std::string& image,
                          const std::optional<ImagePython>& python,
                          const std::filesystem::path& workspace);

}  // namespace sandshim::hooks
