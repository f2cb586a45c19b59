#include "cli/dispatch.hpp"

int main(int argc, char** argv) {
  return sandshim::cli::main_entry(argc, argv);
}
