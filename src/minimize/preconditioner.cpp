// Internal-coordinate preconditioner (docs/minimizers.md "Preconditioner").
#include "rabbit/minimize/preconditioner.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/minimize/dense_linalg.hpp"

namespace rabbit {

void validate(const PreconditionerOptions& o) {
  if (o.blocks != "auto" && o.blocks != "expressions" && o.blocks != "none")
    throw OptionError(fmt::format("--preconditionBlocks {}: must be auto, expressions or none", o.blocks));
  if (o.transform != "ridge" && o.transform != "spectral")
    throw OptionError(fmt::format("--preconditionTransform {}: must be ridge or spectral", o.transform));
  if (o.from != "hessian" && o.from != "gaussnewton")
    throw OptionError(fmt::format("--preconditionFrom {}: must be hessian or gaussnewton", o.from));
  if (!(o.ridge >= 0.0)) throw OptionError(fmt::format("--preconditionRidge must be >= 0, got {}", o.ridge));
  if (!(o.block_threshold >= 0.0))
    throw OptionError(fmt::format("--preconditionBlockThreshold must be >= 0, got {}", o.block_threshold));
}

namespace {

double condition_number(const Eigen::MatrixXd& B) {
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(B, Eigen::EigenvaluesOnly);
  const Eigen::VectorXd a = es.eigenvalues().cwiseAbs();
  const double lo = a.minCoeff(), hi = a.maxCoeff();
  return lo > 0.0 ? hi / lo : std::numeric_limits<double>::infinity();
}

// Lower factor of the whitening matrix for one symmetric block, or false when unusable.
bool factor_block(const Eigen::MatrixXd& B, const PreconditionerOptions& o, const std::string& label,
                  Eigen::MatrixXd& L) {
  const DenseLinalg& linalg = default_linalg();
  const auto m = B.rows();
  if (o.transform == "spectral") {
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(B);
    Eigen::VectorXd lam = es.eigenvalues().cwiseAbs();
    const double top = lam.maxCoeff();
    if (!(top > 0.0) || !std::isfinite(top)) return false;
    const double floor = std::numeric_limits<double>::epsilon() * static_cast<double>(m) * top;
    lam = lam.cwiseMax(floor);
    const Eigen::MatrixXd A = es.eigenvectors() * lam.asDiagonal() * es.eigenvectors().transpose();
    return linalg.cholesky(0.5 * (A + A.transpose()), L) == 0;
  }
  const double scale = B.diagonal().cwiseAbs().maxCoeff();
  if (!(scale > 0.0) || !std::isfinite(scale)) return false;
  double eps = o.ridge;
  for (int attempt = 0; attempt < 4; ++attempt) {
    if (linalg.cholesky_shifted(B, eps * scale, L) == 0) return true;
    if (attempt == 0) {
      Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(B, Eigen::EigenvaluesOnly);
      const double lmin = es.eigenvalues()[0], lmax = es.eigenvalues()[m - 1];
      if (lmin < 0.0) {
        eps = (std::abs(lmin) + std::max(0.1 * std::abs(lmin), 1e-8 * std::abs(lmax))) / scale;
        continue;
      }
    }
    eps = std::max(eps, 1e-12) * 100.0;
  }
  log().warn("Preconditioner: block {} could not be factorised; skipped", label);
  return false;
}

// Connected components of the correlation graph restricted to `scope` (docs/minimizers.md "Preconditioner"
// step 4).
std::vector<std::vector<int64_t>> auto_blocks(const Eigen::MatrixXd& H, const std::vector<int64_t>& scope,
                                              double threshold) {
  const size_t m = scope.size();
  std::vector<size_t> parent(m);
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  for (size_t a = 0; a < m; ++a) {
    const double haa = H(scope[a], scope[a]);
    if (!(haa > 0.0)) continue;
    for (size_t b = a + 1; b < m; ++b) {
      const double hbb = H(scope[b], scope[b]);
      if (!(hbb > 0.0)) continue;
      if (std::abs(H(scope[a], scope[b])) / std::sqrt(haa * hbb) > threshold) parent[find(a)] = find(b);
    }
  }
  std::vector<std::vector<int64_t>> components;
  std::vector<long> slot(m, -1);
  for (size_t a = 0; a < m; ++a) {
    const size_t root = find(a);
    if (slot[root] < 0) {
      slot[root] = static_cast<long>(components.size());
      components.emplace_back();
    }
    components[slot[root]].push_back(scope[a]);
  }
  return components;
}

}  // namespace

Preconditioner Preconditioner::build(const Eigen::VectorXd& x_ref, const Eigen::MatrixXd& reference,
                                     const PreconditionerOptions& o) {
  validate(o);
  Preconditioner pc(x_ref);
  const int64_t n = x_ref.size();
  if (reference.rows() != n || reference.cols() != n)
    throw OptionError(fmt::format("Preconditioner: reference matrix is {}x{}, expected {}x{}",
                                  reference.rows(), reference.cols(), n, n));
  std::vector<std::vector<int64_t>> sets = o.index_sets;
  std::vector<std::string> labels = o.index_set_labels;
  if (sets.empty()) {
    sets.emplace_back(n);
    std::iota(sets.back().begin(), sets.back().end(), 0);
    labels = {"all"};
  }
  for (auto& s : sets) {
    for (int64_t i : s)
      if (i < 0 || i >= n)
        throw OptionError(fmt::format("Preconditioner: index {} out of range [0, {})", i, n));
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
  }
  // Blocks of the chosen mode.
  std::vector<std::vector<int64_t>> groups;
  std::vector<std::string> group_labels;
  if (o.blocks == "expressions") {
    std::vector<char> taken(n, 0);
    for (size_t s = 0; s < sets.size(); ++s) {
      std::vector<int64_t> g;
      for (int64_t i : sets[s])
        if (!taken[i]) {
          taken[i] = 1;
          g.push_back(i);
        }
      if (g.empty()) continue;
      groups.push_back(std::move(g));
      group_labels.push_back(s < labels.size() ? labels[s] : fmt::format("expr{}", s));
    }
  } else {
    std::vector<int64_t> scope;
    for (const auto& s : sets) scope.insert(scope.end(), s.begin(), s.end());
    std::sort(scope.begin(), scope.end());
    scope.erase(std::unique(scope.begin(), scope.end()), scope.end());
    if (o.blocks == "none") {
      if (!scope.empty()) {
        groups.push_back(scope);
        group_labels.push_back("scope");
      }
    } else {
      groups = auto_blocks(reference, scope, o.block_threshold);
      for (size_t b = 0; b < groups.size(); ++b) group_labels.push_back(fmt::format("auto{}", b));
      size_t largest = 0;
      for (const auto& g : groups) largest = std::max(largest, g.size());
      if (!scope.empty() && 2 * largest > scope.size() && groups.size() > 1)
        log().warn(
            "Preconditioner: the largest block holds {} of {} parameters (correlation graph percolates)",
            largest, scope.size());
    }
  }
  if (groups.empty()) {
    log().warn("Preconditioner: no parameters selected; running unpreconditioned");
    return pc;
  }
  std::vector<double> before, after;
  for (size_t b = 0; b < groups.size(); ++b) {
    const auto& idx = groups[b];
    const auto m = static_cast<Eigen::Index>(idx.size());
    Eigen::MatrixXd B(m, m);
    for (Eigen::Index r = 0; r < m; ++r)
      for (Eigen::Index c = 0; c < m; ++c) B(r, c) = reference(idx[r], idx[c]);
    B = 0.5 * (B + B.transpose()).eval();
    if (!B.allFinite()) {
      log().warn("Preconditioner: block {} has non-finite entries; skipped", group_labels[b]);
      continue;
    }
    Block block;
    block.label = group_labels[b];
    block.indices = idx;
    if (!factor_block(B, o, block.label, block.L)) continue;
    block.Linv = Eigen::MatrixXd::Identity(m, m);
    block.L.triangularView<Eigen::Lower>().solveInPlace(block.Linv);
    block.cond_before = condition_number(B);
    const Eigen::MatrixXd whitened = block.Linv * B * block.Linv.transpose();
    block.cond_after = condition_number(0.5 * (whitened + whitened.transpose()));
    // Never make a block worse (unless it was already singular to working precision).
    if (block.cond_before < 1.0 / std::numeric_limits<double>::epsilon() &&
        block.cond_after > 1.01 * block.cond_before) {
      log().debug("Preconditioner: block {} dropped (condition {:.3g} -> {:.3g})", block.label,
                  block.cond_before, block.cond_after);
      continue;
    }
    log().debug("Preconditioner: block {} ({} parameters): condition {:.3g} -> {:.3g}", block.label, m,
                block.cond_before, block.cond_after);
    before.push_back(block.cond_before);
    after.push_back(block.cond_after);
    pc.blocks_.push_back(std::move(block));
  }
  if (pc.blocks_.empty()) {
    log().warn("Preconditioner: no block could be used; running unpreconditioned");
    return pc;
  }
  size_t nparams = 0;
  for (const auto& b : pc.blocks_) nparams += b.indices.size();
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  log().info(
      "Preconditioned {} of {} block(s), {} parameters; condition number median/worst {:.3g}/{:.3g} -> "
      "{:.3g}/{:.3g}",
      pc.blocks_.size(), groups.size(), nparams, median(before),
      *std::max_element(before.begin(), before.end()), median(after),
      *std::max_element(after.begin(), after.end()));
  return pc;
}

namespace {
Eigen::VectorXd gather(const Eigen::Ref<const Eigen::VectorXd>& v, const std::vector<int64_t>& idx) {
  Eigen::VectorXd out(idx.size());
  for (size_t i = 0; i < idx.size(); ++i) out[i] = v[idx[i]];
  return out;
}
void scatter(Eigen::Ref<Eigen::VectorXd> v, const std::vector<int64_t>& idx, const Eigen::VectorXd& values) {
  for (size_t i = 0; i < idx.size(); ++i) v[idx[i]] = values[i];
}
}  // namespace

void Preconditioner::apply_T(Eigen::Ref<Eigen::VectorXd> v) const {
  for (const auto& b : blocks_) scatter(v, b.indices, b.Linv.transpose() * gather(v, b.indices));
}

void Preconditioner::apply_Tt(Eigen::Ref<Eigen::VectorXd> v) const {
  for (const auto& b : blocks_) scatter(v, b.indices, b.Linv * gather(v, b.indices));
}

void Preconditioner::grad_to_physical(Eigen::Ref<Eigen::VectorXd> g) const {
  for (const auto& b : blocks_)
    scatter(g, b.indices, b.L.triangularView<Eigen::Lower>() * gather(g, b.indices));
}

void Preconditioner::apply_T(Eigen::MatrixXd& V) const {
  for (Eigen::Index c = 0; c < V.cols(); ++c) apply_T(V.col(c));
}

void Preconditioner::apply_Tt(Eigen::MatrixXd& V) const {
  for (Eigen::Index c = 0; c < V.cols(); ++c) apply_Tt(V.col(c));
}

Eigen::VectorXd Preconditioner::to_physical(const Eigen::VectorXd& y) const {
  Eigen::VectorXd x = y;
  apply_T(x);
  return x_ref_ + x;
}

Eigen::VectorXd Preconditioner::from_physical(const Eigen::VectorXd& x) const {
  Eigen::VectorXd d = x - x_ref_;
  for (const auto& b : blocks_)
    scatter(d, b.indices, b.L.triangularView<Eigen::Lower>().transpose() * gather(d, b.indices));
  return d;
}

void Preconditioner::hess_to_internal(Eigen::MatrixXd& H) const {
  // Rows of each block ← L⁻¹ · rows, then columns ← columns · L⁻ᵀ.
  for (const auto& b : blocks_) {
    const auto m = static_cast<Eigen::Index>(b.indices.size());
    Eigen::MatrixXd rows(m, H.cols());
    for (Eigen::Index r = 0; r < m; ++r) rows.row(r) = H.row(b.indices[r]);
    rows = (b.Linv * rows).eval();
    for (Eigen::Index r = 0; r < m; ++r) H.row(b.indices[r]) = rows.row(r);
  }
  for (const auto& b : blocks_) {
    const auto m = static_cast<Eigen::Index>(b.indices.size());
    Eigen::MatrixXd cols(H.rows(), m);
    for (Eigen::Index c = 0; c < m; ++c) cols.col(c) = H.col(b.indices[c]);
    cols = (cols * b.Linv.transpose()).eval();
    for (Eigen::Index c = 0; c < m; ++c) H.col(b.indices[c]) = cols.col(c);
  }
}

// ---------------------------------------------------------------------------------------------

double PreconditionedObjective::value(const Eigen::VectorXd& y) {
  return physical_.value(pc_.to_physical(y));
}

double PreconditionedObjective::value_grad(const Eigen::VectorXd& y, Eigen::VectorXd& grad) {
  const double f = physical_.value_grad(pc_.to_physical(y), grad);
  pc_.apply_Tt(grad);
  return f;
}

double PreconditionedObjective::value_grad_hvp(const Eigen::VectorXd& y, const Eigen::MatrixXd& V,
                                               Eigen::VectorXd& grad, Eigen::MatrixXd& HV) {
  Eigen::MatrixXd TV = V;
  pc_.apply_T(TV);
  const double f = physical_.value_grad_hvp(pc_.to_physical(y), TV, grad, HV);
  pc_.apply_Tt(grad);
  pc_.apply_Tt(HV);
  return f;
}

void PreconditionedObjective::hvp(const Eigen::VectorXd& y, const Eigen::MatrixXd& V, Eigen::MatrixXd& HV) {
  Eigen::MatrixXd TV = V;
  pc_.apply_T(TV);
  physical_.hvp(pc_.to_physical(y), TV, HV);
  pc_.apply_Tt(HV);
}

double PreconditionedObjective::value_grad_hess(const Eigen::VectorXd& y, Eigen::VectorXd& grad,
                                                Eigen::MatrixXd& hess) {
  const double f = physical_.value_grad_hess(pc_.to_physical(y), grad, hess);
  pc_.apply_Tt(grad);
  pc_.hess_to_internal(hess);
  return f;
}

}  // namespace rabbit
