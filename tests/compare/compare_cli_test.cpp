// rabbit_compare (rabbit::cli::compare_main) on real result files: one fit written in both layouts,
// copies of it with one entry changed, and our fit of every reference case against upstream's
// JSON. The fits run in this process (run_rabbit_fit_in_process).
#include <gtest/gtest.h>
#include <hdf5.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "rabbit/cli/compare_main.hpp"
#include "rabbit/io/hdf5_handle.hpp"
#include "rabbit/io/json.hpp"
#include "rabbit/postfit/result_file.hpp"
#include "support/command.hpp"
#include "support/fit_comparison.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;

namespace {

struct CompareRun {
  int exit_code = -1;
  std::string out, err;
};

CompareRun rabbit_compare(const std::vector<std::string>& args) {
  std::vector<const char*> argv{"rabbit_compare"};
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  CompareRun run;
  run.exit_code = rabbit::cli::compare_main(static_cast<int>(argv.size()), argv.data(), out, err);
  run.out = out.str();
  run.err = err.str();
  return run;
}

std::string shown(const CompareRun& r) {
  return "exit " + std::to_string(r.exit_code) + "\n" + r.out + r.err;
}

// Reads the float64 dataset `dataset` of a plain-layout file, changes one element, writes it back.
void change_entry(const fs::path& file, const std::string& dataset, size_t index,
                  const std::function<double(double)>& change) {
  rabbit::h5::Handle f(H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
  ASSERT_TRUE(f.valid()) << file;
  rabbit::h5::Handle ds(H5Dopen2(f, dataset.c_str(), H5P_DEFAULT));
  ASSERT_TRUE(ds.valid()) << dataset;
  rabbit::h5::Handle space(H5Dget_space(ds));
  std::vector<double> v(static_cast<size_t>(H5Sget_simple_extent_npoints(space)));
  ASSERT_LT(index, v.size());
  ASSERT_GE(H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0);
  v[index] = change(v[index]);
  ASSERT_GE(H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0);
}

size_t dataset_size(const fs::path& file, const std::string& dataset) {
  rabbit::h5::Handle f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  rabbit::h5::Handle ds(H5Dopen2(f, dataset.c_str(), H5P_DEFAULT));
  rabbit::h5::Handle space(H5Dget_space(ds));
  return static_cast<size_t>(H5Sget_simple_extent_npoints(space));
}

void delete_link(const fs::path& file, const std::string& link) {
  rabbit::h5::Handle f(H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
  ASSERT_TRUE(f.valid()) << file;
  ASSERT_GE(H5Ldelete(f, link.c_str(), H5P_DEFAULT), 0) << link;
}

// One fit of the dense reference tensor with Asimov and data, impacts and histograms, written in
// both layouts; each test works on copies.
class RabbitCompare : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(rabbit::test::scratch_dir("rabbit_compare"));
    const fs::path tensor = rabbit::test::source_dir() / "tests" / "reference" / "tensors" / "dense.hdf5";
    const std::string fit =
        tensor.string() +
        " -t -1 0 --unblind --doImpacts --globalImpacts --saveHists --computeHistErrors -o " + dir_->string();
    fits_ok_ =
        rabbit::test::run_rabbit_fit_in_process(fit + " --outname plain.hdf5 --outputFormat plain") == 0 &&
        rabbit::test::run_rabbit_fit_in_process(fit + " --outname rabbit.hdf5") == 0;
  }
  static void TearDownTestSuite() { delete dir_; }
  void SetUp() override { ASSERT_TRUE(fits_ok_) << "rabbit_fit failed on the dense reference tensor"; }

  static std::string plain() { return (*dir_ / "plain.hdf5").string(); }
  static std::string rabbit() { return (*dir_ / "rabbit.hdf5").string(); }
  static fs::path copy_of_plain(const std::string& name) {
    const fs::path to = *dir_ / name;
    fs::copy_file(plain(), to, fs::copy_options::overwrite_existing);
    return to;
  }
  static size_t parameter_index(const std::string& name) {
    const auto labels = rabbit::result::ResultReader(plain()).hist("results/parms").axis_labels[0];
    return static_cast<size_t>(std::find(labels.begin(), labels.end(), name) - labels.begin());
  }

  static fs::path* dir_;
  static bool fits_ok_;
};
fs::path* RabbitCompare::dir_ = nullptr;
bool RabbitCompare::fits_ok_ = false;

TEST_F(RabbitCompare, EqualFilesExitZero) {
  for (const auto& file : {plain(), rabbit()}) {
    const CompareRun r = rabbit_compare({file, file});
    EXPECT_EQ(r.exit_code, 0) << shown(r);
    EXPECT_NE(r.out.find("ok    results  parms values: 13 entries; largest deviation 0 relative, 0 absolute"),
              std::string::npos)
        << shown(r);
    EXPECT_NE(r.out.find("ok    results_asimov  global_impacts_grouped: "), std::string::npos) << shown(r);
    EXPECT_NE(r.out.find("rabbit_compare: within tolerance ("), std::string::npos) << shown(r);
  }
  const CompareRun copy = rabbit_compare({plain(), copy_of_plain("copy.hdf5").string()});
  EXPECT_EQ(copy.exit_code, 0) << shown(copy);
}

// The same fit in our plain layout and in rabbit's: the same quantities, within tolerance.
TEST_F(RabbitCompare, BothLayoutsOfOneFitAgree) {
  for (const auto& [a, b] : {std::pair{plain(), rabbit()}, std::pair{rabbit(), plain()}}) {
    const CompareRun r = rabbit_compare({a, b});
    EXPECT_EQ(r.exit_code, 0) << shown(r);
    EXPECT_NE(r.out.find("mappings/BaseMapping/channels/ch0/hist_postfit_inclusive uncertainties"),
              std::string::npos)
        << shown(r);
  }
}

TEST_F(RabbitCompare, ShiftedParameterExitsOneAndIsNamed) {
  const fs::path shifted = copy_of_plain("shifted.hdf5");
  change_entry(shifted, "results/parms/values", parameter_index("slope_signal"),
               [](double x) { return x + 1e-4; });
  const CompareRun r = rabbit_compare({plain(), shifted.string()});
  EXPECT_EQ(r.exit_code, 1) << shown(r);
  EXPECT_NE(r.out.find("FAIL  results  parms values: 13 entries, 1 beyond tolerance;"), std::string::npos)
      << shown(r);
  EXPECT_NE(r.out.find("worst [slope_signal]: A "), std::string::npos) << shown(r);
  EXPECT_NE(r.out.find("ok    results_asimov  parms values"), std::string::npos) << shown(r);
  EXPECT_NE(r.out.find("rabbit_compare: beyond tolerance: 1 of "), std::string::npos) << shown(r);
  // Tolerances and the selection change the verdict.
  EXPECT_EQ(rabbit_compare({plain(), shifted.string(), "--tol-parms", "0.1"}).exit_code, 0);
  EXPECT_EQ(rabbit_compare({plain(), shifted.string(), "--tol-scale", "1e5"}).exit_code, 0);
  EXPECT_EQ(rabbit_compare({plain(), shifted.string(), "--quantities", "cov", "impacts"}).exit_code, 0);
  EXPECT_EQ(rabbit_compare({plain(), shifted.string(), "--groups", "asimov"}).exit_code, 0);
  EXPECT_EQ(rabbit_compare({plain(), shifted.string(), "--quantities", "parms"}).exit_code, 1);
  EXPECT_EQ(rabbit_compare({plain(), shifted.string(), "--entry-tolerance", "results/parms[slope_signal]=1"})
                .exit_code,
            0);
  EXPECT_EQ(
      rabbit_compare({plain(), shifted.string(), "--entry-tolerance", "results/parms[sig]=1"}).exit_code, 1);
}

TEST_F(RabbitCompare, ChangedVarianceExitsOneAndIsNamed) {
  const fs::path changed = copy_of_plain("variance.hdf5");
  // In-range bin 3 of the channel's 10 bins: stored entry 4 where the file holds the flow bins.
  const std::string dataset = "results/mappings/BaseMapping/channels/ch0/hist_postfit_inclusive/variances";
  const size_t stored = dataset_size(changed, dataset);
  ASSERT_TRUE(stored == 10 || stored == 12) << stored;
  change_entry(changed, dataset, stored == 12 ? 4 : 3, [](double v) { return v * 1.001; });
  const CompareRun r = rabbit_compare({plain(), changed.string()});
  EXPECT_EQ(r.exit_code, 1) << shown(r);
  EXPECT_NE(
      r.out.find("FAIL  results  mappings/BaseMapping/channels/ch0/hist_postfit_inclusive uncertainties: "),
      std::string::npos)
      << shown(r);
  EXPECT_NE(r.out.find("1 beyond tolerance; largest deviation 0.0005 relative"), std::string::npos)
      << shown(r);
  EXPECT_NE(r.out.find("worst [3]: A "), std::string::npos) << shown(r);
  // The values are untouched.
  EXPECT_NE(r.out.find("ok    results  mappings/BaseMapping/channels/ch0/hist_postfit_inclusive values"),
            std::string::npos)
      << shown(r);
}

TEST_F(RabbitCompare, MissingGroupExitsOneAndIsNamed) {
  const fs::path missing = copy_of_plain("missing.hdf5");
  delete_link(missing, "results_asimov");
  CompareRun r = rabbit_compare({plain(), missing.string()});
  EXPECT_EQ(r.exit_code, 1) << shown(r);
  EXPECT_NE(r.out.find("FAIL  results_asimov: only in A\n"), std::string::npos) << shown(r);
  r = rabbit_compare({missing.string(), plain()});
  EXPECT_EQ(r.exit_code, 1) << shown(r);
  EXPECT_NE(r.out.find("FAIL  results_asimov: only in B\n"), std::string::npos) << shown(r);
  // A partial reference: what only B holds is not a failure.
  r = rabbit_compare({missing.string(), plain(), "--subset"});
  EXPECT_EQ(r.exit_code, 0) << shown(r);
}

TEST_F(RabbitCompare, EveryEntryOnRequestAndQuietOutput) {
  const fs::path shifted = copy_of_plain("two_shifted.hdf5");
  for (const char* p : {"sig", "slope_signal"})
    change_entry(shifted, "results/parms/values", parameter_index(p), [](double x) { return x + 1e-3; });
  CompareRun r = rabbit_compare({plain(), shifted.string(), "--all-entries", "--quiet"});
  EXPECT_EQ(r.exit_code, 1) << shown(r);
  EXPECT_NE(r.out.find("\n        [sig]: A "), std::string::npos) << shown(r);
  EXPECT_NE(r.out.find("\n        [slope_signal]: A "), std::string::npos) << shown(r);
  EXPECT_EQ(r.out.find("ok  "), std::string::npos) << shown(r);  // quiet: failures only
  EXPECT_EQ(r.out.find("A: "), std::string::npos) << shown(r);
  r = rabbit_compare({plain(), shifted.string()});
  EXPECT_EQ(r.out.find("\n        [sig]: A "), std::string::npos) << shown(r);  // only the worst, on its line
}

TEST_F(RabbitCompare, BadInputExitsTwo) {
  const fs::path dir = rabbit::test::scratch_dir("rabbit_compare_bad");
  const fs::path broken_json = dir / "broken.json";
  std::ofstream(broken_json) << "{\"results\": {\"data_obs\": [1, }";
  const std::string tensor =
      (rabbit::test::source_dir() / "tests" / "reference" / "tensors" / "dense.hdf5").string();
  const std::vector<std::vector<std::string>> cases = {
      {plain(), (dir / "no_such_file.hdf5").string()},
      {plain(), tensor},                // a fit tensor, not a result
      {broken_json.string(), plain()},  // malformed JSON
      {plain()},                        // one file
      {plain(), plain(), "--no-such-option"},
      {plain(), plain(), "--groups", "results_toy.*"},
      {plain(), plain(), "--quantities", "nothing_like_this"},
      {plain(), plain(), "--quantities", "("},
      {plain(), plain(), "--tol-parms", "-1"},
      {plain(), plain(), "--entry-tolerance", "results/parms[sig]=much"},
      {plain(), plain(), "--entry-tolerance", "parms[sig]=1"},
      {plain(), plain(), "--entry-tolerance", "results/parms[sig=1"},
  };
  for (const auto& args : cases) {
    const CompareRun r = rabbit_compare(args);
    EXPECT_EQ(r.exit_code, 2) << args.back() << "\n" << shown(r);
    EXPECT_EQ(r.err.rfind("rabbit_compare: error: ", 0), 0u) << shown(r);
  }
  EXPECT_EQ(rabbit_compare({"--help"}).exit_code, 0);
}

// Our fit of each reference case against the JSON upstream wrote: within the default tolerances,
// except the measured deviations of docs/validation.md, given as --entry-tolerance.
TEST(RabbitCompareReference, OurResultAgreesWithUpstreamJsonOfEveryCase) {
  const fs::path reference = rabbit::test::source_dir() / "tests" / "reference";
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(reference / "fits"))
    if (e.path().extension() == ".json") cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  ASSERT_GE(cases.size(), 10u);
  const auto known = rabbit::test::reference_known_deviations();
  for (const auto& json : cases) {
    const std::string name = json.stem().string();
    SCOPED_TRACE(name);
    const rabbit::io::Json ref = rabbit::io::Json::parse_file(json.string());
    const fs::path out = rabbit::test::scratch_dir("rabbit_compare_" + name);
    std::string args = (reference / "tensors" / ref.at("tensor").string()).string();
    for (const auto& a : ref.at("args").strings()) args += " " + a;
    ASSERT_EQ(rabbit::test::run_rabbit_fit_in_process(args + " -o " + out.string() + " --outname fit.hdf5"),
              0)
        << args;
    std::vector<std::string> compare_args = {json.string(), (out / "fit.hdf5").string()};
    for (const auto& e : rabbit::test::entry_tolerances(name, known)) {
      char rel[32];
      std::snprintf(rel, sizeof rel, "%.17g", e.relative);
      const bool number = e.entry.front() != '[';  // a number's entry is its key, implied
      compare_args.push_back("--entry-tolerance");
      compare_args.push_back(e.group + "/" + e.quantity + (number ? "" : e.entry) + "=" + rel);
    }
    const CompareRun r = rabbit_compare(compare_args);
    EXPECT_EQ(r.exit_code, 0) << shown(r);
  }
}

}  // namespace
