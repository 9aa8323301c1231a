// The Mapping seam (include/rabbit/postfit/mapping.hpp; docs/architecture.md "Mappings"): BaseMapping,
// the registry, and the histogram code's propagation through a mapping other than the identity.
#include "rabbit/postfit/mapping.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "rabbit/backend/cpu/cpu_shard.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/fit/fitter.hpp"
#include "rabbit/postfit/histograms.hpp"
#include "support/shard_test_helpers.hpp"

namespace rabbit::testing {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using postfit::compute_histograms;
using postfit::HistogramRequest;
using postfit::HistogramResult;
using postfit::Mapping;
using postfit::MappingJacobian;

std::string option_error(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const OptionError& e) {
    return e.what();
  }
  return "<no OptionError>";
}

std::shared_ptr<FitInputData> input_with_channels(const ShardConfig& c) {
  auto in = make_test_input(c);
  set_obs_and_masked_channels(*in);
  return in;
}

TEST(Mapping, BaseMappingIsTheIdentityOverAllChannels) {
  auto in = input_with_channels(ShardConfig{});
  const auto m = postfit::make_mapping(*in, {"BaseMapping"});
  EXPECT_EQ(m->name(), "BaseMapping");
  EXPECT_EQ(m->key(), "BaseMapping");
  ASSERT_EQ(m->channels().size(), 2u);
  EXPECT_EQ(m->channels()[1].name, "masked");
  EXPECT_TRUE(m->channels()[1].masked);
  EXPECT_EQ(m->size(), in->nbinsfull);
  EXPECT_EQ(m->observed_size(), in->nbins);
  EXPECT_TRUE(m->has_data());
  EXPECT_EQ(m->ndf_reduction(), 0);
  EXPECT_TRUE(m->is_identity());
  const VectorXd nu = VectorXd::LinSpaced(in->nbinsfull, 1.0, 9.0);
  EXPECT_EQ(m->apply(nu), nu);
  EXPECT_EQ(MatrixXd(m->jacobian(nu)), MatrixXd::Identity(in->nbinsfull, in->nbinsfull));
  const MatrixXd N = MatrixXd::Random(in->nbinsfull, in->nproc);
  EXPECT_EQ(m->apply_per_process(N), N);
  EXPECT_EQ(MatrixXd(m->jacobian_per_process(N)), MatrixXd::Identity(N.size(), N.size()));
  const MatrixXd J = MatrixXd::Random(in->nbinsfull, 5);
  EXPECT_EQ(m->chain(nu, J), J);
}

TEST(Mapping, RegistryRefusesUnknownNamesAndArguments) {
  auto in = input_with_channels(ShardConfig{});
  EXPECT_EQ(postfit::supported_mappings(),
            (std::vector<std::string>{"BaseMapping", "Project", "Normalize", "Select", "Ratio", "Normratio",
                                      "Difference", "Asymmetry", "AngularCoefficients", "LamTung"}));
  EXPECT_EQ(option_error([&] {
              postfit::make_mapping(*in, {"NoSuchMapping", "obs"});
            }),
            "mapping NoSuchMapping is not implemented yet (this release supports BaseMapping, Project, "
            "Normalize, Select, Ratio, Normratio, Difference, Asymmetry, AngularCoefficients, LamTung)");
  EXPECT_EQ(option_error([&] {
              postfit::make_mapping(*in, {"BaseMapping", "obs"});
            }),
            "-m BaseMapping takes no arguments, got 1");
}

/// y_i = 2 ν_rev(i), the bins reversed within the observed block and within the masked block: an
/// invertible linear mapping, so every histogram quantity is BaseMapping's transformed and the linear
/// chi2 is unchanged.
class ReverseTwice final : public Mapping {
 public:
  ReverseTwice(const FitInputData& in, int64_t ndf_reduction)
      : channels_(in.channels), nobs_(in.nbins), nbf_(in.nbinsfull), ndf_reduction_(ndf_reduction) {}
  std::string name() const override { return "ReverseTwice"; }
  std::string key() const override { return "ReverseTwice"; }
  const std::vector<ChannelInfo>& channels() const override { return channels_; }
  int64_t observed_size() const override { return nobs_; }
  bool has_data() const override { return true; }
  int64_t ndf_reduction() const override { return ndf_reduction_; }
  int64_t source(int64_t i) const { return i < nobs_ ? nobs_ - 1 - i : nbf_ - 1 - (i - nobs_); }
  VectorXd apply(const VectorXd& nu) const override {
    VectorXd y(nbf_);
    for (int64_t i = 0; i < nbf_; ++i) y(i) = 2.0 * nu(source(i));
    return y;
  }
  MappingJacobian jacobian(const VectorXd&) const override {
    std::vector<Eigen::Triplet<double>> t;
    for (int64_t i = 0; i < nbf_; ++i) t.emplace_back(i, source(i), 2.0);
    MappingJacobian a(nbf_, nbf_);
    a.setFromTriplets(t.begin(), t.end());
    return a;
  }
  MatrixXd apply_per_process(const MatrixXd& n) const override {
    MatrixXd y(nbf_, n.cols());
    for (int64_t i = 0; i < nbf_; ++i) y.row(i) = 2.0 * n.row(source(i));
    return y;
  }
  MappingJacobian jacobian_per_process(const MatrixXd& n) const override {
    const int64_t P = n.cols();
    std::vector<Eigen::Triplet<double>> t;
    for (int64_t i = 0; i < nbf_; ++i)
      for (int64_t p = 0; p < P; ++p) t.emplace_back(i * P + p, source(i) * P + p, 2.0);
    MappingJacobian a(nbf_ * P, nbf_ * P);
    a.setFromTriplets(t.begin(), t.end());
    return a;
  }

