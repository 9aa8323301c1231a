// Prints a fit tensor's sizes through the installed rabbit::io library.
#include <iostream>

#include "rabbit/io/fit_input_data.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: tensor_sizes TENSOR.hdf5\n";
    return 2;
  }
  const rabbit::FitInputData data = rabbit::read_fit_input(argv[1]);
  std::cout << "bins " << data.nbins << " processes " << data.nproc << " systematics " << data.nsyst << "\n";
  return 0;
}
