// read_fit_input, observations: data, variances, pseudodata, the inverse data covariance
// (docs/input-reader.md "Observations") and the constraint weights (docs/input-reader.md
// "Constraint weights"). Every per-bin array holds the observed bins [obs_begin_, obs_end_)
// (docs/input-reader.md "Ranged reads"); the constraint weights are global.
#include "fit_input_reader.hpp"
#include "rabbit/core/logging.hpp"

namespace rabbit::io {

using h5::DatasetInfo;
// ---------------------------------------------------------------- docs/input-reader.md "Observations"
void FitInputReader::read_observations() {
  const DatasetInfo obs = float_info("hdata_obs");
  if (obs.rank() != 1) fail("hdata_obs", "must be 1-D [nbins], found shape " + obs.shape_string());
  d_.nbins = obs.size;
  // The bin count is cross-checked with the tensor's before anything is allocated, so that a
  // forged 'hdata_obs' shape (a small file claiming gigabytes) is refused rather than allocated;
  // the same message as set_nbinsfull's (docs/input-reader.md "Observations").
  int64_t tensor_bins = -1;
  const std::string tensor = d_.sparse ? "hnorm_sparse" : "hnorm";
  if (!d_.sparse) {
    const DatasetInfo norm = r_.info(tensor);
    if (norm.rank() >= 1) tensor_bins = norm.shape[0];
  } else if (r_.has_attribute(tensor, "dense_shape")) {
    const auto dense_shape = r_.read_int_attribute(tensor, "dense_shape");
    if (!dense_shape.empty()) tensor_bins = dense_shape[0];
  }
  if (tensor_bins >= 0 && tensor_bins < d_.nbins)
    fail(tensor, "covers " + std::to_string(tensor_bins) +
                     " bins, fewer than nbins=" + std::to_string(d_.nbins) + " of 'hdata_obs'");
  set_observed_range();
  const int64_t n = held_observed();
  d_.data_obs.resize(n);
  r_.read_doubles_slab(obs, 0, obs_begin_, obs_end_, d_.data_obs.data());
  check_finite("hdata_obs", d_.data_obs.data(), n, obs.shape, 0, obs_begin_);
  const int64_t negative = (d_.data_obs.array() < 0).count();
  if (negative > 0) {
    // The reader cannot know the fit type; a Poisson fit must refuse negative observations.
    log().warn("{}: 'hdata_obs' has {} negative entries (invalid for Poisson fits)", d_.filename, negative);
  }
  if (r_.exists("hdata_var")) {
    const DatasetInfo var = float_info("hdata_var");
    expect_shape(var, {d_.nbins}, "[nbins]");
    Eigen::VectorXd v(n);
    r_.read_doubles_slab(var, 0, obs_begin_, obs_end_, v.data());
    check_finite("hdata_var", v.data(), n, var.shape, 0, obs_begin_);
    check_non_negative("hdata_var", v.data(), n, var.shape, 0, obs_begin_);
    d_.data_var = std::move(v);
  }
  if (r_.exists("hdata_cov_inv")) {
    const DatasetInfo cov = float_info("hdata_cov_inv");
    expect_shape(cov, {d_.nbins, d_.nbins}, "[nbins, nbins]");
    if (d_.ranged) {
      // The rows of the held bins, all columns (covariance fits couple every bin).
      Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> rows(n, d_.nbins);
      r_.read_doubles_slab(cov, 0, obs_begin_, obs_end_, rows.data());
      check_finite("hdata_cov_inv", rows.data(), rows.size(), cov.shape, 0, obs_begin_);
      d_.data_cov_inv = Eigen::MatrixXd(rows);
    } else {
      Eigen::MatrixXd m(d_.nbins, d_.nbins);
      // Stored row-major; reading into the column-major buffer gives the transpose, undone in place.
      r_.read_doubles(cov, m.data());
      check_finite("hdata_cov_inv", m.data(), cov.size, cov.shape);
      m.transposeInPlace();
      d_.data_cov_inv = std::move(m);
    }
  }
  const int64_t npseudo = static_cast<int64_t>(d_.pseudodatanames.size());
  d_.pseudodata.resize(n, 0);
  if (r_.exists("hpseudodata")) {
    const DatasetInfo pd = float_info("hpseudodata");
    expect_shape(pd, {d_.nbins, npseudo}, "[nbins, len(hpseudodatanames)]");
    d_.pseudodata = read_row_major(pd, n, npseudo);
    warn_non_finite("hpseudodata", d_.pseudodata);
    if (r_.exists("hpseudodatavar")) {
      const DatasetInfo pv = float_info("hpseudodatavar");
      expect_shape(pv, {d_.nbins, npseudo}, "same as 'hpseudodata'");
      d_.pseudodatavar = read_row_major(pv, n, npseudo);
      warn_non_finite("hpseudodatavar", *d_.pseudodatavar);
    }
  } else if (npseudo > 0) {
    log().warn("{}: 'hpseudodatanames' lists {} sets but 'hpseudodata' is missing; pseudodata unavailable",
               d_.filename, npseudo);
    d_.pseudodatanames.clear();
  }
}

// The held observed rows of an [nbins, cols] dataset.
Eigen::MatrixXd FitInputReader::read_row_major(const DatasetInfo& info, int64_t rows, int64_t cols) const {
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> m(rows, cols);
  r_.read_doubles_slab(info, 0, obs_begin_, obs_end_, m.data());
  return m;
}

void FitInputReader::warn_non_finite(const std::string& path, const Eigen::MatrixXd& m) const {
  // Only an error when the pseudodata set is used; the reader does not know that.
  if (!m.allFinite()) log().warn("{}: '{}' contains NaN/Inf values", d_.filename, path);
}

// ---------------------------------------------------------------- docs/input-reader.md "Constraint weights"
void FitInputReader::read_constraint_weights() {
  const DatasetInfo cw = float_info("hconstraintweights");
  expect_shape(cw, {d_.nsyst}, "[nsyst]");
  d_.constraintweights.resize(d_.nsyst);
  r_.read_doubles(cw, d_.constraintweights.data());
  check_finite("hconstraintweights", d_.constraintweights.data(), d_.nsyst, cw.shape);
  check_non_negative("hconstraintweights", d_.constraintweights.data(), d_.nsyst, cw.shape);
}

}  // namespace rabbit::io
