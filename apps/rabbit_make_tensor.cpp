// rabbit_make_tensor: writes the example fit tensor shipped as examples/example_tensor.hdf5.
// The model is the one of upstream rabbit's tests/make_tensor.py (channels ch0: x, ch1: a×b, masked
// ch0_masked; processes sig, bkg, bkg_2; normalisation and shape systematics with groups and
// NOIs; pseudodata "original"; a data covariance), filled from our own deterministic random
// stream, so the numbers differ from upstream's numpy draws. See docs/tensor-writer.md.
#include <CLI/CLI.hpp>
#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "rabbit/core/error.hpp"
#include "rabbit/io/hdf5_reader.hpp"
#include "rabbit/io/tensor_writer.hpp"

namespace {

/// Portable random stream: mt19937_64's output sequence is fixed by the C++ standard; uniform
/// and normal variates are derived here (Box–Muller) instead of by the library's distributions,
/// whose algorithms differ between standard libraries.
class PortableRng {
 public:
  explicit PortableRng(uint64_t seed) : engine_(seed) {}
  double uniform01() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }  // [0, 1)
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform01(); }
  double normal(double mean, double sigma) {
    if (has_spare_) {
      has_spare_ = false;
      return mean + sigma * spare_;
    }
    const double u1 = 1.0 - uniform01();  // (0, 1]
    const double u2 = uniform01();
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(2.0 * std::numbers::pi * u2);
    has_spare_ = true;
    return mean + sigma * r * std::cos(2.0 * std::numbers::pi * u2);
  }
  std::vector<double> normal(double mean, double sigma, size_t n) {
    std::vector<double> v(n);
    for (auto& x : v) x = normal(mean, sigma);
    return v;
  }
  std::vector<double> uniform(double lo, double hi, size_t n) {
    std::vector<double> v(n);
    for (auto& x : v) x = uniform(lo, hi);
    return v;
  }

 private:
  std::mt19937_64 engine_;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

/// Regular bin index of x on an axis (boost-histogram's rule: [lo, hi) bins), -1 for flow.
int64_t bin_index(const rabbit::AxisInfo& axis, double x) {
  if (axis.kind == "regular") {
    const double lo = axis.edges.front(), hi = axis.edges.back();
    const double z = (x - lo) / (hi - lo);
    if (!(z >= 0.0) || z >= 1.0) return -1;
    return static_cast<int64_t>(z * static_cast<double>(axis.size));
  }
  if (x < axis.edges.front() || !(x < axis.edges.back())) return -1;
  const auto it = std::upper_bound(axis.edges.begin(), axis.edges.end(), x);
  return static_cast<int64_t>(it - axis.edges.begin()) - 1;
}

/// A weighted histogram over a channel's regular bins (sum of weights and of squared weights).
struct Hist {
  std::vector<rabbit::AxisInfo> axes;
  std::vector<double> values, variances;
  explicit Hist(std::vector<rabbit::AxisInfo> a) : axes(std::move(a)) {
    size_t n = 1;
    for (const auto& ax : axes) n *= static_cast<size_t>(ax.size);
    values.assign(n, 0.0);
    variances.assign(n, 0.0);
  }
  void fill1(const std::vector<double>& x, const std::vector<double>* w = nullptr) {
    for (size_t i = 0; i < x.size(); ++i) add(bin_index(axes[0], x[i]), w ? (*w)[i] : 1.0);
  }
  void fill2(const std::vector<double>& a, const std::vector<double>& b,
             const std::vector<double>* w = nullptr) {
    for (size_t i = 0; i < a.size(); ++i) {
      const int64_t ia = bin_index(axes[0], a[i]), ib = bin_index(axes[1], b[i]);
      add(ia < 0 || ib < 0 ? -1 : ia * axes[1].size + ib, w ? (*w)[i] : 1.0);
    }
  }
  void scale_values(double f) {  // like `h.values()[...] *= f`: the variances stay as filled
    for (auto& v : values) v *= f;
  }

 private:
  void add(int64_t bin, double w) {
    if (bin < 0) return;
    values[static_cast<size_t>(bin)] += w;
    variances[static_cast<size_t>(bin)] += w * w;
  }
};

