// rabbit_fit: binned profile-likelihood fit of a rabbit input tensor (docs/user-guide.md).
#include "rabbit/cli/run_fit.hpp"
#include "rabbit/io/hdf5_reader.hpp"

int main(int argc, char** argv) {
  rabbit::h5::configure_hdf5_for_application();  // docs/reliability.md "HDF5's error printing and open files"
  return rabbit::cli::rabbit_fit_main(argc, argv);
}
