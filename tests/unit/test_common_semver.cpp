#include <catch2/catch.hpp>

#include "common/semver.hpp"

using namespace sandshim;

namespace {

struct Case {
  const char* version;
  const char* range;
  bool satisfied;
};

}  // namespace

TEST_CASE("version ranges as package.json's engines write them", "[semver]") {
  const Case cases[] = {
      // Comparators, partial versions filled with zeros below and bumped above.
      {"18.19.0", ">=20", false},
      {"20.20.2", ">=20", true},
      {"20.0.0", ">=20.0.0", true},
      {"20.20.2", ">= 20", true},  // operator apart from its version
      {"18.19.0", ">=18 <21", true},
      {"21.0.0", ">=18 <21", false},
      {"20.5.1", ">20", false},
      {"21.0.0", ">20", true},
      {"20.99.0", "<=20", true},
      {"21.0.0", "<=20.x", false},
      {"19.9.9", "<20", true},
      {"20.0.0", "<20", false},
      // Exact and wildcard versions.
      {"20.11.1", "20", true},
      {"20.11.1", "20.x", true},
      {"20.11.1", "=20.11.1", true},
      {"20.11.2", "20.11.1", false},
      {"18.19.0", "*", true},
      {"18.19.0", "", true},
      {"v20.1.0", "v20", true},
      // Caret and tilde.
      {"18.20.0", "^18.17.0", true},
      {"19.0.0", "^18.17.0", false},
      {"18.16.0", "^18.17.0", false},
      {"0.2.9", "^0.2.3", true},
      {"0.3.0", "^0.2.3", false},
      {"0.0.4", "^0.0.3", false},
      {"20.1.9", "~20.1", true},
      {"20.2.0", "~20.1.0", false},
      {"20.9.0", "~20", true},
      // Alternatives and hyphen ranges.
      {"18.19.0", "^16 || ^18", true},
      {"20.0.0", "^16 || ^18", false},
      {"20.0.0", "18 - 20", true},
      {"21.0.0", "18 - 20", false},
      {"20.1.0", "18.0.0 - 20.1.0", true},
      {"20.1.1", "18.0.0 - 20.1.0", false},
  };
  for (const Case& c : cases) {
    INFO(c.version << " in " << c.range);
    CHECK(version_satisfies(c.version, c.range) == std::optional<bool>(c.satisfied));
  }
}

TEST_CASE("what is not a plain version range is not judged", "[semver]") {
  CHECK_FALSE(version_satisfies("20.1.0", "lts/*").has_value());
  CHECK_FALSE(version_satisfies("20.1.0", ">=20.0.0-rc.1").has_value());
  CHECK_FALSE(version_satisfies("20.1.0", "node").has_value());
  CHECK_FALSE(version_satisfies("20.1.0", ">=1.2.3.4").has_value());
  CHECK_FALSE(version_satisfies("", ">=20").has_value());
  CHECK_FALSE(version_satisfies("twenty", ">=20").has_value());
}

TEST_CASE("the lowest major a range admits", "[semver]") {
  CHECK(lowest_major(">=20") == 20);
  CHECK(lowest_major(">=20.18.1") == 20);
  CHECK(lowest_major("^18.18.0 || ^20.9.0 || >=21.1.0") == 18);
  CHECK(lowest_major("20 || >=22") == 20);
  CHECK(lowest_major("*") == 0);
  CHECK(lowest_major(">= 14.17") == 14);
  CHECK(lowest_major("16 - 18") == 16);
  CHECK_FALSE(lowest_major("~18.18").has_value());  // neither probe of 18 meets it
  CHECK_FALSE(lowest_major("lts/*").has_value());
  CHECK_FALSE(lowest_major("<0").has_value());
}

TEST_CASE("npm's package names, never a path", "[semver]") {
  for (const char* name :
       {"undici", "find-my-way", "@fastify/merge-json-schemas", "lodash.merge", "a_b", "x~y"}) {
    CHECK(is_npm_package_name(name));
  }
  for (const char* name : {"", "..", "../x", "a/b", "@scope", "@/x", "@s/../x", "@s/x/y", ".bin",
                           "_hidden", "Upper", "a b", "a\nb"}) {
    CHECK_FALSE(is_npm_package_name(name));
  }
  CHECK_FALSE(is_npm_package_name(std::string(215, 'a')));
}
