// rabbit_fit with an external likelihood term: the reported absolute NLLs follow rabbit PR #147
// (docs/output-format.md, docs/model.md "External terms"). A Gaussian prior N(μ, H⁻¹) stored
// expanded (g = −Hμ, H) adds ½(x−μ)ᵀH(x−μ) to nllvalreduced and to the saturated 2*deltaNLL, that
// plus ½(k ln 2π − ln det H) to nllvalfull, and nothing to ndfsat. Expected values come from the
// definitions and from fits of the same model without the term evaluated at the same point.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "rabbit/io/tensor_writer.hpp"
#include "rabbit/postfit/result_file.hpp"
#include "support/command.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;
using rabbit::result::ResultReader;
using rabbit::test::run_rabbit_fit;
using rabbit::test::run_rabbit_fit_captured;

namespace {

enum class Prior { none, expanded, with_scalars };

// Poisson model, one signal, two constrained nuisances; the prior acts on both nuisances.
const std::vector<std::string> kPriorParams = {"lumi", "shape"};
Eigen::MatrixXd prior_hess() {
  Eigen::MatrixXd h(2, 2);
  h << 4.0, 1.0, 1.0, 2.5;
  return h;
}
const Eigen::Vector2d kPriorMean(0.8, -0.6);  // ½ μᵀHμ = 1.25

std::string write_tensor(const fs::path& dir, Prior prior) {
  rabbit::TensorWriter w;
  w.add_channel("ch0", {rabbit::axis::regular(6, 0, 6, "x")});
  w.add_data("ch0", {112, 104, 98, 112, 83, 58});
  const std::vector<double> bkg = {100, 90, 80, 70, 60, 50};
  w.add_process("ch0", "sig", {5, 10, 20, 30, 20, 10}, true);
  w.add_process("ch0", "bkg", bkg);
  std::vector<double> shape(6);
  for (int b = 0; b < 6; ++b) shape[b] = bkg[b] * (1.0 + 0.04 * (b - 2.5));
  w.add_systematic("shape", "bkg", "ch0", shape);
  w.add_norm_systematic("lumi", {"sig", "bkg"}, "ch0", {1.05});
  const Eigen::MatrixXd h = prior_hess();
  if (prior == Prior::expanded) {
    w.add_external_term("prior", kPriorParams, Eigen::VectorXd(-h * kPriorMean),
                        h);  // scalars derived at load
  } else if (prior == Prior::with_scalars) {
    const double lognorm = std::log(2.0 * M_PI) - 0.5 * std::log(h.determinant());
    w.add_external_gaussian_term("prior", kPriorParams, kPriorMean, h, lognorm);
  }
  const fs::path path = dir / (prior == Prior::none       ? "plain.hdf5"
                               : prior == Prior::expanded ? "expanded.hdf5"
                                                          : "scalars.hdf5");
  w.write(path.string());
  return path.string();
}

// ½(x_s−μ)ᵀH(x_s−μ) at the fitted x of a result group.
double prior_value(const ResultReader& f, const std::string& group) {
  const auto parms = f.hist(group + "/parms");
  const auto& names = parms.axis_labels.at(0);
  Eigen::Vector2d xs;
  for (int a = 0; a < 2; ++a) {
    const auto it = std::find(names.begin(), names.end(), kPriorParams[a]);
    EXPECT_NE(it, names.end()) << kPriorParams[a];
    xs[a] = parms.values.at(static_cast<size_t>(it - names.begin()));
  }
  const Eigen::Vector2d d = xs - kPriorMean;
  return 0.5 * d.dot(prior_hess() * d);
}

}  // namespace

