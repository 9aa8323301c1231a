// Writes tests/reference/tensors/angular.hdf5 with our TensorWriter, for the AngularCoefficients and
// LamTung mappings (docs/user-guide.md "Mappings"): an observed channel ch0 and a masked channel ch_gen,
// both pt (4 bins) × helicity (5 bins, -1..3: bin 0 is the unpolarised σ_UL, bins 1.. the σ_i), a signal
// whose helicity composition a shape systematic changes, and a background in ch0. Deterministic (no
// random numbers). Not part of the build; see tests/reference/README.md:
//   g++ -std=c++20 -O1 -I include -I /usr/include/eigen3 -I /usr/include/hdf5/serial \
//     tests/reference/make_angular_tensor.cpp build/librabbit_io.a build/librabbit_core.a \
//     -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5 -lblosc -lz -lfmt -o /tmp/make_angular && \
//     /tmp/make_angular OUT.hdf5
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "rabbit/io/axis_factories.hpp"
#include "rabbit/io/tensor_writer.hpp"

int main(int argc, char** argv) {
  using namespace rabbit;
  const std::string out = argc > 1 ? argv[1] : "angular.hdf5";
  const int npt = 4, nhel = 5, nb = npt * nhel;
  const double coefficient[nhel] = {1.0, 0.35, 0.12, 0.22, 0.08};  // σ_UL, then σ_i / σ_UL
  std::vector<double> sig(nb), bkg(nb), data(nb), gen(nb), pol_up(nb), pol_dn(nb), gen_up(nb), gen_dn(nb),
      slope_up(nb), slope_dn(nb);
  for (int p = 0; p < npt; ++p)
    for (int h = 0; h < nhel; ++h) {
      const int b = p * nhel + h;
      sig[b] = 400.0 * std::exp(-0.3 * p) * coefficient[h] * (1.0 + 0.1 * p * h);
      bkg[b] = 30.0 + 5.0 * p + 2.0 * h;
      data[b] = std::round(1.06 * sig[b] + 0.95 * bkg[b] + 4.0 * std::sin(1.7 * b));
      gen[b] = 1.3 * sig[b];
      const double s = 0.04 * (h - 1.5);  // moves yield between helicity states
      pol_up[b] = sig[b] * (1.0 + s);
      pol_dn[b] = sig[b] * (1.0 - 0.8 * s);
      gen_up[b] = gen[b] * (1.0 + s);
      gen_dn[b] = gen[b] * (1.0 - 0.8 * s);
      slope_up[b] = bkg[b] * (1.0 + 0.03 * (p - 1.5));
      slope_dn[b] = bkg[b] * (1.0 - 0.03 * (p - 1.5));
    }
  const std::vector<AxisInfo> axes = {axis::regular(npt, 0, 40, "pt", false, false),
                                      axis::regular(nhel, -1, 4, "helicity", false, false)};
  TensorWriter w;
  w.add_channel("ch0", axes);
  w.add_channel("ch_gen", axes, true);
  w.add_data("ch0", data);
  w.add_process("ch0", "sig", sig, true);
  w.add_process("ch0", "bkg", bkg, false);
  w.add_process("ch_gen", "sig", gen, true);
  w.add_norm_systematic("norm", {"sig", "bkg"}, "ch0", {1.04});
  w.add_systematic("pol", "sig", "ch0", pol_up, pol_dn);
  w.add_systematic("pol", "sig", "ch_gen", gen_up, gen_dn);
  w.add_systematic("slope_bkg", "bkg", "ch0", slope_up, slope_dn);
  w.write(out);
  std::printf("wrote %s\n", out.c_str());
  return 0;
}
