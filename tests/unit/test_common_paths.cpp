#include <catch2/catch.hpp>

#include "common/paths.hpp"

using sandshim::companion_candidates;
using sandshim::companion_places;
using sandshim::find_companion;

TEST_CASE("a companion program is looked for beside the binary, then in libexec", "[paths]") {
  auto self = sandshim::self_executable();
  auto candidates = companion_candidates("sandshim-tls", "sandshim");
  REQUIRE(candidates.size() == 2);
  CHECK(candidates[0] == self.parent_path() / "sandshim-tls");
  CHECK(candidates[1] ==
        (self.parent_path() / ".." / "libexec" / "sandshim" / "sandshim-tls").lexically_normal());
  for (const auto& candidate : candidates) {
    CHECK(candidate.is_absolute());  // never a name the working directory could supply
  }
  CHECK_THAT(companion_places("sandshim-tls", "sandshim"),
             Catch::Contains(candidates[0].string()) && Catch::Contains(" and "));
}

TEST_CASE("a companion that is not there, or not executable, is not found", "[paths]") {
  CHECK_FALSE(find_companion("sandshim-no-such-program", "sandshim"));
  // The test binary itself is found beside itself: an executable regular file.
  auto self = sandshim::self_executable();
  CHECK(find_companion(self.filename().string(), "sandshim") == self);
}