 private:
  std::vector<ChannelInfo> channels_;
  int64_t nobs_, nbf_, ndf_reduction_;
};

/// One output bin: the sum of the observed bins (a projection).
class SumObserved final : public Mapping {
 public:
  explicit SumObserved(const FitInputData& in) : nobs_(in.nbins), nbf_(in.nbinsfull) {
    ChannelInfo ch;
    ch.name = "sum";
    ch.start = 0;
    ch.stop = 1;
    channels_ = {ch};
  }
  std::string name() const override { return "SumObserved"; }
  std::string key() const override { return "SumObserved"; }
  const std::vector<ChannelInfo>& channels() const override { return channels_; }
  int64_t observed_size() const override { return 1; }
  bool has_data() const override { return true; }
  VectorXd apply(const VectorXd& nu) const override { return VectorXd::Constant(1, nu.head(nobs_).sum()); }
  MappingJacobian jacobian(const VectorXd&) const override {
    MappingJacobian a(1, nbf_);
    for (int64_t b = 0; b < nobs_; ++b) a.insert(0, b) = 1.0;
    return a;
  }
  MatrixXd apply_per_process(const MatrixXd& n) const override { return n.topRows(nobs_).colwise().sum(); }
  MappingJacobian jacobian_per_process(const MatrixXd& n) const override {
    const int64_t P = n.cols();
    MappingJacobian a(P, nbf_ * P);
    for (int64_t b = 0; b < nobs_; ++b)
      for (int64_t p = 0; p < P; ++p) a.insert(p, b * P + p) = 1.0;
    return a;
  }

 private:
  std::vector<ChannelInfo> channels_;
  int64_t nobs_, nbf_;
};

/// Another mapping's outputs less the last: for Normalize, whose V has the null vector 1 and whose
/// residual sums to zero, the chi2 over the others with V's inverse equals rᵀV⁺r over all outputs.
class DropLast final : public Mapping {
 public:
  explicit DropLast(std::unique_ptr<Mapping> inner)
      : inner_(std::move(inner)), channels_(inner_->channels()) {
    channels_.back().stop -= 1;
  }
  std::string name() const override { return "DropLast"; }
  std::string key() const override { return "DropLast"; }
  const std::vector<ChannelInfo>& channels() const override { return channels_; }
  int64_t observed_size() const override { return inner_->observed_size() - 1; }
  bool has_data() const override { return true; }
  VectorXd apply(const VectorXd& nu) const override { return inner_->apply(nu).head(size()); }
  MappingJacobian jacobian(const VectorXd& nu) const override { return inner_->jacobian(nu).topRows(size()); }
  MatrixXd apply_per_process(const MatrixXd& n) const override {
    return inner_->apply_per_process(n).topRows(size());
  }
  MappingJacobian jacobian_per_process(const MatrixXd& n) const override {
    return inner_->jacobian_per_process(n).topRows(size() * n.cols());
  }

 private:
  std::unique_ptr<Mapping> inner_;
  std::vector<ChannelInfo> channels_;
};

struct Case {
  const char* name;
  ShardConfig config;
  BBType bb_type;
  BBMode bb_mode;
  bool beta_variations;
};

void expect_close(double a, double b, const std::string& what) {
  EXPECT_NEAR(a, b, 1e-9 * std::max(1.0, std::abs(b))) << what;
}

