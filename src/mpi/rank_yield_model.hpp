#pragma once
// RankYieldModel: on rank 0, the yield model of a fit across ranks (docs/mpi.md "Postfit yields from
// the owning ranks"). The yields of observed bins, their Jacobians, ∂ν/∂β, the profiled β and its
// Jacobian, the NLL and its constants come from the rank that owns each bin, gathered in rank
// order; rank 0's own bins and the masked channels from rank 0's own CPU shard. The BB state
// (k, masks, centres, stored β) is rank 0's, and every change of it reaches every rank.
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "protocol.hpp"
#include "rabbit/model/yield_model.hpp"

namespace rabbit::mpi::detail {

class RankYieldModel : public YieldModel {
 public:
  /// `own`: rank 0's shard over [ranges[0]) of the whole input, as a yield model over every bin;
  /// `ranges`: each rank's observed bins; `nbins`, `nbinsfull`: the input's counts.
  RankYieldModel(YieldModel& own, std::vector<std::pair<int64_t, int64_t>> ranges, int64_t nbins,
                 int64_t nbinsfull, int64_t nproc)
      : own_(own), ranges_(std::move(ranges)), nbins_(nbins), nbinsfull_(nbinsfull), nproc_(nproc) {}

  bool has_bb() const override { return own_.has_bb(); }
  bool bb_full() const override { return own_.bb_full(); }
  int64_t bb_entries() const override { return own_.bb_entries(); }
  const Eigen::VectorXd& bb_kstat() const override { return own_.bb_kstat(); }
  const std::vector<uint8_t>& bb_mask() const override { return own_.bb_mask(); }
  Eigen::VectorXd default_beta_centres() const override { return own_.default_beta_centres(); }
  void set_beta_centres(const Eigen::VectorXd& beta0) override;
  const Eigen::VectorXd& beta_centres() const override { return own_.beta_centres(); }
  void set_stored_beta(const Eigen::VectorXd& beta) override;
  const Eigen::VectorXd& stored_beta() const override { return own_.stored_beta(); }
  bool beta_variations_active() const override { return own_.beta_variations_active(); }
  void set_observed(const Eigen::VectorXd& nobs, const Eigen::VectorXd& varnobs) override;

  void expected_yields(const Eigen::VectorXd& xi, int64_t first, int64_t last, BetaMode mode,
                       Eigen::VectorXd* per_bin, Eigen::MatrixXd* per_process = nullptr) override;
  Eigen::MatrixXd yield_jacobian(const Eigen::VectorXd& xi, int64_t first, int64_t last,
                                 BetaMode mode) override;
  Eigen::MatrixXd process_yield_jacobian(const Eigen::VectorXd& xi, int64_t first, int64_t last,
                                         BetaMode mode) override;
  Eigen::MatrixXd beta_yield_partials(const Eigen::VectorXd& xi, int64_t first, int64_t last,
                                      BetaMode mode) override;
  Eigen::VectorXd profiled_beta(const Eigen::VectorXd& xi) override;
  Eigen::MatrixXd profiled_beta_jacobian(const Eigen::VectorXd& xi, int64_t first, int64_t last) override;
  Eigen::VectorXd profiled_beta_gains(const Eigen::VectorXd& xi, int64_t first, int64_t last) override;

  double value(const Eigen::VectorXd& xi) override;
  double full_nll_constant() const override;

 private:
  // The bins of [first, last) in the order the parts are laid out: rank 0's own observed bins, the
  // other ranks' in rank order, then the masked bins (rank 0's). Each part's first row in the result
  // is its offset from `first`.
  struct Part {
    int rank;            // 0: rank 0's own shard
    int64_t begin, end;  // bins of the full axis
  };
  std::vector<Part> parts(int64_t first, int64_t last) const;
  /// Broadcasts `request`, runs `local` (rank 0's part) while the servers answer, gathers every
  /// rank's reply in rank order and checks that rank r's reply holds `expected(r)` values.
  std::vector<std::vector<double>> exchange(Request request, const std::function<void()>& local,
                                            const std::function<size_t(int)>& expected) const;
  static Request ranged(Op op, const Eigen::VectorXd& xi, int64_t first, int64_t last, BetaMode mode,
                        int64_t flag = 0);
  /// A matrix whose rows are `rows_per_bin` per bin of [first, last) and whose `cols` columns are the
  /// same on every rank, or (beta_yield_partials) whose columns are BB entries: a rank's columns are
  /// then those of its own entries, placed at its first entry (`entry_columns`).
  Eigen::MatrixXd stacked(Op op, const Eigen::VectorXd& xi, int64_t first, int64_t last, BetaMode mode,
                          int64_t rows_per_bin, int64_t cols, bool entry_columns,
                          const std::function<Eigen::MatrixXd(int64_t, int64_t)>& own_part);
  /// BB entries per bin: 1 (lite) or nproc (full); 0 without BB.
  int64_t entry_width() const { return has_bb() ? (bb_full() ? nproc_ : 1) : 0; }

  YieldModel& own_;
  std::vector<std::pair<int64_t, int64_t>> ranges_;
  int64_t nbins_, nbinsfull_, nproc_;
};

}  // namespace rabbit::mpi::detail
