#include <catch2/catch.hpp>

#include "install/doctor_versions.hpp"

using namespace sandshim::install;

TEST_CASE("the version in an interpreter's --version answer", "[doctor][versions]") {
  CHECK(version_in("Python 3.11.2\n") == "3.11.2");
  CHECK(version_in("v18.20.4\n") == "18.20.4");
  CHECK(version_in("Python 3.13.0rc1") == "3.13.0");
  CHECK_FALSE(version_in("no version here 42").has_value());
  CHECK_FALSE(version_in("").has_value());
}

TEST_CASE("versions agree on major and minor, or not", "[doctor][versions]") {
  CHECK(same_feature_version("3.11.2", "3.11.7"));
  CHECK_FALSE(same_feature_version("3.11.2", "3.12.1"));
  CHECK_FALSE(same_feature_version("20.20.2", "18.20.4"));
  CHECK_FALSE(same_feature_version("20.1.0", "20.11.0"));
}

TEST_CASE("a mismatch is one warning naming both versions and the image fix",
          "[doctor][versions]") {
  InterpreterVersions versions{"node", "sandshim/node:bookworm", "/usr/bin/node", "20.20.2",
                               "18.20.4"};
  CHECK(version_mismatch(versions) ==
        "node: the host's /usr/bin/node is 20.20.2, sandshim/node:bookworm has 18.20.4");
  CHECK(version_fix(versions) ==
        "an image with node 20.20.2, mapped with `images.node = IMAGE`, or "
        "`images.node = host` (the host's own)");
  versions.inside = "20.20.9";
  CHECK(version_mismatch(versions).empty());
  versions.inside.reset();
  CHECK(version_mismatch(versions) ==
        "node: sandshim/node:bookworm gave no version; the host's /usr/bin/node is 20.20.2");
  versions.host.reset();
  CHECK(version_mismatch(versions).empty());  // nothing on the host to compare with
}