std::vector<double> times(const std::vector<double>& v, const std::vector<double>& f) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = v[i] * f[i];
  return out;
}

struct Args {
  std::string output = "example_tensor.hdf5";
  bool sparse = false;
  bool symmetric = false;
  std::string systematic_type = "log_normal";
  bool float32 = false;
  bool no_meta = false;
  bool skip_masked = false;
  std::string compression = "gzip";
  uint64_t seed = 42;
};

void make_tensor(const Args& args) {
  using namespace rabbit;
  PortableRng rng(args.seed);
  const AxisInfo ax_x = axis::regular(10, -5, 5, "x");
  const AxisInfo ax_a = axis::regular(10, 0, 5, "a");
  const AxisInfo ax_b = axis::variable({0, 1, 3, 6, 10, 20}, "b");

  Hist h1_data({ax_x}), h2_data({ax_a, ax_b});
  Hist h1_sig({ax_x}), h2_sig({ax_a, ax_b}), h1_bkg({ax_x}), h2_bkg({ax_a, ax_b}), h1_bkg_2({ax_x});
  Hist h1_sig_masked({ax_x});

  // Same draws, in the same order and sizes, as upstream's generator functions.
  struct Sample {
    std::vector<double> x, w_x, a, b, w_ab;
  };
  auto get_sig = [&](int factor) {
    Sample s;
    const size_t f = static_cast<size_t>(factor);
    s.x = rng.normal(0, 1, 10000 * f);
    s.w_x = rng.normal(1.0 / factor, 0.2, 10000 * f);
    s.a = rng.normal(2, 1, 15000 * f);
    s.b = rng.normal(10, 2.5, 15000 * f);
    s.w_ab = rng.normal(1.0 / factor, 0.2, 15000 * f);
    return s;
  };
  auto get_bkg = [&](int factor) {
    Sample s;
    const size_t f = static_cast<size_t>(factor);
    s.x = rng.uniform(-5, 5, 5000 * f);
    s.w_x = rng.normal(1.0 / factor, 0.2, 5000 * f);
    s.a = rng.uniform(0, 5, 7000 * f);
    s.b = rng.uniform(0, 20, 7000 * f);
    s.w_ab = rng.normal(1.0 / factor, 0.2, 7000 * f);
    return s;
  };

  Sample s = get_sig(1);
  h1_data.fill1(s.x);
  h2_data.fill2(s.a, s.b);
  s = get_bkg(1);
  h1_data.fill1(s.x);
  h2_data.fill2(s.a, s.b);
  h1_data.fill1(rng.normal(0.5, 1.5, 5000));

  s = get_sig(3);
  h1_sig.fill1(s.x, &s.w_x);
  h2_sig.fill2(s.a, s.b, &s.w_ab);
  s = get_bkg(2);
  h1_bkg.fill1(s.x, &s.w_x);
  h2_bkg.fill2(s.a, s.b, &s.w_ab);
  h1_bkg_2.fill1(rng.normal(0.5, 1.5, 5000));
  if (!args.skip_masked) {
    std::vector<double> x = rng.normal(0, 0.8, 30000), w = rng.normal(1.0 / 3, 0.1, 30000);
    h1_sig_masked.fill1(x, &w);
  }

  // Pseudodata: the exact sum of the unscaled templates.
  std::vector<double> pseudo1(10), pseudo2(50);
  for (size_t i = 0; i < pseudo1.size(); ++i)
    pseudo1[i] = h1_sig.values[i] + h1_bkg.values[i] + h1_bkg_2.values[i];
  for (size_t i = 0; i < pseudo2.size(); ++i) pseudo2[i] = h2_sig.values[i] + h2_bkg.values[i];

  h1_sig.scale_values(0.9);
  h2_sig.scale_values(0.9);
  h1_bkg.scale_values(1.05);
  h2_bkg.scale_values(1.05);
  // bkg_2 is an unweighted histogram upstream: its variances are its (scaled) values.
  h1_bkg_2.scale_values(0.9);
  h1_bkg_2.variances = h1_bkg_2.values;

  // Data covariance: data + sig + bkg (+ bkg_2 in ch0) on the diagonal.
  const Eigen::Index nbins = 60;
  Eigen::MatrixXd cov = Eigen::MatrixXd::Zero(nbins, nbins);
  for (Eigen::Index i = 0; i < 10; ++i)
    cov(i, i) = h1_data.values[i] + h1_sig.values[i] + h1_bkg.values[i] + h1_bkg_2.values[i];
  for (Eigen::Index i = 0; i < 50; ++i)
    cov(10 + i, 10 + i) = h2_data.values[i] + h2_sig.values[i] + h2_bkg.values[i];

  TensorWriter writer(args.systematic_type == "normal" ? SystematicType::normal : SystematicType::log_normal);
  writer.add_channel("ch0", {ax_x});
  writer.add_channel("ch1", {ax_a, ax_b});
  writer.add_data("ch0", h1_data.values);
  writer.add_data("ch1", h2_data.values);
  writer.add_pseudodata("original", "ch0", pseudo1);
  writer.add_pseudodata("original", "ch1", pseudo2);
  writer.add_data_covariance(cov);
  writer.add_process("ch0", "sig", h1_sig.values, true, h1_sig.variances);
  writer.add_process("ch1", "sig", h2_sig.values, true, h2_sig.variances);
  writer.add_process("ch0", "bkg", h1_bkg.values, false, h1_bkg.variances);
  writer.add_process("ch1", "bkg", h2_bkg.values, false, h2_bkg.variances);
  writer.add_process("ch0", "bkg_2", h1_bkg_2.values, false, h1_bkg_2.variances);
  if (!args.skip_masked) {
    writer.add_channel("ch0_masked", {ax_x}, true);
    writer.add_process("ch0_masked", "sig", h1_sig_masked.values, true, h1_sig_masked.variances);
  }

  writer.add_norm_systematic("norm", {"sig", "bkg", "bkg_2"}, "ch0", {1.02});
  writer.add_norm_systematic("norm", {"sig", "bkg"}, "ch1", {1.02, 1.03});
  writer.add_norm_systematic("bkg_norm", {"bkg"}, "ch0", {1.05});
  writer.add_norm_systematic("bkg_norm", {"bkg"}, "ch1", {1.05});
  writer.add_norm_systematic("bkg_2_norm", {"bkg_2"}, "ch0", {1.1});

  // Shape systematics: linear reweighting w = 0.01·(centre − first centre) − 0.05 along x (ch0)
  // and along a (ch1, constant along b).
  std::vector<double> w_x;
  for (double c : axis::centers(ax_x)) w_x.push_back(0.01 * (c - axis::centers(ax_x)[0]) - 0.05);
  std::vector<double> w_ab;
  for (double c : axis::centers(ax_a))
    for (int64_t ib = 0; ib < ax_b.size; ++ib) w_ab.push_back(0.01 * (c - axis::centers(ax_a)[0]) - 0.05);
  auto factors = [](const std::vector<double>& w, double sign, int power) {
    std::vector<double> f(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      const double base = 1.0 + sign * w[i];
      f[i] = power == 2 ? base * base : base;
    }
    return f;
  };
  const std::vector<std::string> slopes_bkg = {"slopes", "slopes_background"};
  const std::vector<std::string> slopes_sig = {"slopes", "slopes_signal"};

  SystematicOptions unconstrained_bkg;
  unconstrained_bkg.constrained = false;
  unconstrained_bkg.groups = slopes_bkg;
  writer.add_systematic("slope_background", "bkg", "ch0", times(h1_bkg.values, factors(w_x, 1, 1)),
                        unconstrained_bkg);

  const auto sig1_up = times(h1_sig.values, factors(w_x, 1, 1));
  const auto sig1_dn = times(h1_sig.values, factors(w_x, -1, 1));
  SystematicOptions noi_constrained;
  noi_constrained.groups = slopes_sig;
  noi_constrained.kfactor = 1.2;
  noi_constrained.noi = true;
  writer.add_systematic("slope_signal_ch0", "sig", "ch0", sig1_up, sig1_dn, noi_constrained);

  SystematicOptions noi_unconstrained;
  noi_unconstrained.constrained = false;
  noi_unconstrained.noi = true;
  writer.add_systematic("slope_signal", "sig", "ch0", sig1_up, sig1_dn, noi_unconstrained);
  if (!args.skip_masked)
    writer.add_systematic("slope_signal", "sig", "ch0_masked",
                          times(h1_sig_masked.values, factors(w_x, 1, 1)),
                          times(h1_sig_masked.values, factors(w_x, -1, 1)), noi_unconstrained);

  const auto sig2_up = times(h1_sig.values, factors(w_x, 1, 2));
  SystematicOptions sig_shape;
  sig_shape.groups = slopes_sig;
  sig_shape.symmetrize = Symmetrization::linear;
  writer.add_systematic("slope_lin_signal_ch0", "sig", "ch0", sig2_up, sig1_dn, sig_shape);
  sig_shape.symmetrize = Symmetrization::quadratic;
  writer.add_systematic("slope_quad_signal_ch0", "sig", "ch0", sig2_up, sig1_dn, sig_shape);

  writer.add_systematic("slope_background", "bkg", "ch1", times(h2_bkg.values, factors(w_ab, 1, 1)),
                        unconstrained_bkg);
  const auto sig1_up_2d = times(h2_sig.values, factors(w_ab, 1, 1));
  const auto sig1_dn_2d = times(h2_sig.values, factors(w_ab, -1, 1));
  sig_shape.symmetrize = Symmetrization::conservative;
  writer.add_systematic("slope_signal_ch1", "sig", "ch1", sig1_up_2d, sig1_dn_2d, sig_shape);
  writer.add_systematic("slope_signal", "sig", "ch1", sig1_up_2d, sig1_dn_2d, noi_unconstrained);
  sig_shape.symmetrize = args.symmetric ? Symmetrization::quadratic : Symmetrization::none;
  writer.add_systematic("slope_2_signal_ch1", "sig", "ch1", times(h2_sig.values, factors(w_ab, 1, 2)),
                        sig1_dn_2d, sig_shape);

  WriteOptions options;
  options.sparse = args.sparse;
  options.float32 = args.float32;
  options.write_meta = !args.no_meta;
  options.compression = args.compression == "none"     ? Compression::none
                        : args.compression == "blosc2" ? Compression::blosc2
                                                       : Compression::gzip;
  options.meta_info = {{"command", "rabbit_make_tensor"}, {"seed", std::to_string(args.seed)}};
  writer.write(args.output, options);
}

}  // namespace

