#include <fnmatch.h>

#include <catch2/catch.hpp>
#include <string>

#include "common/glob.hpp"

using sandshim::glob_match;
using sandshim::GlobCase;

TEST_CASE("globs match whole names like fnmatch", "[glob]") {
  const char* patterns[] = {"*",     "a*",  "*a",     "a?c",     "[ab]*", "[!ab]*", "[^a]x",
                            "[a-c]", "\\*", "*.env*", "[]]",     "[!]]",  "[",      "a[",
                            "**a*b", "*?*", ".env.*", "id_rsa*", "[a-]",  "*[0-9]"};
  const char* texts[] = {"",    "a",    "abc",        "xa",         "*",  "]",   "[", "a[",
                         "b-x", ".env", ".env.local", "id_rsa.pub", "ab", "aab", "-", "x9"};
  for (const char* p : patterns) {
    for (const char* t : texts) {
      INFO(p << " vs " << t);
      CHECK(glob_match(p, t, GlobCase::sensitive) == (::fnmatch(p, t, 0) == 0));
    }
  }
}

TEST_CASE("ignoring case folds letters in literals and ranges", "[glob]") {
  CHECK(glob_match("*TOKEN*", "LC_AccessToken", GlobCase::ignored));
  CHECK_FALSE(glob_match("*TOKEN*", "LC_AccessToken", GlobCase::sensitive));
  CHECK(glob_match("[A-C]x", "bX", GlobCase::ignored));
}

TEST_CASE("many stars cost at most pattern times text", "[glob]") {
  std::string pattern = "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b";
  std::string text(5000, 'a');
  CHECK_FALSE(glob_match(pattern, text, GlobCase::sensitive));  // fnmatch takes minutes here
  CHECK(glob_match(pattern, text + "b", GlobCase::sensitive));
}
