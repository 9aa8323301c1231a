// rabbit_print_pulls_and_constraints: pulls and constraints of a rabbit-cpp result file (docs/user-guide.md
// "Reports").
#include "rabbit/cli/reports.hpp"
#include "rabbit/io/hdf5_reader.hpp"

int main(int argc, char** argv) {
  rabbit::h5::configure_hdf5_for_application();  // docs/reliability.md "HDF5's error printing and open files"
  return rabbit::cli::print_pulls_main(argc, argv);
}
