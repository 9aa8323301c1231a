// TensorWriter external terms with rabbit PR #147's optional scalars `const` and `lognorm`
// (docs/tensor-writer.md, docs/input-reader.md): written only when given, as h5py writes them
// (float64 scalar datasets), and read back unchanged; absent ones stay absent for the model.
#include <gtest/gtest.h>

#include <Eigen/Core>
#include <cmath>
#include <limits>
#include <optional>

#include "rabbit/core/error.hpp"
#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/io/hdf5_reader.hpp"
#include "rabbit/io/tensor_writer.hpp"
#include "support/test_paths.hpp"

namespace rabbit {
namespace {

TEST(WriterExternalTerms, GaussianScalarsRoundTrip) {
  TensorWriter w;
  w.add_channel("ch0", {axis::regular(2, 0, 2, "x")});
  w.add_data("ch0", {5, 6});
  w.add_process("ch0", "sig", {4, 4}, true);
  w.add_norm_systematic("lumi", {"sig"}, "ch0", {1.02});
  w.add_norm_systematic("jes", {"sig"}, "ch0", {1.05});
  Eigen::MatrixXd h(2, 2);
  h << 4.0, 1.0, 1.0, 2.0;
  const Eigen::VectorXd mu = Eigen::Vector2d(0.5, -1.0);
  w.add_external_gaussian_term("gauss", {"lumi", "jes"}, mu, h, 1.25);
  w.add_external_term("plain", {"jes"}, Eigen::VectorXd::Constant(1, 0.3), std::nullopt);
  // An explicit 0 is kept (rabbit: "this really is zero", not derived at load).
  w.add_external_term("given", {"lumi"}, std::nullopt, Eigen::MatrixXd::Constant(1, 1, 9.0), 0.0);
  EXPECT_THROW(w.add_external_gaussian_term("bad", {"lumi"}, mu, h), Error);  // 1 name, 2 means
  EXPECT_THROW(w.add_external_term("nan", {"lumi"}, Eigen::VectorXd::Ones(1), std::nullopt,
                                   std::numeric_limits<double>::quiet_NaN()),
               Error);
  const auto path = (test::scratch_dir("writer_external_terms") / "ext.hdf5").string();
  w.write(path);

  const FitInputData d = read_fit_input(path);
  ASSERT_EQ(d.external_terms.size(), 3u);  // HDF5 name order
  const ExternalTerm& gauss = d.external_terms[0];
  const ExternalTerm& given = d.external_terms[1];
  const ExternalTerm& plain = d.external_terms[2];
  EXPECT_EQ(given.name, "given");
  EXPECT_EQ(given.const_value, std::optional<double>(0.0));
  EXPECT_FALSE(given.lognorm);
  EXPECT_FALSE(given.grad_values);
  EXPECT_EQ(gauss.name, "gauss");
  ASSERT_TRUE(gauss.grad_values && gauss.hess);
  // g = −H μ and const = ½ μᵀHμ, by hand: Hμ = (1, −1.5).
  EXPECT_EQ(*gauss.grad_values, Eigen::VectorXd(Eigen::Vector2d(-1.0, 1.5)));
  EXPECT_EQ(*gauss.hess, h);
  EXPECT_EQ(gauss.const_value, std::optional<double>(0.5 * (0.5 * 1.0 + 1.0 * 1.5)));
  EXPECT_EQ(gauss.lognorm, std::optional<double>(1.25));
  EXPECT_FALSE(gauss.hess_was_sparse);
  EXPECT_EQ(plain.name, "plain");
  EXPECT_FALSE(plain.const_value);
  EXPECT_FALSE(plain.lognorm);

  // h5py's layout: rank-0 dataspace, no original_shape.
  h5::Reader r(path);
  const h5::DatasetInfo info = r.info("external_terms/gauss/const");
  EXPECT_EQ(info.storage_rank, 0);
  EXPECT_FALSE(info.has_original_shape);
  EXPECT_EQ(info.size, 1);
  EXPECT_FALSE(r.exists("external_terms/plain/const"));
}

}  // namespace
}  // namespace rabbit
