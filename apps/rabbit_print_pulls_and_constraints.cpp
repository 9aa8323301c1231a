// rabbit_print_pulls_and_constraints: pulls and constraints of a rabbit-cpp result file (§5.1).
#include "rabbit/cli/reports.hpp"

int main(int argc, char** argv) { return rabbit::cli::print_pulls_main(argc, argv); }
