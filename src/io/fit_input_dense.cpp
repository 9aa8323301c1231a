// read_fit_input, dense model tensors (docs/input-reader.md "Dense model tensors"), the Monte-Carlo
// statistics of dense and sparse files (docs/input-reader.md "Monte-Carlo statistics", with the legacy
// hkstat) and hbetavariations. Per-bin arrays hold the tensor rows [row_begin_, row_end_), read as
// hyperslabs of the chunked datasets (docs/input-reader.md "Ranged reads").
#include <algorithm>
#include <functional>
#include <numeric>

#include "fit_input_reader.hpp"
#include "rabbit/core/logging.hpp"

namespace rabbit::io {

using h5::DatasetInfo;
using h5::shape_to_string;

// ---------------------------------------------------------------- docs/input-reader.md "Dense model tensors"
std::vector<int64_t> FitInputReader::logk_shape(int64_t nbinsfull) const {
  return d_.symmetric_tensor ? std::vector<int64_t>{nbinsfull, d_.nproc, d_.nsyst}
                             : std::vector<int64_t>{nbinsfull, d_.nproc, 2, d_.nsyst};
}

void FitInputReader::set_nbinsfull(int64_t nbinsfull, const std::string& source) {
  if (nbinsfull < d_.nbins) {
    fail(source, "covers " + std::to_string(nbinsfull) +
                     " bins, fewer than nbins=" + std::to_string(d_.nbins) + " of 'hdata_obs'");
  }
  d_.nbinsfull = nbinsfull;
  d_.nbinsmasked = nbinsfull - d_.nbins;
  // docs/input-reader.md "Ranged reads": the tensors hold the observed bins of the range, no masked bins.
  row_begin_ = d_.ranged ? obs_begin_ : 0;
  row_end_ = d_.ranged ? obs_end_ : nbinsfull;
}

void FitInputReader::read_dense_tensors() {
  const DatasetInfo norm = float_info("hnorm");
  if (norm.rank() != 2 || norm.shape[1] != d_.nproc) {
    fail("hnorm", "has shape " + norm.shape_string() +
                      ", expected [nbinsfull, nproc=" + std::to_string(d_.nproc) + "]");
  }
  set_nbinsfull(norm.shape[0], "hnorm");
  const DatasetInfo logk = float_info("hlogk");
  const std::vector<int64_t> expected = logk_shape(d_.nbinsfull);
  if (logk.shape != expected) {
    const int64_t n = std::accumulate(expected.begin(), expected.end(), int64_t{1}, std::multiplies<>());
    fail("hlogk", "has shape " + logk.shape_string() + " (" + std::to_string(logk.size) +
                      " elements), expected " + std::to_string(n) + " for " +
                      (d_.symmetric_tensor ? "a symmetric" : "an asymmetric") + " tensor " +
                      shape_to_string(expected) +
                      " (meta symmetric_tensor=" + (d_.symmetric_tensor ? "true" : "false") +
                      (d_.has_meta ? "" : ", no meta") + "; is the flag wrong?)");
  }
  d_.norm = read_rows_checked(norm);
  warn_negative_norm(d_.norm.data(), nullptr, static_cast<int64_t>(d_.norm.size()));
  // FitInputReadOptions::logk_bins: the rows [row_begin_, logk_row_end()), then the masked rows
  // (masked_logk_rows(); none otherwise), two hyperslabs into one array.
  const auto [mb, me] = masked_logk_rows();
  const int64_t head = h5::Reader::slab_size(logk, 0, row_begin_, logk_row_end());
  const int64_t tail = h5::Reader::slab_size(logk, 0, mb, me);
  if (hold_float32(logk)) {
    // the same two hyperslabs, held as float32 (docs/input-reader.md "Precision")
    d_.logk_float32 = true;
    d_.logk_f32.resize(static_cast<size_t>(head + tail));
    r_.read_floats_slab(logk, 0, row_begin_, logk_row_end(), d_.logk_f32.data());
    check_finite("hlogk", d_.logk_f32.data(), head, logk.shape, 0, row_begin_);
    if (me > mb) {
      r_.read_floats_slab(logk, 0, mb, me, d_.logk_f32.data() + head);
      check_finite("hlogk", d_.logk_f32.data() + head, tail, logk.shape, 0, mb);
    }
    return;
  }
  d_.logk.resize(static_cast<size_t>(head + tail));
  r_.read_doubles_slab(logk, 0, row_begin_, logk_row_end(), d_.logk.data());
  check_finite("hlogk", d_.logk.data(), head, logk.shape, 0, row_begin_);
  if (me > mb) {
    r_.read_doubles_slab(logk, 0, mb, me, d_.logk.data() + head);
    check_finite("hlogk", d_.logk.data() + head, static_cast<int64_t>(d_.logk.size()) - head, logk.shape, 0,
                 mb);
  }
}

void FitInputReader::warn_negative_norm(const double* values, const int64_t* flat_index, int64_t n) const {
  int64_t count = 0, where = -1;
  double min = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (values[i] < 0) {
      ++count;
      if (values[i] < min) {
        min = values[i];
        where = flat_index ? flat_index[i] : i;
      }
    }
  }
  if (count > 0) {
    const int64_t bin = row_begin_ + where / std::max<int64_t>(d_.nproc, 1);
    const int64_t proc = where % std::max<int64_t>(d_.nproc, 1);
    log().warn(
        "{}: '{}' has {} negative entries (min {} at bin {}, process '{}'); legal only with "
        "allow_negative_expectation",
        d_.filename, d_.sparse ? "hnorm_sparse/values" : "hnorm", count, format_double(min), bin,
        proc < d_.nproc ? d_.procs[static_cast<size_t>(proc)] : "?");
  }
}

