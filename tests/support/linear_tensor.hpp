#pragma once
// The linear model of the CLI tests: additive ("normal") symmetric systematics, one signal with
// x = mu (with --allowNegativeParam), fitted with --chisqFit --noBinByBinStat the NLL is exactly
// quadratic, so its uncertainties, impacts and scans have closed forms.
#include <filesystem>
#include <string>
#include <vector>

#include "rabbit/io/tensor_writer.hpp"

namespace rabbit::test {

inline const std::vector<double> kSig = {5, 10, 20, 30, 20, 10};
inline const std::vector<double> kBkg = {100, 90, 80, 70, 60, 50};
inline const std::vector<double> kShape = {4, 2, 1, -1, -2, -4};  // additive shift per unit of "shape"
inline const std::vector<double> kData = {112, 104, 98, 112, 83, 58};

/// DIR/linear.hdf5: channel ch0 (6 bins), signal "sig", background "bkg", systematics "shape"
/// (on bkg) and "lumi" (5 % on both), both in the group "all".
inline std::string write_linear_tensor(const std::filesystem::path& dir) {
  TensorWriter w(SystematicType::normal);
  w.add_channel("ch0", {axis::regular(6, 0, 6, "x")});
  w.add_data("ch0", kData);
  w.add_process("ch0", "sig", kSig, true);
  w.add_process("ch0", "bkg", kBkg);
  SystematicOptions all;
  all.groups = std::vector<std::string>{"all"};
  std::vector<double> shape_var(6);
  for (int b = 0; b < 6; ++b) shape_var[b] = kBkg[b] + kShape[b];
  w.add_systematic("shape", "bkg", "ch0", shape_var, all);
  w.add_norm_systematic("lumi", {"sig", "bkg"}, "ch0", {1.05}, all);
  const std::string path = (dir / "linear.hdf5").string();
  w.write(path);
  return path;
}

}  // namespace rabbit::test
