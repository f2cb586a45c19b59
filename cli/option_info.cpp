#include "cli/option_info.hpp"

#include <algorithm>
#include <boost/program_options.hpp>

#include "common/strings.hpp"

namespace sandshim::cli {

namespace po = boost::program_options;

namespace {

// "SIZE (=64m)" -> "SIZE": Boost appends the default to the value's name.
std::string bare_value_name(const po::option_description& option) {
  std::string name = option.semantic()->name();
  return name.substr(0, name.find(" (="));
}

std::vector<std::string> split_choices(const std::string& value_name) {
  if (value_name.find('|') == std::string::npos) {
    return {};
  }
  std::vector<std::string> choices;
  size_t begin = 0;
  while (begin <= value_name.size()) {
    size_t end = std::min(value_name.find('|', begin), value_name.size());
    choices.push_back(value_name.substr(begin, end - begin));
    begin = end + 1;
  }
  return choices;
}

OptionInfo info_of(const po::option_description& option) {
  OptionInfo info;
  info.long_name = option.long_name();
  std::string short_form =
      option.canonical_display_name(po::command_line_style::allow_dash_for_short);
  if (short_form.size() == 2 && short_form[0] == '-') {
    info.short_name = short_form[1];
  }
  info.takes_value = option.semantic()->max_tokens() > 0;
  if (info.takes_value) {
    info.value_name = bare_value_name(option);
    info.choices = split_choices(info.value_name);
  }
  info.help = option.description();
  return info;
}

}  // namespace

std::vector<OptionInfo> options_of(const CommandDoc& doc) {
  std::vector<OptionInfo> options;
  for (const auto& option : doc.options->options()) {
    options.push_back(info_of(*option));
  }
  return options;
}

std::vector<std::string> command_paths(const std::vector<CommandDoc>& docs) {
  std::vector<std::string> paths;
  for (const auto& doc : docs) {
    if (!doc.path.empty()) {
      paths.push_back(doc.path);
    }
  }
  return paths;
}

std::vector<std::string> next_words(const std::vector<CommandDoc>& docs, const CommandDoc& doc) {
  std::vector<std::string> words = doc.operands;
  std::string prefix = doc.path.empty() ? "" : doc.path + " ";
  for (const auto& other : docs) {
    bool child = other.path.starts_with(prefix) && other.path.size() > prefix.size() &&
                 other.path.find(' ', prefix.size()) == std::string::npos;
    if (child &&
        std::find(words.begin(), words.end(), other.path.substr(prefix.size())) == words.end()) {
      words.push_back(other.path.substr(prefix.size()));
    }
  }
  return words;
}

}  // namespace sandshim::cli
