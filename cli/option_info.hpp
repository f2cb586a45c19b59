#pragma once

#include <string>
#include <vector>

#include "common/command_doc.hpp"

namespace sandshim::cli {

// One option of a command as the generators need it, read from its options_description.
struct OptionInfo {
  std::string long_name;   // "memory" (no dashes)
  char short_name = '\0';  // 'h', or '\0'
  bool takes_value = false;
  std::string value_name;            // "SIZE", "none|bridge"; empty without a value
  std::vector<std::string> choices;  // a value name "a|b|c" lists the only values
  std::string help;
};

// The options of `doc`, in --help order.
std::vector<OptionInfo> options_of(const CommandDoc& doc);

// Every command path that has its own words after `sandshim`: "run", "audit", "audit list".
std::vector<std::string> command_paths(const std::vector<CommandDoc>& docs);

// The words that may follow `doc`'s path: its subcommands, else its operand values.
std::vector<std::string> next_words(const std::vector<CommandDoc>& docs, const CommandDoc& doc);

}  // namespace sandshim::cli
