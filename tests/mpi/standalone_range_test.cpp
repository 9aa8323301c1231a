// What the MPI fitter rests on (docs/mpi.md "Shard servers"): a CPU shard over a ranged read turned
// into an input of its own (mpi::standalone_range) computes, bit for bit, what the shard over the
// same bins of the whole input computes. In process, no mpirun.
#include <gtest/gtest.h>

#include <algorithm>

#include "rabbit/backend/cpu/cpu_shard.hpp"
#include "support/test_paths.hpp"
#if RABBIT_MPI_BUILT
#include "rabbit/mpi/ranks.hpp"
#endif

namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

#if RABBIT_MPI_BUILT
// Relative difference of two results, 0 when they are the same bits.
double difference(const MatrixXd& a, const MatrixXd& b) {
  return a == b ? 0.0 : (a - b).norm() / std::max(a.norm(), b.norm());
}

// `bitwise`: sparse tensors. Dense ones agree to rounding: the CPU shard's GEMVs over the dense logk
// rows (Eigen) start their vector loop at the first aligned row, and a rank's own array is aligned
// differently from the same rows inside the whole array (docs/mpi.md "Shard servers").
void expect_same_shard(const std::string& tensor, rabbit::ModelOptions options, int64_t b0, int64_t b1,
                       bool bitwise) {
  const std::string file = (rabbit::test::source_dir() / "tests/reference/tensors" / tensor).string();
  auto whole =
      rabbit::build_model(std::make_shared<rabbit::FitInputData>(rabbit::read_fit_input(file)), options);
  rabbit::FitInputReadOptions read;
  read.bins = rabbit::BinRange{b0, b1};
  auto local_input = std::make_shared<rabbit::FitInputData>(
      rabbit::mpi::standalone_range(rabbit::read_fit_input(file, read)));
  auto local = rabbit::build_model(local_input, options);
  ASSERT_EQ(local_input->nbins, b1 - b0);
  auto a = rabbit::make_cpu_shard(whole, b0, b1, 1);
  auto b = rabbit::make_cpu_shard(local, 0, b1 - b0, 1);

  const int64_t n = whole->parameters.size();
  ASSERT_EQ(local->parameters.size(), n);
  const double tolerance = bitwise ? 0.0 : 1e-14;
  VectorXd xi = VectorXd::LinSpaced(n, 0.9, 1.1);  // away from the defaults: every term moves
  MatrixXd V = MatrixXd::Identity(n, 3);
  VectorXd ga, gb;
  MatrixXd hva, hvb;
  const double va = a->value_grad_hvp(xi, V, ga, hva), vb = b->value_grad_hvp(xi, V, gb, hvb);
  EXPECT_LE(difference(MatrixXd::Constant(1, 1, va), MatrixXd::Constant(1, 1, vb)), tolerance) << tensor;
  EXPECT_LE(difference(ga, gb), tolerance) << tensor;
  EXPECT_LE(difference(hva, hvb), tolerance) << tensor;
  for (bool profile : {true, false}) {
    MatrixXd ha = MatrixXd::Zero(n, n), hb = MatrixXd::Zero(n, n);
    a->value_grad_hess(xi, ga, ha, profile);
    b->value_grad_hess(xi, gb, hb, profile);
    EXPECT_LE(difference(ha, hb), tolerance) << tensor << " profile " << profile;
  }
  EXPECT_LE(difference(a->profiled_beta(xi), b->profiled_beta(xi)), tolerance) << tensor;
}
#endif

TEST(StandaloneRange, ShardOverItEqualsTheShardOfTheWholeInput) {
#if !RABBIT_MPI_BUILT
  GTEST_SKIP() << "built without MPI (RABBIT_MPI=OFF or no C++ MPI found): src/mpi is not compiled";
#else
  rabbit::ModelOptions lite;
  expect_same_shard("dense.hdf5", lite, 2, 7, false);
  expect_same_shard("sparse_blosc2.hdf5", lite, 13, 40, true);
  rabbit::ModelOptions full;
  full.bb_mode = rabbit::BBMode::full;
  expect_same_shard("dense.hdf5", full, 31, 60, false);
  expect_same_shard("sparse_blosc2.hdf5", full, 1, 5, true);
  expect_same_shard("normal_symmetric_sparse.hdf5", full, 3, 9, true);
#endif
}

}  // namespace