void check_mappings_against_base(const Case& k) {
  SCOPED_TRACE(k.name);
  ShardConfig c = k.config;
  auto in = input_with_channels(c);
  if (k.beta_variations) {
    std::mt19937 rng(21);
    std::uniform_real_distribution<double> uni(-1.0, 1.0);
    const int64_t B = in->nbins, Bf = in->nbinsfull, P = in->nproc;
    std::vector<double> bv(Bf * B * P, 0.0);
    for (int64_t b = B; b < Bf; ++b)
      for (int64_t j = 0; j < B; ++j)
        for (int64_t p = 0; p < P; ++p) bv[(b * B + j) * P + p] = 0.4 * in->norm[b * P + p] * uni(rng);
    in->betavariations = bv;
  }
  ModelOptions opt;
  opt.likelihood = c.likelihood;
  opt.bin_by_bin_stat = true;
  opt.bb_type = k.bb_type;
  opt.bb_mode = k.bb_mode;
  auto model = build_model(in, opt);
  std::vector<std::unique_ptr<ShardEvaluator>> shards;
  shards.push_back(make_cpu_shard(model, 0, in->nbins, 1));
  Fitter fitter(model, std::move(shards));
  auto& shard = dynamic_cast<CpuShardEvaluator&>(*fitter.shards()[0]);
  const int64_t n = fitter.size(), B = in->nbins, Bf = in->nbinsfull, P = in->nproc;
  VectorXd x = model->parameters.x_default;
  for (int64_t i = 0; i < n; ++i) x[i] += 0.1 * std::sin(1.0 + i);
  MatrixXd cov = 0.01 * MatrixXd::Identity(n, n);
  cov(0, 1) = cov(1, 0) = 0.002;
  const auto base = postfit::make_mapping(*in, {"BaseMapping"});
  const ReverseTwice reverse(*in, 1);
  const SumObserved sum(*in);
  for (bool prefit : {true, false}) {
    SCOPED_TRACE(prefit ? "prefit" : "postfit");
    HistogramRequest req;
    req.prefit = prefit;
    req.errors = req.covariance = req.per_process = req.errors_per_process = req.chi2 = true;
    const HistogramResult h = compute_histograms(*model, shard, fitter, *base, x, cov, req);
    const HistogramResult r = compute_histograms(*model, shard, fitter, reverse, x, cov, req);
    for (int64_t i = 0; i < Bf; ++i) {
      const int64_t s = reverse.source(i);
      expect_close(r.inclusive(i), 2.0 * h.inclusive(s), "inclusive");
      expect_close(r.inclusive_var(i), 4.0 * h.inclusive_var(s), "variance");
      for (int64_t j = 0; j < Bf; ++j)
        expect_close(r.inclusive_cov(i, j), 4.0 * h.inclusive_cov(s, reverse.source(j)), "covariance");
      for (int64_t p = 0; p < P; ++p) {
        expect_close(r.per_process(i, p), 2.0 * h.per_process(s, p), "per process");
        expect_close(r.per_process_var(i, p), 4.0 * h.per_process_var(s, p), "per-process variance");
      }
    }
    // an invertible linear map leaves the linear chi2 unchanged; ndf less the mapping's reduction
    EXPECT_NEAR(r.chi2, h.chi2, 1e-8 * h.chi2);
    EXPECT_EQ(r.ndf, h.ndf - 1);

    // a projection: the variance of the sum is 1ᵀ Cov 1 over the observed bins
    const HistogramResult s = compute_histograms(*model, shard, fitter, sum, x, cov, req);
    ASSERT_EQ(s.inclusive.size(), 1);
    expect_close(s.inclusive(0), h.inclusive.head(B).sum(), "sum");
    expect_close(s.inclusive_var(0), h.inclusive_cov.topLeftCorner(B, B).sum(), "variance of the sum");
    expect_close(s.inclusive_cov(0, 0), s.inclusive_var(0), "covariance of the sum");
    EXPECT_EQ(s.ndf, 1);

    // Normalize: the observed channel over its total; its V is singular (the outputs sum to one),
    // so the chi2 comes from the pseudo-inverse and ndf is one less than BaseMapping's.
    const auto normalize = postfit::make_mapping(*in, {"Normalize", "obs", "x"});
    const HistogramResult nr = compute_histograms(*model, shard, fitter, *normalize, x, cov, req);
    ASSERT_EQ(nr.inclusive.size(), B);
    for (int64_t i = 0; i < B; ++i)
      expect_close(nr.inclusive(i), h.inclusive(i) / h.inclusive.head(B).sum(), "normalized");
    EXPECT_TRUE(std::isfinite(nr.chi2) && nr.chi2 >= 0.0) << nr.chi2;
    EXPECT_EQ(nr.ndf, h.ndf - 1);
    const DropLast dropped(postfit::make_mapping(*in, {"Normalize", "obs", "x"}));
    const HistogramResult dr = compute_histograms(*model, shard, fitter, dropped, x, cov, req);
    EXPECT_NEAR(nr.chi2, dr.chi2, 1e-8 * dr.chi2);
    EXPECT_EQ(nr.ndf, dr.ndf);
  }
}

TEST(MappingHistograms, PoissonGammaLite) {
  check_mappings_against_base({"poisson gamma lite", ShardConfig{}, BBType::gamma, BBMode::lite, false});
}

TEST(MappingHistograms, PerProcessVariancesInPiecesOfBins) {
  // 800 observed bins: the BaseMapping's per-process variances in two pieces of bins (histograms.cpp),
  // the reversed mapping's from the whole per-process Jacobian.
  ShardConfig c;
  c.nbins = 800;
  check_mappings_against_base({"poisson gamma lite, 800 bins", c, BBType::gamma, BBMode::lite, false});
}

TEST(MappingHistograms, ChisqNormalMultiplicativeFull) {
  ShardConfig c;
  c.likelihood = DataLikelihood::chisq;
  check_mappings_against_base({"chisq full", c, BBType::normal_multiplicative, BBMode::full, false});
}

TEST(MappingHistograms, CovarianceFitWithBetaVariations) {
  ShardConfig c;
  c.likelihood = DataLikelihood::covariance;
  check_mappings_against_base(
      {"covariance full betavar", c, BBType::normal_multiplicative, BBMode::full, true});
}

}  // namespace
}  // namespace rabbit::testing
