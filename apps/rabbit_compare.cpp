// rabbit_compare: two fit results compared quantity by quantity (docs/user-guide.md).
#include <iostream>

#include "rabbit/cli/compare_main.hpp"
#include "rabbit/io/hdf5_reader.hpp"

int main(int argc, char** argv) {
  rabbit::h5::configure_hdf5_for_application();  // docs/reliability.md "HDF5's error printing and open files"
  return rabbit::cli::compare_main(argc, argv, std::cout, std::cerr);
}
