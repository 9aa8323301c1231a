// rabbit_compare: two fit results compared quantity by quantity (docs/user-guide.md).
#include <iostream>

#include "rabbit/cli/compare_main.hpp"

int main(int argc, char** argv) {
  return rabbit::cli::compare_main(argc, argv, std::cout, std::cerr);
}
