// rabbit_print_pulls_and_constraints: pulls and constraints of a rabbit-cpp result file (docs/user-guide.md
// "Reports").
#include "rabbit/cli/reports.hpp"

int main(int argc, char** argv) {
  return rabbit::cli::print_pulls_main(argc, argv);
}