TEST(RabbitFitExternalTerms, ReportedNllFollowsUpstreamPR147) {
  const auto dir = rabbit::test::scratch_dir("cli_external_terms_nll");
  const std::string plain = write_tensor(dir, Prior::none), expanded = write_tensor(dir, Prior::expanded),
                    scalars = write_tensor(dir, Prior::with_scalars);
  const std::string opts = " -t 0 --unblind --fullNll -o " + dir.string();
  const std::vector<std::pair<std::string, std::string>> runs = {
      {plain, "plain"}, {expanded, "expanded"}, {scalars, "scalars"}};
  for (const auto& [tensor, postfix] : runs) {
    // The first run is the executable, the others the same program in this process.
    const auto run = postfix == "plain" ? run_rabbit_fit : run_rabbit_fit_captured;
    const auto r = run(tensor + opts + " -p " + postfix);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    if (postfix == "expanded") {
      // The saturated test prints 2·nllvalreduced, the const included.
      const double nll =
          ResultReader((dir / "fitresults_expanded.hdf5").string()).scalar("results/nllvalreduced");
      EXPECT_NE(r.output.find(fmt::format("    2*deltaNLL: {}\n", std::round(200.0 * nll) / 100.0)),
                std::string::npos)
          << r.output;
    }
  }
  const std::string fit_expanded = (dir / "fitresults_expanded.hdf5").string();
  // The model without the term, evaluated at the penalised fit's x̂ (β profiled there as well).
  auto r = run_rabbit_fit_captured(plain + opts + " -p plain_at_expanded --noFit --externalPostfit " +
                                   fit_expanded);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ResultReader fp((dir / "fitresults_plain.hdf5").string()), fe(fit_expanded),
      fs_((dir / "fitresults_scalars.hdf5").string()),
      fat((dir / "fitresults_plain_at_expanded.hdf5").string());
  EXPECT_EQ(fat.hist("results/parms").values, fe.hist("results/parms").values);

  const double ext = prior_value(fe, "results");
  const double lognorm = std::log(2.0 * M_PI) - 0.5 * std::log(prior_hess().determinant());
  const double dreduced = fe.scalar("results/nllvalreduced") - fat.scalar("results/nllvalreduced");
  const double dfull = fe.scalar("results/nllvalfull") - fat.scalar("results/nllvalfull");
  EXPECT_NEAR(dreduced, ext, 1e-9);
  EXPECT_NEAR(dfull, ext + lognorm, 1e-9);
  // A penalty cannot lower the minimum (the symptom that surfaced upstream's offset).
  EXPECT_GE(fe.scalar("results/nllvalreduced"), fp.scalar("results/nllvalreduced"));
  // The degrees of freedom do not count external terms: 6 bins − 1 POI.
  EXPECT_EQ(fe.scalar("results/ndfsat"), 5.0);
  EXPECT_EQ(fp.scalar("results/ndfsat"), 5.0);
  // Scalars stored by the writer (rabbit's mean=) give what the load-time derivation gives.
  EXPECT_NEAR(fs_.scalar("results/nllvalreduced"), fe.scalar("results/nllvalreduced"), 1e-9);
  EXPECT_NEAR(fs_.scalar("results/nllvalfull"), fe.scalar("results/nllvalfull"), 1e-9);
  std::printf(
      "[ext] x-hat prior term %.9f, nllvalreduced %.9f (without term at x-hat %.9f), nllvalfull %.9f "
      "(%.9f), lognorm %.9f\n",
      ext, fe.scalar("results/nllvalreduced"), fat.scalar("results/nllvalreduced"),
      fe.scalar("results/nllvalfull"), fat.scalar("results/nllvalfull"), lognorm);

  // Asimov: x stays at the defaults (nuisances 0), so the term is exactly ½ μᵀHμ = 1.25.
  r = run_rabbit_fit_captured(expanded + " -t -1 --fullNll -p asimov -o " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ResultReader fa((dir / "fitresults_asimov.hdf5").string());
  EXPECT_NEAR(prior_value(fa, "results_asimov"), 1.25, 1e-12);
  EXPECT_NEAR(fa.scalar("results_asimov/nllvalreduced"), 1.25, 1e-9);
}
