// rabbit_print_impacts: impacts of a rabbit-cpp result file (cli-and-output.md §5.2).
#include "rabbit/cli/reports.hpp"

int main(int argc, char** argv) { return rabbit::cli::print_impacts_main(argc, argv); }
