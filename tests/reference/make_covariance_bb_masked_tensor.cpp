// Writes tests/reference/tensors/covariance_bb_masked.hdf5 with our TensorWriter: one channel with a
// data covariance and a bin without MC statistics (BB-masked in lite mode), for --covarianceFit with
// normal-multiplicative lite BB, where rabbit solves the masked bin as free (docs/likelihood.md "BB
// derivative corner cases" item 2). Deterministic; built like make_beta_variations_tensor.cpp (see there).
#include <Eigen/Core>
#include <cmath>
#include <cstdio>
#include <vector>

#include "rabbit/io/tensor_writer.hpp"
int main(int argc, char** argv) {
  using namespace rabbit;
  const int nb = 8;
  std::vector<double> sig(nb), bkg(nb), sw2(nb), bw2(nb), data(nb);
  for (int i = 0; i < nb; ++i) {
    const double x = -1.75 + 0.5 * i;
    sig[i] = 120.0 * std::exp(-0.5 * x * x);
    bkg[i] = 60.0 - 4.0 * i;
    sw2[i] = sig[i] * (0.12 + 0.02 * i);
    bw2[i] = bkg[i] * (0.25 - 0.015 * i);
    data[i] = std::round(1.08 * sig[i] + 0.97 * bkg[i] + 6.0 * std::sin(1.3 * i));
  }
  sw2[3] = 0.0;
  bw2[3] = 0.0;  // a bin without MC statistics: BB-masked
  TensorWriter w;
  w.add_channel("ch0", {axis::regular(nb, -2, 2, "x")});
  w.add_data("ch0", data);
  Eigen::MatrixXd cov = Eigen::MatrixXd::Zero(nb, nb);
  for (int i = 0; i < nb; ++i) {
    cov(i, i) = data[i];
    if (i + 1 < nb) cov(i, i + 1) = cov(i + 1, i) = 0.3 * std::sqrt(data[i] * data[i + 1]);
  }
  w.add_data_covariance(cov);
  w.add_process("ch0", "sig", sig, true, sw2);
  w.add_process("ch0", "bkg", bkg, false, bw2);
  w.add_norm_systematic("norm", {"sig", "bkg"}, "ch0", {1.03});
  std::vector<double> up(nb), dn(nb);
  for (int i = 0; i < nb; ++i) {
    const double s = 0.02 * (i - 3.5);
    up[i] = bkg[i] * (1 + s);
    dn[i] = bkg[i] * (1 - 0.8 * s);
  }
  w.add_systematic("slope_bkg", "bkg", "ch0", up, dn);
  w.write(argv[1]);
}
