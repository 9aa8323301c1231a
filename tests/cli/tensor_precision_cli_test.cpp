// rabbit_fit on a tensor stored as float32 (docs/input-reader.md "Precision"): with
// --tensorPrecision file (the default) the logk stays float32 in memory, and every result (values,
// uncertainties, impacts, histograms and their errors) is the one of --tensorPrecision double within
// docs/validation.md "Tolerances", compared as rabbit_compare does (the float32 products sum in a
// different order: src/backend/cpu/row_block_products.hpp, EntryLayout).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rabbit/compare/compare.hpp"
#include "rabbit/compare/result_tree.hpp"
#include "rabbit/io/tensor_writer.hpp"
#include "support/command.hpp"
#include "support/test_paths.hpp"

namespace rabbit {
namespace {

std::string write_float32_tensor(const std::filesystem::path& dir, bool sparse) {
  TensorWriter w;
  w.add_channel("ch0", {axis::regular(5, 0, 5, "x")});
  w.add_channel("ch0_masked", {axis::regular(2, 0, 2, "y")}, /*masked=*/true);
  w.add_data("ch0", {103, 96, 131, 77, 52});
  w.add_process("ch0", "sig", {20.3, 31.7, 40.1, 18.9, 6.2}, true,
                std::vector<double>{2.1, 3.3, 4.2, 2.0, 0.7});
  w.add_process("ch0", "bkg", {80.1, 70.4, 85.6, 60.2, 45.5}, false,
                std::vector<double>{9.1, 8.3, 9.6, 7.7, 6.1});
  w.add_process("ch0_masked", "sig", {11.1, 7.3}, true);
  w.add_norm_systematic("lumi", {"sig", "bkg"}, "ch0", {1.021});
  w.add_norm_systematic("lumi", {"sig"}, "ch0_masked", {1.021});
  w.add_systematic("shape", "bkg", "ch0", {83.3, 71.9, 84.1, 58.8, 44.1}, {77.7, 69.2, 87.3, 61.0, 46.6},
                   {.symmetrize = Symmetrization::none});
  w.add_systematic("slope", "sig", "ch0", {21.1, 32.2, 39.5, 18.1, 5.9});
  const std::string path = (dir / (sparse ? "sparse_f32.hdf5" : "dense_f32.hdf5")).string();
  w.write(path, {.sparse = sparse, .float32 = true});
  return path;
}

TEST(TensorPrecision, Float32StorageGivesTheResultsOfDoubleStorageWithinTolerance) {
  for (bool sparse : {false, true}) {
    SCOPED_TRACE(sparse ? "sparse" : "dense");
    const auto dir = test::scratch_dir(sparse ? "tensor_precision_sparse" : "tensor_precision_dense");
    const std::string tensor = write_float32_tensor(dir, sparse);
    const std::string common = tensor +
                               " -t 0 --unblind --doImpacts --globalImpacts --saveHists "
                               "--computeHistErrors --outputFormat plain -o " +
                               dir.string();
    const auto kept = test::run_rabbit_fit_captured(common + " --outname kept.hdf5");
    ASSERT_EQ(kept.exit_code, 0) << kept.output;
    EXPECT_NE(kept.output.find("logk held as float32"), std::string::npos) << kept.output;
    const auto promoted =
        test::run_rabbit_fit_captured(common + " --tensorPrecision double --outname promoted.hdf5");
    ASSERT_EQ(promoted.exit_code, 0) << promoted.output;
    EXPECT_EQ(promoted.output.find("logk held as float32"), std::string::npos) << promoted.output;
    compare::CompareOptions options;  // the default tolerances: docs/validation.md "Tolerances"
    options.name_a = "promoted";
    options.name_b = "kept";
    const auto report =
        compare::compare_results(*compare::open_result_file((dir / "promoted.hdf5").string()),
                                 *compare::open_result_file((dir / "kept.hdf5").string()), options);
    for (const auto& r : report.results)
      if (!r.ok()) ADD_FAILURE() << compare::format_result(r);
    EXPECT_GT(report.results.size(), 20u);
  }
}

}  // namespace
}  // namespace rabbit
