// The dense Hessian's SYRK-path element bodies (hessian_elements.hpp) and the host policy's SYRKX,
// tile by tile as shard_pipeline.hpp runs them, against a plain loop of Γᵀ K2ᵀ 𝒲 K2 Γ: symmetric
// and asymmetric tensors, tiles that do not divide the entries, one-bin tiles.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "host_ops.hpp"

namespace rabbit {
namespace {

Eigen::MatrixXd tiled_gram(const std::vector<double>& K2, const std::vector<double>& omega,
                           const std::vector<int32_t>& proc, const std::vector<double>& h1, int64_t E,
                           int nproc, int64_t W, int64_t S, bool symmetric, int64_t R) {
  testing::HostOps ops;
  std::vector<int32_t> bin(E);
  for (int64_t e = 0; e < E; ++e) bin[e] = static_cast<int32_t>(e / nproc);
  const pipeline::EntryArrays entries{E, bin.data(), proc.data(), nullptr};
  std::vector<double> indicator(E * nproc);
  ops.process_indicator(entries, nproc, indicator.data());
  for (int64_t e = 0; e < E; ++e)
    for (int q = 0; q < nproc; ++q) EXPECT_EQ(indicator[e + E * q], proc[e] == q ? 1.0 : 0.0);
  std::vector<double> G(R * S), B(R * S), C(S * S, std::nan(""));
  for (int64_t e0 = 0; e0 < E; e0 += R) {
    const int64_t rows = std::min(R, E - e0);
    ops.theta_tile(K2.data(), W, S, symmetric, h1.data(), e0, rows, G.data());
    ops.mix_tile(E, nproc, S, omega.data(), G.data(), e0, rows, B.data());
    ops.syrkx_lower(S, rows, G.data(), B.data(), C.data(), e0 > 0);
  }
  Eigen::MatrixXd lower = Eigen::Map<Eigen::MatrixXd>(C.data(), S, S);
  return lower.selfadjointView<Eigen::Lower>();
}

TEST(HessianTiles, SyrkxOverTilesEqualsPlainGram) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const int nproc = 3;
  const int64_t nbins = 7, E = nbins * nproc, S = 5;
  for (bool symmetric : {false, true}) {
    const int64_t W = symmetric ? S : 2 * S;
    std::vector<double> K2(E * W), h1(S), omega(E * nproc);
    std::vector<int32_t> proc(E);
    for (double& v : K2) v = u(rng);
    for (double& v : h1) v = u(rng);
    for (int64_t e = 0; e < E; ++e) proc[e] = static_cast<int32_t>(e % nproc);
    // 𝒲_b symmetric per bin: ω[b·P + p, q] = 𝒲_b[p, q].
    for (int64_t b = 0; b < nbins; ++b)
      for (int p = 0; p < nproc; ++p)
        for (int q = 0; q <= p; ++q) omega[b * nproc + p + E * q] = omega[b * nproc + q + E * p] = u(rng);
    // Plain loop: Σ_b Σ_{p,q} 𝒲_b[p,q] g_{bp} g_{bq}ᵀ with g_e[s] = K2[e,s] + h'_s K2[e,S+s].
    Eigen::MatrixXd plain = Eigen::MatrixXd::Zero(S, S);
    auto g = [&](int64_t e, int64_t s) {
      return K2[e * W + s] + (symmetric ? 0.0 : h1[s] * K2[e * W + S + s]);
    };
    for (int64_t b = 0; b < nbins; ++b)
      for (int p = 0; p < nproc; ++p)
        for (int q = 0; q < nproc; ++q)
          for (int64_t s = 0; s < S; ++s)
            for (int64_t t = 0; t < S; ++t)
              plain(s, t) += omega[b * nproc + p + E * q] * g(b * nproc + p, s) * g(b * nproc + q, t);
    for (int64_t R : {int64_t(3), int64_t(6), int64_t(9), E}) {  // 1, 2 and 3 bins per tile, one tile
      const Eigen::MatrixXd got = tiled_gram(K2, omega, proc, h1, E, nproc, W, S, symmetric, R);
      EXPECT_LT((got - plain).cwiseAbs().maxCoeff(), 1e-13 * (1 + plain.cwiseAbs().maxCoeff()))
          << (symmetric ? "symmetric" : "asymmetric") << ", tiles of " << R << " entries";
    }
  }
}

}  // namespace
}  // namespace rabbit
