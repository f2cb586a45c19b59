#include "common/pep440.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <string>
#include <vector>

#include "common/strings.hpp"

namespace sandshim {

namespace {

using Release = std::vector<long>;

// "3.11.2" -> {3, 11, 2}; nullopt for anything but dot-separated numbers.
std::optional<Release> release_of(std::string_view text) {
  Release release;
  while (true) {
    size_t dot = std::min(text.find('.'), text.size());
    std::string_view part = text.substr(0, dot);
    long number = 0;
    auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), number);
    if (part.empty() || error != std::errc() || end != part.data() + part.size() ||
        release.size() > 8) {
      return std::nullopt;
    }
    release.push_back(number);
    if (dot == text.size()) {
      return release;
    }
    text.remove_prefix(dot + 1);
  }
}

int compare(Release a, Release b) {
  size_t size = std::max(a.size(), b.size());
  a.resize(size, 0);
  b.resize(size, 0);
  return a < b ? -1 : a > b ? 1 : 0;
}

bool starts_with_release(const Release& version, const Release& prefix) {
  Release padded = version;
  padded.resize(std::max(version.size(), prefix.size()), 0);
  return std::equal(prefix.begin(), prefix.end(), padded.begin());
}

std::optional<bool> clause_holds(const Release& version, std::string_view version_text,
                                 std::string_view clause) {
  static constexpr std::array<std::string_view, 8> k_operators = {
      "===", "~=", "==", "!=", "<=", ">=", "<", ">"};
  auto op = std::find_if(k_operators.begin(), k_operators.end(),
                         [&](std::string_view candidate) { return clause.starts_with(candidate); });
  if (op == k_operators.end()) {
    return std::nullopt;
  }
  std::string operand = trim(clause.substr(op->size()));
  if (*op == "===") {
    return operand == version_text;
  }
  bool wildcard = operand.ends_with(".*");
  if (wildcard && *op != "==" && *op != "!=") {
    return std::nullopt;
  }
  std::optional<Release> wanted =
      release_of(wildcard ? std::string_view(operand).substr(0, operand.size() - 2) : operand);
  if (!wanted) {
    return std::nullopt;
  }
  int order = compare(version, *wanted);
  if (*op == "==") {
    return wildcard ? starts_with_release(version, *wanted) : order == 0;
  }
  if (*op == "!=") {
    return wildcard ? !starts_with_release(version, *wanted) : order != 0;
  }
  if (*op == "~=") {
    if (wanted->size() < 2) {
      return std::nullopt;
    }
    Release prefix(wanted->begin(), wanted->end() - 1);
    return order >= 0 && starts_with_release(version, prefix);
  }
  return *op == "<=" ? order <= 0 : *op == ">=" ? order >= 0 : *op == "<" ? order < 0 : order > 0;
}

}  // namespace

std::optional<bool> pep440_satisfies(std::string_view version, std::string_view specifiers) {
  std::string version_text = trim(version);
  std::optional<Release> release = release_of(version_text);
  if (!release) {
    return std::nullopt;
  }
  bool holds = true;
  while (!specifiers.empty()) {
    size_t comma = std::min(specifiers.find(','), specifiers.size());
    std::string clause = trim(specifiers.substr(0, comma));
    specifiers.remove_prefix(std::min(comma + 1, specifiers.size()));
    if (clause.empty()) {
      continue;
    }
    std::optional<bool> result = clause_holds(*release, version_text, clause);
    if (!result) {
      return std::nullopt;
    }
    holds = holds && *result;
  }
  return holds;
}

}  // namespace sandshim