int main(int argc, char** argv) {
  rabbit::h5::configure_hdf5_for_application();  // docs/reliability.md "HDF5's error printing and open files"
  CLI::App app{"Writes the example rabbit fit tensor (the model of upstream's tests/make_tensor.py)"};
  Args args;
  app.add_option("-o,--output", args.output, "output file")->capture_default_str();
  app.add_flag("--sparse", args.sparse, "write the sparse tensor layout");
  app.add_flag("--symmetric,--symmetrizeAll", args.symmetric,
               "symmetrize the asymmetric systematic too (quadratic), giving a symmetric tensor");
  app.add_option("--systematicType", args.systematic_type, "log_normal or normal")
      ->check(CLI::IsMember({"log_normal", "normal"}))
      ->capture_default_str();
  app.add_flag("--float32", args.float32, "store the big arrays as float32");
  app.add_flag("--noMeta", args.no_meta, "do not write the meta group");
  app.add_flag("--skipMaskedChannels", args.skip_masked, "leave out the masked channel ch0_masked");
  app.add_option("--compression", args.compression, "gzip, blosc2 or none")
      ->check(CLI::IsMember({"gzip", "blosc2", "none"}))
      ->capture_default_str();
  app.add_option("--seed", args.seed, "seed of the random stream")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : static_cast<int>(rabbit::ExitCode::option);
  }
  try {
    make_tensor(args);
  } catch (const rabbit::Error& e) {
    rabbit::print_error_line("rabbit_make_tensor", e.what());
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    rabbit::print_error_line("rabbit_make_tensor", e.what());
    return 1;
  }
  return 0;
}
