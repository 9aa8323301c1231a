// --externalPostfit (docs/user-guide.md): a loaded result reproduces the fit without refitting
// (rabbit's layout and the plain x/parms layout, names matched), a refit from it stays at the
// minimum, and bad keys or impacts without a Hessian are refused. The first run is the executable,
// the others the same program in this process.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "rabbit/io/hdf5_handle.hpp"
#include "rabbit/postfit/result_file.hpp"
#include "support/command.hpp"
#include "support/error_measures.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;
using rabbit::result::ResultReader;
using rabbit::test::example_tensor;
using rabbit::test::relative_error;
using rabbit::test::run_rabbit_fit;
using rabbit::test::run_rabbit_fit_captured;
using rabbit::test::scratch_dir;

namespace {

// The plain --externalPostfit layout: top-level datasets x, parms (vlen strings) and optionally cov.
void write_plain_postfit(const std::string& path, const std::vector<std::string>& names,
                         const std::vector<double>& x) {
  rabbit::h5::Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  const hsize_t n = names.size();
  rabbit::h5::Handle space(H5Screate_simple(1, &n, nullptr));
  rabbit::h5::Handle xs(H5Dcreate2(file, "x", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5Dwrite(xs, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, x.data());
  rabbit::h5::Handle str(H5Tcopy(H5T_C_S1));
  H5Tset_size(str, H5T_VARIABLE);
  std::vector<const char*> ptrs;
  for (const auto& s : names) ptrs.push_back(s.c_str());
  rabbit::h5::Handle ps(H5Dcreate2(file, "parms", str, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5Dwrite(ps, str, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data());
}

}  // namespace

TEST(RabbitFit, ExternalPostfitReproducesTheLoadedResult) {
  auto dir = scratch_dir("cli_external_postfit");
  const std::string base =
      example_tensor() + " -t 0 --unblind --saveHists --computeHistErrors -o " + dir.string();
  auto r = run_rabbit_fit(base + " -p fit");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string fitted = (dir / "fitresults_fit.hdf5").string();
  // The fit's own result, no refit: x, cov, variances, NLL and postfit histograms are the fit's.
  r = run_rabbit_fit_captured(base + " -p nofit --noFit --externalPostfit " + fitted);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(
      r.output.find("External postfit " + fitted + ": 13 of 13 parameters loaded with their covariance"),
      std::string::npos)
      << r.output;
  // Refit from there: already at the minimum.
  r = run_rabbit_fit_captured(base + " -p refit --externalPostfit " + fitted + " --externalPostfitResult");
  EXPECT_EQ(r.exit_code, 2) << r.output;  // --externalPostfitResult needs a value
  r = run_rabbit_fit_captured(base + " -p refit --externalPostfit " + fitted);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ResultReader ff(fitted), fn((dir / "fitresults_nofit.hdf5").string()),
      fr((dir / "fitresults_refit.hdf5").string());
  EXPECT_EQ(fn.hist("results/parms").values, ff.hist("results/parms").values);
  EXPECT_EQ(fn.hist("results/parms").variances, ff.hist("results/parms").variances);
  EXPECT_EQ(fn.hist("results/cov").values, ff.hist("results/cov").values);
  EXPECT_EQ(fn.scalar("results/nllvalreduced"), ff.scalar("results/nllvalreduced"));
  const std::string h = "results/mappings/BaseMapping/channels/ch0/hist_postfit_inclusive";
  const auto hf = ff.hist(h), hn = fn.hist(h);
  for (size_t i = 0; i < hf.values.size(); ++i) {
    EXPECT_LT(relative_error(hn.values[i], hf.values[i]), 1e-12) << i;
    EXPECT_LT(relative_error(hn.variances[i], hf.variances[i]), 1e-10) << i;
  }
  EXPECT_NEAR(fr.scalar("results/nllvalreduced"), ff.scalar("results/nllvalreduced"), 1e-10);
  const auto pr = fr.hist("results/parms"), pf = ff.hist("results/parms");
  for (size_t i = 0; i < pf.values.size(); ++i) {
    EXPECT_NEAR(pr.values[i], pf.values[i], 1e-4 * std::sqrt(pf.variances[i])) << i;
    EXPECT_LT(relative_error(pr.variances[i], pf.variances[i]), 1e-5) << i;
  }

  // The plain layout, names in another order and without cov: values mapped by name, the
  // Hessian computed at the loaded point.
  auto names = pf.axis_labels.at(0);
  std::vector<double> x(pf.values.rbegin(), pf.values.rend());
  std::reverse(names.begin(), names.end());
  names.push_back("not_in_this_fit");
  x.push_back(42.0);
  const std::string plain = (dir / "plain.hdf5").string();
  write_plain_postfit(plain, names, x);
  r = run_rabbit_fit_captured(base + " -p plain --noFit --externalPostfit " + plain);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("13 of 13 parameters loaded\n"), std::string::npos) << r.output;
  ResultReader fp((dir / "fitresults_plain.hdf5").string());
  const auto pp = fp.hist("results/parms");
  EXPECT_EQ(pp.values, pf.values);
  for (size_t i = 0; i < pf.values.size(); ++i)
    EXPECT_LT(relative_error(pp.variances[i], pf.variances[i]), 1e-9) << i;
  EXPECT_EQ(fp.scalar("results/nllvalreduced"), ff.scalar("results/nllvalreduced"));

  // A result key that the file does not have, and impacts that would need the skipped Hessian.
  r = run_rabbit_fit_captured(base + " -p badkey --externalPostfit " + fitted +
                              " --externalPostfitResult nokey");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("no result group results_nokey (available: results)"), std::string::npos)
      << r.output;
  r = run_rabbit_fit_captured(base + " -p impacts --noFit --doImpacts --externalPostfit " + fitted);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("impacts need"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "fitresults_impacts.hdf5"));
}
