// The dense Hessian of an uncoupled CPU shard by column blocks (docs/architecture.md "Threads"): the
// lower triangle's columns are cut into blocks that depend on n only, and the threads take the blocks
// in turn, each block over all bins in bin order. A block's numbers are then a function of the block
// and the point, whoever computes it: the Hessian is the same for every thread count above one and
// every schedule, and a thread that is descheduled holds up one block, not a fixed share of the bins.
// Memory stays one triangle (the blocks) plus one n × n total, against one n × n sum per thread before;
// the price is phase A, the profile and a read of the tensor once per block instead of once (O(W) per
// entry and block against the block's O(n · width) of rank updates; docs/benchmarks.md "Contention,
// short evaluations and the Hessian").
#include <algorithm>

#include "rabbit/core/worker_pool.hpp"
#include "shard_evaluation.hpp"

namespace rabbit::cpu_detail {

using Eigen::MatrixXd;

inline std::vector<int64_t> hessian_column_blocks(int64_t n) {
  const int64_t count = std::min<int64_t>(kMaxHessianBlocks, n / kMinHessianBlockWidth);
  if (count < 2) return {};
  // equal shares of the triangle's n(n+1)/2 entries: the first blocks are narrow and tall
  std::vector<int64_t> cols{0};
  const double share = 0.5 * static_cast<double>(n) * static_cast<double>(n + 1) / static_cast<double>(count);
  double area = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    area += static_cast<double>(n - j);
    if (area >= share * static_cast<double>(cols.size()) && static_cast<int64_t>(cols.size()) < count)
      cols.push_back(j + 1);
  }
  if (cols.back() != n) cols.push_back(n);
  return cols;
}

inline void ShardEvaluation::run_hessian_blocks(Request& req, std::vector<Accum>& accs,
                                                const std::vector<int64_t>& cols, int T, int nc) {
  const int64_t k = pt.k;
  const int64_t maxe = L.max_entries(s.begin_, s.end_);
  const int64_t bw = s.beta_width();
  const int64_t blocks = static_cast<int64_t>(cols.size()) - 1;
  std::vector<Accum> block(blocks);
  ChunkQueue queue(blocks);
  s.pool->share(T, [&](int) {
    BinScratch sc;
    sc.resize(maxe, 1, nc, k);
    for (int64_t u; (u = queue.take()) >= 0;) {
      if (auto hook = WorkerPool::item_taken_hook.load(std::memory_order_relaxed)) hook();
      Accum& acc = block[u];
      acc.tiled = true;
      acc.h0 = cols[u];
      acc.h1 = cols[u + 1];
      init_accum(acc, req, k);
      for (int64_t b = s.begin_; b < s.end_; ++b) {
        yields(b, sc, 0);
        // block 0's sums (value, gradient, πθ and ππ parts, β) are the ones kept
        double* bo = u == 0 && req.beta_out ? req.beta_out->data() + (b - s.begin_) * bw : nullptr;
        acc.f += prof.profile_bin(b, sc, 0, 0, true, req.beta, bo);
        accumulate(b, sc, 0, 0, req, acc, nullptr);
      }
      flush_E(acc);
      flush_J(acc);
      for (MatrixXd* scratch : {&acc.Epos, &acc.Eneg, &acc.Lrows, &acc.Rrows}) scratch->resize(0, 0);
      if (u > 0) acc.X.resize(0, 0);
    }
  });
  MatrixXd H = MatrixXd::Zero(n, n);
  for (int64_t u = 0; u < blocks; ++u) {
    H.block(cols[u], cols[u], n - cols[u], cols[u + 1] - cols[u]) = block[u].H;
    block[u].H.resize(0, 0);
  }
  accs.assign(1, std::move(block[0]));
  accs[0].tiled = false;
  accs[0].H = std::move(H);
}

}  // namespace rabbit::cpu_detail
