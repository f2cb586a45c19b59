// PEP 440 version specifiers as pyproject.toml's requires-python uses them.

#include <catch2/catch.hpp>

#include "common/pep440.hpp"

using sandshim::pep440_satisfies;

TEST_CASE("PEP 440 specifiers: comparisons, compatible release, wildcards", "[pep440]") {
  CHECK(pep440_satisfies("3.11.2", ">=3.9") == true);
  CHECK(pep440_satisfies("3.11.2", ">=3.12") == false);
  CHECK(pep440_satisfies("3.11.2", ">=3.9, <3.12") == true);
  CHECK(pep440_satisfies("3.12.0", ">=3.9,<3.12") == false);
  CHECK(pep440_satisfies("3.11.2", "~=3.10") == true);  // >=3.10, ==3.*
  CHECK(pep440_satisfies("4.0", "~=3.10") == false);
  CHECK(pep440_satisfies("3.11.2", "~=3.10.1") == false);  // >=3.10.1, ==3.10.*
  CHECK(pep440_satisfies("3.11.2", "==3.11.*") == true);
  CHECK(pep440_satisfies("3.11.2", "!=3.11.*") == false);
  CHECK(pep440_satisfies("3.11.2", "==3.11") == false);  // 3.11.0 only
  CHECK(pep440_satisfies("3.11", "==3.11.0") == true);   // zeros padded
  CHECK(pep440_satisfies("3.11.2", "<=3.11.2,>3.11.1") == true);
  CHECK(pep440_satisfies("3.11.2", "===3.11.2") == true);
  CHECK(pep440_satisfies("3.11.2", "") == true);
}

TEST_CASE("PEP 440 forms it cannot read judge nothing", "[pep440]") {
  CHECK_FALSE(pep440_satisfies("3.13.0rc1", ">=3.9").has_value());
  CHECK_FALSE(pep440_satisfies("3.11.2", ">=3.9.*").has_value());
  CHECK_FALSE(pep440_satisfies("3.11.2", "^3.9").has_value());
  CHECK_FALSE(pep440_satisfies("3.11.2", "~=3").has_value());
  CHECK_FALSE(pep440_satisfies("3.11.2", ">=3.9a1").has_value());
}
