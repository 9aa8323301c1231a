// Writes tests/reference/tensors/abcd.hdf5 and extended_abcd.hdf5 with our TensorWriter, laid out as
// upstream's tests/make_abcd_tensor.py and make_extended_abcd_tensor.py lay theirs out (docs/model.md
// "Bin-dependent param models"), with smooth deterministic templates instead of random fills:
//   abcd.hdf5: ch_fakes (axes iso(2) × pt(5): A = iso:0, B = iso:1), ch_C and ch_D (pt(5)); signal in C and
//     D, nonprompt everywhere (A·C/B ≈ D), a lumi systematic on the signal.
//   extended_abcd.hdf5: ch_Ax, ch_Bx, ch_A, ch_B, ch_C, ch_D (pt(5)); signal and nonprompt in all six.
//   isomt.hdf5: one channel ch with axes mt(3) × relIso(2) × pt(6) × eta(2), the layout of rabbit's IsoMT
//     variants and of the smooth models (smoothing axis pt, outer axis eta); signal where relIso = 0 and
//     mt is the last bin, nonprompt everywhere (falling in pt, factorising in mt × relIso up to a slow
//     pt-dependent drift), ewk everywhere with a lumi systematic.
// Not part of the build; see tests/reference/README.md:
//   g++ -std=c++20 -O1 -I include -I /usr/include/eigen3 -I /usr/include/hdf5/serial \
//     tests/reference/make_abcd_tensors.cpp -L build -lrabbit_io -lrabbit_core -Wl,-rpath,$PWD/build \
//     -lfmt -o /tmp/make_abcd && /tmp/make_abcd tests/reference/tensors
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "rabbit/io/axis_factories.hpp"
#include "rabbit/io/tensor_writer.hpp"

