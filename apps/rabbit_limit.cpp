// rabbit_limit: asymptotic CLs upper limits on parameters (docs/user-guide.md "rabbit_limit").
#include "rabbit/cli/limits.hpp"
#include "rabbit/io/hdf5_reader.hpp"

int main(int argc, char** argv) {
  rabbit::h5::configure_hdf5_for_application();  // docs/reliability.md "HDF5's error printing and open files"
  return rabbit::cli::rabbit_limit_main(argc, argv);
}
