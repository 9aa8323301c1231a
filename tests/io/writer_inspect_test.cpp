// rabbit_inspect's diagnostics on a tensor written with known problems, and the app's exit codes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/io/inspect.hpp"
#include "rabbit/io/tensor_writer.hpp"
#include "support/test_paths.hpp"

namespace rabbit {
namespace {

const inspect::Diagnostic& find(const std::vector<inspect::Diagnostic>& all, const std::string& prefix) {
  for (const auto& d : all)
    if (d.title.find(prefix) != std::string::npos) return d;
  throw std::runtime_error("no diagnostic " + prefix);
}

std::string write_problem_file() {
  TensorWriter w(SystematicType::log_normal, /*allow_negative_expectation=*/true);
  w.add_channel("ch", {axis::regular(3, 0, 3, "x"), axis::str_category({"e", "mu"}, "f")});
  w.add_channel("empty", {axis::regular(2, 0, 2, "y")});
  w.add_data("ch", {20, 0, 30, 5, 40, 50});  // bin 1: zero data; bin 3: 5 < 10
  w.add_data("empty", {0, 0});
  w.add_process("ch", "sig", {10, 10, 0, 10, 10, -1}, true, std::vector<double>{1, 1, 0, 400, 1, 1});
  w.add_process("ch", "bkg", {10, 10, 0, 10, 10, 10});  // bin 2: data 30, prediction 0
  w.add_process("empty", "sig", {0.5, 3}, true);
  w.add_process("empty", "bkg", {0, 0});
  w.add_norm_systematic("lumi", {"sig"}, "ch", {1.02});
  w.add_norm_systematic("useless", {"sig"}, "ch", {1.0});  // logk exactly 0 everywhere
  w.add_norm_systematic("huge", {"sig"}, "ch", {3.0});     // ratio 3 > 2
  const auto path = (test::scratch_dir("writer_inspect") / "problems.hdf5").string();
  w.write(path);
  return path;
}

TEST(WriterInspect, DiagnosticsFindEveryPlantedProblem) {
  const FitInputData d = read_fit_input(write_problem_file());
  const auto all = inspect::diagnose(d);
  EXPECT_EQ(find(all, "channels with empty data").count, 1u);
  EXPECT_EQ(find(all, "channels with empty data").details.at(0), "empty");
  EXPECT_EQ(find(all, "fewer than 10 observed").count, 4u);  // ch bins 1, 3 and both of "empty"
  EXPECT_EQ(find(all, "zero total prediction").count, 1u);
  EXPECT_EQ(find(all, "zero total prediction").details.at(0), "ch (x=1, f=e): 30 events, prediction 0");
  EXPECT_EQ(find(all, "zero data but a positive").count, 3u);  // ch bin 1, empty bins 0 and 1
  EXPECT_EQ(find(all, "total prediction below 1").count, 2u);  // ch bin 2 (0), empty bin 0 (0.5)
  EXPECT_EQ(find(all, "negative nominal").count, 1u);
  EXPECT_EQ(find(all, "relative MC statistical").count,
            2u);                                       // ch bin 3: sqrt(410)/20, empty bin 0: sqrt(0.5)/0.5
  EXPECT_EQ(find(all, "zero total yield").count, 1u);  // bkg in "empty"
  EXPECT_EQ(find(all, "without any effect").count, 1u);
  EXPECT_EQ(find(all, "without any effect").details.at(0), "useless");
  EXPECT_EQ(find(all, "without any systematic").count, 1u);  // bkg
  EXPECT_EQ(find(all, "extreme").count, 1u);
  EXPECT_NE(find(all, "extreme").details.at(0).find("huge"), std::string::npos);

  std::ostringstream summary;
  inspect::print_summary(summary, d);
  EXPECT_NE(summary.str().find("axis f (category_str, category_str): 2 bins {e, mu} +overflow"),
            std::string::npos)
      << summary.str();
  EXPECT_NE(summary.str().find("lumi"), std::string::npos);
}

TEST(WriterInspect, AppExitCodes) {
  const auto app = (test::binary_dir() / "rabbit_inspect").string();
  if (!std::filesystem::exists(app)) GTEST_SKIP() << "rabbit_inspect not built";
  const auto example = (test::source_dir() / "examples" / "example_tensor.hdf5").string();
  const auto out = (test::scratch_dir("writer_inspect_app") / "out.txt").string();
  EXPECT_EQ(std::system((app + " " + example + " > " + out + " 2>&1").c_str()), 0);
  EXPECT_EQ(WEXITSTATUS(std::system((app + " " + example + " --strict > " + out + " 2>&1").c_str())), 1);
  EXPECT_EQ(WEXITSTATUS(std::system((app + " /nonexistent.hdf5 > " + out + " 2>&1").c_str())), 3);
  std::ifstream in(out);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line.rfind("rabbit_inspect: error: /nonexistent.hdf5", 0), 0u) << line;
  EXPECT_EQ(
      WEXITSTATUS(std::system((app + " " + write_problem_file() + " --strict > " + out + " 2>&1").c_str())),
      1);
}

}  // namespace
}  // namespace rabbit
