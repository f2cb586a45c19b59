#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/tar.hpp"
#include "common/tar_extract.hpp"
#include "test_shim_support.hpp"

using sandshim::test::ScratchDir;
namespace tar = sandshim::tar;
namespace fs = std::filesystem;

namespace {

tar::Entry file(const std::string& path, const std::string& data, uint32_t mode = 0644) {
  return {path, tar::Kind::file, mode, 0, 0, 0, "", data};
}

tar::Entry directory(const std::string& path) {
  return {path, tar::Kind::directory, 0755, 0, 0, 0, "", ""};
}

std::string archive_of(const std::vector<tar::Entry>& entries) {
  tar::Writer writer;
  for (const auto& entry : entries) {
    writer.add(entry);
  }
  return writer.finish();
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("tar: what the writer writes, the reader reads back", "[tar]") {
  std::string long_path = "top/" + std::string(120, 'd') + "/" + std::string(110, 'f');
  tar::Entry link{"top/link", tar::Kind::symlink, 0777, 0, 0, 0, std::string(150, 'l'), ""};
  std::string text =
      archive_of({directory("top"), file("top/a.py", "print(1)\n", 0755), file(long_path, ""),
                  file("top/big", std::string(70000, 'x')), link});
  CHECK(text.size() % 512 == 0);
  auto read = tar::read(text);
  REQUIRE(read.error.empty());
  REQUIRE(read.entries.size() == 5);
  CHECK(read.entries[0].kind == tar::Kind::directory);
  CHECK(read.entries[0].path == "top");
  CHECK(read.entries[1].data == "print(1)\n");
  CHECK(read.entries[1].mode == 0755);
  CHECK(read.entries[2].path == long_path);
  CHECK(read.entries[3].data.size() == 70000);
  CHECK(read.entries[4].kind == tar::Kind::symlink);
  CHECK(read.entries[4].link == std::string(150, 'l'));
}

TEST_CASE("tar: the system's tar reads what the writer writes", "[tar]") {
  ScratchDir dir;
  std::string long_name = std::string(130, 'n');
  std::ofstream(dir.path() / "a.tar", std::ios::binary)
      << archive_of({directory("ws"), file("ws/x.txt", "hello"), file("ws/" + long_name, "long")});
  std::string command = "tar -xf " + (dir.path() / "a.tar").string() + " -C " + dir.path().string();
  REQUIRE(std::system(command.c_str()) == 0);
  CHECK(read_text(dir.path() / "ws/x.txt") == "hello");
  CHECK(read_text(dir.path() / "ws" / long_name) == "long");
}

TEST_CASE("tar: the reader refuses damaged and oversized archives", "[tar]") {
  std::string good = archive_of({file("a", "content")});
  CHECK(tar::read("").error == "the archive is empty");
  CHECK(tar::read(good.substr(0, 600)).error == "the archive ends inside an entry's data");
  CHECK(tar::read(good.substr(0, 1024)).error ==
        "the archive ends without its end-of-archive blocks");
  std::string bad_sum = good;
  bad_sum[0] = 'b';
  CHECK(tar::read(bad_sum).error == "a header's checksum does not match");
  CHECK(tar::read(good, {100, 3}).error == "the archive holds more than 3 bytes");
  CHECK(tar::read(archive_of({file("a", ""), file("b", "")}), {1, 100}).error ==
        "the archive holds more than 1 entries");
  CHECK(tar::read(good, {}).entries.size() == 1);
}

TEST_CASE("tar: paths that would leave the directory are named", "[tar]") {
  CHECK(tar::unsafe_path("/etc/passwd") == "an absolute path");
  CHECK(tar::unsafe_path("a/../../b") == "a path with ..");
  CHECK(tar::unsafe_path("..") == "a path with ..");
  CHECK(tar::unsafe_path("") == "an empty path");
  CHECK_FALSE(tar::unsafe_path("a/..b/c"));
  CHECK_FALSE(tar::unsafe_path("out/file"));
}

TEST_CASE("tar: extraction writes beneath the directory and refuses escapes whole", "[tar]") {
  ScratchDir dir;
  fs::create_directories(dir.path() / "out");
  auto extract = [&](const std::vector<tar::Entry>& entries) {
    return tar::extract_beneath(dir.path() / "out", entries, "out");
  };
  auto written = extract({directory("out"), directory("out/sub"), file("out/sub/r.txt", "ok")});
  REQUIRE(written.error.empty());
  CHECK(written.files == 1);
  CHECK(written.bytes == 2);
  CHECK(read_text(dir.path() / "out/sub/r.txt") == "ok");

  for (const auto& [entries, why] : std::vector<std::pair<std::vector<tar::Entry>, std::string>>{
           {{file("out/../escape", "x")}, "a path with .."},
           {{file("/tmp/escape", "x")}, "an absolute path"},
           {{file("elsewhere/x", "x")}, "a path outside \"out\""},
           {{{"out/l", tar::Kind::symlink, 0777, 0, 0, 0, "/etc", ""}}, "a link"},
           {{{"out/h", tar::Kind::hardlink, 0644, 0, 0, 0, "out/sub/r.txt", ""}}, "a link"},
           {{{"out/dev", tar::Kind::other, 0644, 0, 0, 0, "", ""}}, "neither a file"},
       }) {
    std::vector<tar::Entry> with_good = {file("out/first.txt", "x")};
    with_good.insert(with_good.end(), entries.begin(), entries.end());
    auto refused = extract(with_good);
    CHECK_THAT(refused.error, Catch::Contains(why));
    CHECK_FALSE(fs::exists(dir.path() / "out/first.txt"));  // refused before any write
  }
}

TEST_CASE("tar: a link planted on this side does not redirect a write", "[tar]") {
  ScratchDir dir;
  fs::create_directories(dir.path() / "out");
  fs::create_directories(dir.path() / "target");
  fs::create_directory_symlink(dir.path() / "target", dir.path() / "out/sub");
  fs::create_symlink(dir.path() / "target/f", dir.path() / "out/f");
  auto into_dir = tar::extract_beneath(dir.path() / "out", {file("out/sub/x", "x")}, "out");
  CHECK_FALSE(into_dir.error.empty());
  auto onto_file = tar::extract_beneath(dir.path() / "out", {file("out/f", "x")}, "out");
  CHECK_FALSE(onto_file.error.empty());
  CHECK(fs::is_empty(dir.path() / "target"));
}

TEST_CASE("tar: set-id bits never reach this machine", "[tar]") {
  ScratchDir dir;
  fs::create_directories(dir.path() / "out");
  auto written =
      tar::extract_beneath(dir.path() / "out", {file("out/run", "#!/bin/sh\n", 06755)}, "out");
  REQUIRE(written.error.empty());
  struct stat st {};
  REQUIRE(::stat((dir.path() / "out/run").c_str(), &st) == 0);
  CHECK((st.st_mode & 06000) == 0);
  CHECK((st.st_mode & 0100) != 0);
}