// ---------------------------------------------------------------- docs/input-reader.md "Monte-Carlo
// statistics"
void FitInputReader::read_mc_stat() {
  const std::vector<int64_t> full2{d_.nbinsfull, d_.nproc};
  const std::vector<int64_t> full1{d_.nbinsfull};
  if (r_.exists("hsumw2")) {
    const DatasetInfo sumw = float_info("hsumw");
    const DatasetInfo sumw2 = float_info("hsumw2");
    if (sumw2.shape != full2 && sumw2.shape != full1) {
      fail("hsumw2", "has shape " + sumw2.shape_string() + ", expected " + shape_to_string(full2) +
                         " or legacy " + shape_to_string(full1));
    }
    if (sumw.shape != sumw2.shape) {
      fail("hsumw", "has shape " + sumw.shape_string() + ", 'hsumw2' has " + sumw2.shape_string());
    }
    d_.sumw_per_bin = sumw2.rank() == 1;
    d_.sumw = read_rows_checked(sumw);
    d_.sumw2 = read_rows_checked(sumw2);
    check_non_negative("hsumw2", d_.sumw2.data(), static_cast<int64_t>(d_.sumw2.size()), sumw2.shape, 0,
                       row_begin_);
    return;
  }
  // Legacy hkstat [nbinsfull] = sumw^2/sumw2 per bin: sumw = sum_p norm, sumw2 = sumw^2/kstat.
  const DatasetInfo kstat_info = float_info("hkstat");
  if (kstat_info.rank() == 1 && kstat_info.size == d_.nbins && d_.nbins < d_.nbinsfull) {
    fail("hkstat", "has " + std::to_string(kstat_info.size) + " entries = nbins but the file has " +
                       std::to_string(d_.nbinsmasked) +
                       " masked bins (2025-03-11..17 writer; rabbit cannot read this file either)");
  }
  expect_shape(kstat_info, full1, "[nbinsfull]");
  const std::vector<double> kstat = read_rows_checked(kstat_info);
  check_non_negative("hkstat", kstat.data(), held_rows(), kstat_info.shape, 0, row_begin_);
  d_.sumw_per_bin = true;
  d_.sumw.assign(static_cast<size_t>(held_rows()), 0.0);
  if (d_.sparse) {
    for (size_t k = 0; k < d_.norm.size(); ++k) {
      d_.sumw[static_cast<size_t>(d_.norm_index[k] / d_.nproc)] += d_.norm[k];
    }
  } else {
    for (int64_t b = 0; b < held_rows(); ++b) {
      double s = 0;
      for (int64_t p = 0; p < d_.nproc; ++p) s += d_.norm[static_cast<size_t>(b * d_.nproc + p)];
      d_.sumw[static_cast<size_t>(b)] = s;
    }
  }
  d_.sumw2.resize(d_.sumw.size());
  for (size_t b = 0; b < d_.sumw.size(); ++b) {
    d_.sumw2[b] = kstat[b] == 0 ? d_.sumw[b] : d_.sumw[b] * d_.sumw[b] / kstat[b];
  }
  log().debug("{}: legacy 'hkstat' converted to per-bin sumw/sumw2", d_.filename);
}

// ---------------------------------------------------------------- docs/input-reader.md "Dense model tensors"
// betavariations
void FitInputReader::read_beta_variations() {
  if (!r_.exists("hbetavariations")) return;
  if (d_.sparse) fail("hbetavariations", "present in a sparse file (only dense files may have it)");
  const DatasetInfo info = float_info("hbetavariations");
  expect_shape(info, {d_.nbinsfull, d_.nbins, d_.nproc}, "[nbinsfull, nbins, nproc]");
  // Ranged: every destination row, the source (observed) bins of the range (docs/input-reader.md "Ranged
  // reads").
  d_.betavariations = d_.ranged ? read_slab_checked(info, 1, obs_begin_, obs_end_) : read_checked(info);
}

}  // namespace rabbit::io