namespace {

constexpr int kPt = 5;

/// A falling pt spectrum with `total` events of mean weight w: values and sums of squared weights
/// (Σw² = n·w²·1.01 for weights with a 10% spread, as upstream's normal(w, 0.1 w) fills).
struct Template {
  std::vector<double> values, sumw2;
};
Template spectrum(double total, double w, double slope) {
  Template t;
  double norm = 0.0;
  for (int i = 0; i < kPt; ++i) norm += std::exp(-slope * i);
  for (int i = 0; i < kPt; ++i) {
    const double n = total * std::exp(-slope * i) / norm;
    t.values.push_back(n * w);
    t.sumw2.push_back(n * w * w * 1.01);
  }
  return t;
}

/// Data: the sum of the templates with a deterministic wiggle of about one standard deviation.
std::vector<double> data(const std::vector<const Template*>& parts, double phase) {
  std::vector<double> out(kPt, 0.0);
  for (int i = 0; i < kPt; ++i) {
    for (const auto* p : parts) out[i] += p->values[i];
    out[i] = std::round(out[i] + std::sqrt(out[i]) * std::sin(1.7 * i + phase));
  }
  return out;
}

std::vector<double> concat(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

void write_abcd(const std::string& dir) {
  using namespace rabbit;
  const Template sig_C = spectrum(5000, 1.0, 0.1), sig_D = spectrum(5000, 1.0, 0.15);
  const Template np_A = spectrum(8000, 2.0, 0.3), np_B = spectrum(8000, 4.0, 0.3);
  const Template np_C = spectrum(6000, 1.5, 0.3), np_D = spectrum(3000, 0.75, 0.32);
  TensorWriter w;
  w.add_channel("ch_fakes", {axis::integer(0, 2, "iso"), axis::regular(kPt, 0, 50, "pt")});
  w.add_channel("ch_C", {axis::regular(kPt, 0, 50, "pt")});
  w.add_channel("ch_D", {axis::regular(kPt, 0, 50, "pt")});
  w.add_data("ch_fakes", concat(data({&np_A}, 0.3), data({&np_B}, 1.1)));
  w.add_data("ch_C", data({&sig_C, &np_C}, 2.0));
  w.add_data("ch_D", data({&sig_D, &np_D}, 2.9));
  w.add_process("ch_C", "signal", sig_C.values, true, sig_C.sumw2);
  w.add_process("ch_D", "signal", sig_D.values, true, sig_D.sumw2);
  w.add_process("ch_fakes", "nonprompt", concat(np_A.values, np_B.values), false,
                concat(np_A.sumw2, np_B.sumw2));
  w.add_process("ch_C", "nonprompt", np_C.values, false, np_C.sumw2);
  w.add_process("ch_D", "nonprompt", np_D.values, false, np_D.sumw2);
  w.add_norm_systematic("lumi", {"signal"}, "ch_C", {1.02});
  w.add_norm_systematic("lumi", {"signal"}, "ch_D", {1.02});
  w.write(dir + "/abcd.hdf5");
}

void write_extended_abcd(const std::string& dir) {
  using namespace rabbit;
  const char* channels[] = {"ch_Ax", "ch_Bx", "ch_A", "ch_B", "ch_C", "ch_D"};
  const Template sig[] = {spectrum(200, 0.05, 0.1), spectrum(200, 0.05, 0.1), spectrum(500, 0.1, 0.1),
                          spectrum(500, 0.1, 0.1),  spectrum(5000, 1.0, 0.1), spectrum(5000, 1.0, 0.12)};
  const Template np[] = {spectrum(10000, 3.0, 0.3), spectrum(10000, 9.0, 0.3), spectrum(8000, 2.0, 0.3),
                         spectrum(8000, 5.0, 0.3),  spectrum(6000, 1.5, 0.3),  spectrum(6000, 3.1, 0.31)};
  TensorWriter w;
  for (const char* ch : channels) w.add_channel(ch, {axis::regular(kPt, 0, 50, "pt")});
  for (int k = 0; k < 6; ++k) {
    w.add_data(channels[k], data({&sig[k], &np[k]}, 0.7 * k));
    w.add_process(channels[k], "signal", sig[k].values, true, sig[k].sumw2);
    w.add_process(channels[k], "nonprompt", np[k].values, false, np[k].sumw2);
  }
  w.write(dir + "/extended_abcd.hdf5");
}

void write_isomt(const std::string& dir) {
  using namespace rabbit;
  constexpr int kMt = 3, kIso = 2, kPtIso = 6, kEta = 2;
  const double mt_scale[] = {1.0, 0.6, 0.35}, iso_scale[] = {0.3, 1.0};
  std::vector<double> data, sig, np, ewk, sig2, np2, ewk2;
  for (int mt = 0; mt < kMt; ++mt)
    for (int iso = 0; iso < kIso; ++iso)
      for (int pt = 0; pt < kPtIso; ++pt)
        for (int eta = 0; eta < kEta; ++eta) {
          const double s = mt == kMt - 1 && iso == 0 ? 900.0 * std::exp(-0.12 * pt) * (1.0 + 0.1 * eta) : 0.0;
          const double n = 3000.0 * mt_scale[mt] * iso_scale[iso] * std::exp(-0.35 * pt) *
                           (1.0 + 0.15 * eta) * (1.0 + 0.04 * mt * pt);
          const double e = 150.0 * std::exp(-0.1 * pt) * (1.0 + 0.5 * mt);
          sig.push_back(s);
          np.push_back(n);
          ewk.push_back(e);
          sig2.push_back(0.01 * s);
          np2.push_back(1.5 * n);
          ewk2.push_back(0.05 * e);
          const double tot = s + n + e;
          data.push_back(std::round(tot + std::sqrt(tot) * std::sin(1.7 * data.size() + 0.4)));
        }
  TensorWriter w;
  w.add_channel("ch", {axis::regular(kMt, 0, 90, "mt"), axis::integer(0, kIso, "relIso"),
                       axis::regular(kPtIso, 25, 55, "pt"), axis::regular(kEta, -2.4, 2.4, "eta")});
  w.add_data("ch", data);
  w.add_process("ch", "signal", sig, true, sig2);
  w.add_process("ch", "nonprompt", np, false, np2);
  w.add_process("ch", "ewk", ewk, false, ewk2);
  w.add_norm_systematic("lumi", {"signal", "ewk"}, "ch", {1.02});
  w.write(dir + "/isomt.hdf5");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  write_abcd(dir);
  write_extended_abcd(dir);
  write_isomt(dir);
  std::printf("wrote abcd.hdf5, extended_abcd.hdf5 and isomt.hdf5 in %s\n", dir.c_str());
  return 0;
}
