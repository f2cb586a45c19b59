#include "cli/dispatch.hpp"

int main(int argc, char** argv) {
  sandshim::cli::exit_now(sandshim::cli::main_entry(argc, argv));
}
