#include "common/command_doc.hpp"

#include <errno.h>  // program_invocation_short_name

#include <boost/program_options.hpp>
#include <iostream>

#include "common/error.hpp"

namespace sandshim {

namespace po = boost::program_options;

namespace {

// "PROGRAM PATH" as the user typed it, for the hint under a usage error.
std::string program_words(const CommandDoc& doc) {
  std::string words = program_invocation_short_name;
  if (!doc.path.empty()) {
    words += " " + doc.path;
  }
  return words;
}

}  // namespace

CommandDoc make_command_doc(std::string path, std::string summary, std::string usage,
                            const po::options_description& options, std::string epilogue,
                            std::vector<std::string> operands) {
  auto with_help = std::make_shared<po::options_description>(options);
  with_help->add_options()("help,h", "show this help");
  return CommandDoc{std::move(path),      std::move(summary),  std::move(usage),
                    std::move(with_help), std::move(epilogue), std::move(operands)};
}

void print_command_help(std::ostream& out, const CommandDoc& doc) {
  out << doc.usage << "\n\n" << *doc.options << doc.epilogue << std::flush;
}

bool parse_subcommand_options(const std::vector<std::string>& args, const CommandDoc& doc,
                              po::variables_map& vm,
                              const po::positional_options_description* positional,
                              const po::options_description* hidden) {
  po::options_description all = *doc.options;
  if (hidden != nullptr) {
    all.add(*hidden);
  }
  try {
    po::command_line_parser parser(args);
    parser.options(all);
    // No guessing: `--works rw` must not mean --workspace (an agent's abbreviation would slip
    // past every check that reads full option names).
    parser.style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing);
    if (positional != nullptr) {
      parser.positional(*positional);
    }
    po::store(parser.run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw Fatal(std::string(e.what()) + " (see `" + program_words(doc) + " --help`)",
                exit_code::k_usage);
  }
  if (vm.count("help") != 0) {
    print_command_help(std::cout, doc);
    return false;
  }
  return true;
}

}  // namespace sandshim
