// rabbit_print_impacts: impacts of a rabbit-cpp result file (docs/user-guide.md "Reports").
#include "rabbit/cli/reports.hpp"

int main(int argc, char** argv) {
  return rabbit::cli::print_impacts_main(argc, argv);
}
