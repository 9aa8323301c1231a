// rabbit_fit: binned profile-likelihood fit of a rabbit input tensor (docs/user-guide.md).
#include "rabbit/cli/run_fit.hpp"

int main(int argc, char** argv) {
  return rabbit::cli::rabbit_fit_main(argc, argv);
}
