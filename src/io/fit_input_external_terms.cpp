// read_fit_input, external likelihood terms (docs/input-reader.md "External terms", checklist item 16):
// params, gradient, dense or sparse Hessian (densified; unsorted 2026-04-07/08 files sorted with a
// warning) and the optional scalars of rabbit PR #147. Global information: a ranged read holds all.
#include <algorithm>
#include <numeric>
#include <set>

#include "fit_input_reader.hpp"
#include "rabbit/core/logging.hpp"

namespace rabbit::io {

using h5::DatasetInfo;
using h5::shape_to_string;

// ---------------------------------------------------------------- docs/input-reader.md "External terms"
void FitInputReader::read_external_terms() {
  if (!r_.exists("external_terms")) return;
  if (!r_.is_group("external_terms")) fail_file("'external_terms' must be a group");
  for (const std::string& name : r_.children("external_terms")) {
    const std::string base = "external_terms/" + name;
    if (!r_.is_group(base)) {
      log().debug("{}: ignoring non-group '{}'", d_.filename, base);
      continue;
    }
    ExternalTerm term;
    term.name = name;
    require_dataset(base + "/params");
    term.params = r_.read_strings(base + "/params");
    const auto n = static_cast<int64_t>(term.params.size());
    std::set<std::string> unique(term.params.begin(), term.params.end());
    if (static_cast<int64_t>(unique.size()) != n) fail(base + "/params", "parameter names are not unique");
    if (r_.exists(base + "/grad_values")) {
      const DatasetInfo g = float_info(base + "/grad_values");
      expect_shape(g, {n}, "[n] with n = len(params)");
      Eigen::VectorXd v(n);
      r_.read_doubles(g, v.data());
      check_finite(g.path, v.data(), n, g.shape);
      term.grad_values = std::move(v);
    }
    if (r_.exists(base + "/hess_dense")) {
      const DatasetInfo h = float_info(base + "/hess_dense");
      if (h.shape != std::vector<int64_t>{n, n}) {
        fail(h.path, "is " + h.shape_string() + " but 'params' has " + std::to_string(n) + " names");
      }
      Eigen::MatrixXd m(n, n);
      r_.read_doubles(h, m.data());
      check_finite(h.path, m.data(), h.size, h.shape);
      m.transposeInPlace();
      term.hess = std::move(m);
    } else if (r_.exists(base + "/hess_sparse")) {
      term.hess = read_sparse_hessian(base + "/hess_sparse", n);
      term.hess_was_sparse = true;
    }
    if (!term.grad_values && !term.hess) {
      fail(base, "has neither 'grad_values' nor a Hessian ('hess_dense'/'hess_sparse')");
    }
    // Optional scalars of rabbit PR #147 (h5py scalar datasets); absent ≠ 0 (docs/input-reader.md).
    term.const_value = read_optional_scalar(base + "/const");
    term.lognorm = read_optional_scalar(base + "/lognorm");
    d_.external_terms.push_back(std::move(term));
  }
}

std::optional<double> FitInputReader::read_optional_scalar(const std::string& path) const {
  if (!r_.exists(path)) return std::nullopt;
  const DatasetInfo info = float_info(path);
  if (info.size != 1) fail(path, "has " + std::to_string(info.size) + " elements, expected one (a scalar)");
  double v = 0.0;
  r_.read_doubles(info, &v);
  check_finite(path, &v, 1, info.shape);
  return v;
}

Eigen::MatrixXd FitInputReader::read_sparse_hessian(const std::string& group, int64_t n) const {
  if (!r_.is_group(group) || !r_.is_dataset(group + "/indices") || !r_.is_dataset(group + "/values")) {
    fail_file("'" + group + "' must be a group with 'indices' and 'values'");
  }
  const SparseGroup g = open_sparse(group);
  if (g.dense_shape != std::vector<int64_t>{n, n}) {
    fail(group, "dense_shape " + shape_to_string(g.dense_shape) + " but 'params' has " + std::to_string(n) +
                    " names");
  }
  const std::vector<int64_t> idx = r_.read_ints(g.indices);
  const std::vector<double> values = read_checked(g.values);
  std::vector<int64_t> order(static_cast<size_t>(g.nnz));
  std::iota(order.begin(), order.end(), 0);
  bool sorted = true;
  for (int64_t k = 0; k < g.nnz; ++k) {
    const int64_t row = idx[static_cast<size_t>(2 * k)], col = idx[static_cast<size_t>(2 * k + 1)];
    if (row < 0 || row >= n || col < 0 || col >= n) {
      fail(g.indices.path, "row " + std::to_string(k) + " (" + std::to_string(row) + "," +
                               std::to_string(col) + ") out of bounds for dense_shape " +
                               shape_to_string(g.dense_shape));
    }
    if (k > 0 &&
        row * n + col <= idx[static_cast<size_t>(2 * k - 2)] * n + idx[static_cast<size_t>(2 * k - 1)]) {
      sorted = false;
    }
  }
  if (!sorted) {
    // Files of 2026-04-07/08 were written unsorted.
    log().warn("{}: '{}' is not in canonical row-major order (2026-04-07/08 writer); sorted on read",
               d_.filename, g.indices.path);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return idx[static_cast<size_t>(2 * a)] * n + idx[static_cast<size_t>(2 * a + 1)] <
             idx[static_cast<size_t>(2 * b)] * n + idx[static_cast<size_t>(2 * b + 1)];
    });
  }
  Eigen::MatrixXd m = Eigen::MatrixXd::Zero(n, n);
  int64_t previous = -1;
  for (int64_t k : order) {
    const int64_t row = idx[static_cast<size_t>(2 * k)], col = idx[static_cast<size_t>(2 * k + 1)];
    if (row * n + col == previous)
      fail(g.indices.path, "duplicate entry (" + std::to_string(row) + "," + std::to_string(col) + ")");
    previous = row * n + col;
    m(row, col) = values[static_cast<size_t>(k)];
  }
  return m;
}

}  // namespace rabbit::io
