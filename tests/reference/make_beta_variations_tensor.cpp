// Writes tests/reference/tensors/beta_variations.hdf5 with our TensorWriter: one observed channel
// (ch0, 8 bins: sig, bkg), one masked channel (ch0_masked, 8 bins: sig) that receives beta
// variations of sig from ch0 (docs/likelihood.md "Beta variations"), a normalisation and a shape systematic.
// Deterministic (no random numbers). Not part of the build; see tests/reference/README.md:
//   g++ -std=c++20 -O1 -I include -I /usr/include/eigen3 -I /usr/include/hdf5/serial \
//     tests/reference/make_beta_variations_tensor.cpp build-cpu/librabbit_io.a build-cpu/librabbit_core.a \
//     -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5 -lblosc -lz -lfmt -o /tmp/make_bv && /tmp/make_bv
//     OUT.hdf5
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "rabbit/io/tensor_writer.hpp"

int main(int argc, char** argv) {
  using namespace rabbit;
  const std::string out = argc > 1 ? argv[1] : "beta_variations.hdf5";
  const int nb = 8;
  std::vector<double> sig(nb), bkg(nb), sig_w2(nb), bkg_w2(nb), data(nb), masked(nb), masked_w2(nb);
  for (int i = 0; i < nb; ++i) {
    const double x = -1.75 + 0.5 * i;
    sig[i] = 120.0 * std::exp(-0.5 * x * x);
    bkg[i] = 60.0 - 4.0 * i;
    sig_w2[i] = sig[i] * (0.12 + 0.02 * i);  // MC weights ~0.1-0.3: visible BB effects
    bkg_w2[i] = bkg[i] * (0.25 - 0.015 * i);
    data[i] = std::round(1.08 * sig[i] + 0.97 * bkg[i] + 6.0 * std::sin(1.3 * i));
    masked[i] = 0.8 * sig[i] + 5.0;
    masked_w2[i] = masked[i] * 0.2;
  }
  TensorWriter w;
  w.add_channel("ch0", {axis::regular(nb, -2, 2, "x")});
  w.add_channel("ch0_masked", {axis::regular(nb, -2, 2, "x")}, true);
  w.add_data("ch0", data);
  w.add_process("ch0", "sig", sig, true, sig_w2);
  w.add_process("ch0", "bkg", bkg, false, bkg_w2);
  w.add_process("ch0_masked", "sig", masked, true, masked_w2);
  w.add_norm_systematic("norm", {"sig", "bkg"}, "ch0", {1.03});
  std::vector<double> up(nb), dn(nb), mup(nb), mdn(nb);
  for (int i = 0; i < nb; ++i) {
    const double s = 0.02 * (i - 3.5);
    up[i] = bkg[i] * (1.0 + s);
    dn[i] = bkg[i] * (1.0 - 0.8 * s);
    mup[i] = masked[i] * (1.0 + 0.5 * s);
    mdn[i] = masked[i] * (1.0 - 0.5 * s);
  }
  w.add_systematic("slope_bkg", "bkg", "ch0", up, dn);
  w.add_systematic("slope_sig_masked", "sig", "ch0_masked", mup, mdn);
  // variation of masked bin d per unit (√k Δβ) of sig in observed bin s: mostly the same bin,
  // some migration to the neighbours
  std::vector<double> var(nb * nb, 0.0);
  for (int d = 0; d < nb; ++d)
    for (int s = 0; s < nb; ++s) {
      const int dist = std::abs(d - s);
      if (dist == 0)
        var[d * nb + s] = 0.05 * masked[d];
      else if (dist == 1)
        var[d * nb + s] = 0.015 * masked[d];
    }
  w.add_beta_variations("sig", "ch0", "ch0_masked", var);
  w.write(out);
  std::printf("wrote %s\n", out.c_str());
  return 0;
}
