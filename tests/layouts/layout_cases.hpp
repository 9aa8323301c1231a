#pragma once
// The option sets the result-layout tests run rabbit_fit with: every case of tests/reference
// (its tensor and arguments), the README's example, and a few option sets no reference case has
// (scans and contours: float categories; per-process, covariance and variation histograms; a
// prefit-only run; toys; the L curve's step_/best_ histograms).
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "rabbit/io/json.hpp"
#include "support/command.hpp"
#include "support/test_paths.hpp"

namespace rabbit::test::layouts {

struct FitCase {
  std::string name;
  std::filesystem::path tensor;
  std::vector<std::string> args;
};

inline std::vector<FitCase> fit_cases() {
  namespace fs = std::filesystem;
  const fs::path reference = source_dir() / "tests" / "reference";
  const fs::path dense = reference / "tensors" / "dense.hdf5";
  std::vector<FitCase> cases;
  std::vector<fs::path> files;
  if (fs::exists(reference / "fits"))
    for (const auto& e : fs::directory_iterator(reference / "fits"))
      if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    const io::Json ref = io::Json::parse_file(f.string());
    cases.push_back(
        {f.stem().string(), reference / "tensors" / ref.at("tensor").string(), ref.at("args").strings()});
  }
  cases.push_back(
      {"example",
       source_dir() / "examples" / "example_tensor.hdf5",
       {"-t", "-1", "0", "--doImpacts", "--globalImpacts", "--saveHists", "--computeHistErrors"}});
  cases.push_back({"scans_and_all_hists",
                   dense,
                   {"-t", "0", "--unblind", "--scan", "sig", "--scanPoints", "3", "--contourScan", "sig",
                    "--contourLevels", "1", "--saveHists", "--saveHistsPerProcess", "--computeHistErrors",
                    "--computeHistErrorsPerProcess", "--computeHistCov", "--computeVariations", "--fullNll",
                    "--gaussianGlobalImpacts"}});
  cases.push_back({"prefit_only", dense, {"-t", "-1", "--prefitOnly", "--saveHists"}});
  cases.push_back({"toys", dense, {"-t", "-1", "1", "--toysDataMode", "expected", "--doImpacts"}});
  cases.push_back({"l_curve",
                   dense,
                   {"-t", "0", "--unblind", "--noBinByBinStat", "-r", "SVD", "Project", "ch1", "a",
                    "--lCurveScan", "--lCurveOptimize"}});
  return cases;
}

/// rabbit_fit on one case, writing `out` (a file name) with the extra arguments; the command's
/// output on failure.
inline CommandResult run_fit_case(const FitCase& c, const std::filesystem::path& out,
                                  const std::string& extra = "") {
  std::vector<std::string> words = {(binary_dir() / "rabbit_fit").string(), c.tensor.string()};
  words.insert(words.end(), c.args.begin(), c.args.end());
  for (const std::string& w :
       {std::string("-o"), out.parent_path().string(), std::string("--outname"), out.filename().string()})
    words.push_back(w);
  std::string command;
  for (const std::string& w : words) {
    command += shell_quote(w);
    command += ' ';
  }
  command += extra;
  CommandResult r = run_command(command);
  r.output = command + "\n" + r.output;
  return r;
}

}  // namespace rabbit::test::layouts
