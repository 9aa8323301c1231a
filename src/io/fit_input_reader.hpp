#pragma once
// FitInputReader: the steps of read_fit_input (docs/input-reader.md), one unit per part of the
// file: structure and object notes (read_fit_input.cpp), names and meta (fit_input_names.cpp),
// observations (fit_input_observations.cpp), dense tensors and MC statistics
// (fit_input_dense.cpp), sparse tensors (fit_input_sparse.cpp), external terms
// (fit_input_external_terms.cpp). Comments cite the numbered items of docs/input-reader.md
// "Validation checklist". Private to src/io.
//
// Ranged reads (docs/input-reader.md "Ranged reads"): every per-bin array is read for the held
// rows only: observed rows [obs_begin_, obs_end_) of the observation arrays and tensor rows
// [row_begin_, row_end_) of the model tensors and MC statistics. A full read holds [0, nbins)
// and [0, nbinsfull); a ranged read holds [b0, b1) for both (no masked bins).
#include <Eigen/Core>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/io/hdf5_reader.hpp"

namespace rabbit::io {

/// Multi-index of flat index `flat` in `shape`, as "[i,j,k]" for messages.
std::string unravel(int64_t flat, const std::vector<int64_t>& shape);
/// "%.6g" of v, for messages.
std::string format_double(double v);

class FitInputReader {
 public:
  FitInputReader(const std::string& filename, const FitInputReadOptions& options);
  FitInputData read();

 private:
  using DatasetInfo = h5::DatasetInfo;

  // ---- helpers (read_fit_input.cpp)
  [[noreturn]] void fail(const std::string& object, const std::string& what) const { r_.fail(object, what); }
  [[noreturn]] void fail_file(const std::string& what) const { r_.fail_file(what); }
  void require_dataset(const std::string& path) const;
  DatasetInfo float_info(const std::string& path) const;
  DatasetInfo int_info(const std::string& path) const;
  void expect_shape(const DatasetInfo& info, const std::vector<int64_t>& expected,
                    const std::string& meaning) const;
  /// Item 12. `p` holds the slab [axis_begin, axis_begin + n/…) along `axis` of a dataset of
  /// `shape` (the whole dataset by default); the first bad entry is reported in file coordinates.
  /// T: double, or float for a logk held as float32.
  template <class T>
  void check_finite(const std::string& path, const T* p, int64_t n, const std::vector<int64_t>& shape,
                    int axis = 0, int64_t axis_begin = 0) const;
  void check_non_negative(const std::string& path, const double* p, int64_t n,
                          const std::vector<int64_t>& shape, int axis = 0, int64_t axis_begin = 0) const;
  /// The whole dataset, finiteness checked.
  std::vector<double> read_checked(const DatasetInfo& info) const;
  /// Indices [begin, end) along `axis` (all of the others), finiteness checked.
  std::vector<double> read_slab_checked(const DatasetInfo& info, int axis, int64_t begin, int64_t end) const;
  /// The held tensor rows [row_begin_, row_end_) of a dataset whose first axis is the full bin axis.
  std::vector<double> read_rows_checked(const DatasetInfo& info) const {
    return read_slab_checked(info, 0, row_begin_, row_end_);
  }
  /// Whether a logk dataset is held as float32 (FitInputReadOptions::keep_float32 and a float32
  /// dataset, docs/input-reader.md "Precision").
  bool hold_float32(const DatasetInfo& info) const {
    return keep_float32_ && info.type_size == sizeof(float);
  }
  /// read_slab_checked without the promotion to double.
  std::vector<float> read_float_slab_checked(const DatasetInfo& info, int axis, int64_t begin,
                                             int64_t end) const;
  int64_t held_rows() const { return row_end_ - row_begin_; }
  int64_t held_observed() const { return obs_end_ - obs_begin_; }

  // ---- structure, range, other objects (read_fit_input.cpp)
  void check_structure();
  void set_observed_range();
  void note_other_objects();

  // ---- names and meta (fit_input_names.cpp)
  void read_names();
  void read_meta();
  void derive_channels();
  void check_names();

  // ---- observations (fit_input_observations.cpp)
  void read_observations();
  void read_constraint_weights();
  Eigen::MatrixXd read_row_major(const DatasetInfo& info, int64_t rows, int64_t cols) const;
  void warn_non_finite(const std::string& path, const Eigen::MatrixXd& m) const;

  // ---- dense tensors, MC statistics, beta variations (fit_input_dense.cpp)
  std::vector<int64_t> logk_shape(int64_t nbinsfull) const;
  void set_nbinsfull(int64_t nbinsfull, const std::string& source);
  void read_dense_tensors();
  /// `flat_index` (sparse) or the position (dense) is relative to the held rows.
  void warn_negative_norm(const double* values, const int64_t* flat_index, int64_t n) const;
  void read_mc_stat();
  void read_beta_variations();

  // ---- sparse tensors (fit_input_sparse.cpp)
  struct SparseGroup {
    std::vector<int64_t> dense_shape;
    DatasetInfo indices;
    DatasetInfo values;
    int64_t nnz = 0;
  };
  SparseGroup open_sparse(const std::string& group) const;
  void read_sparse_tensors();

  // ---- external terms (fit_input_external_terms.cpp)
  void read_external_terms();
  std::optional<double> read_optional_scalar(const std::string& path) const;
  Eigen::MatrixXd read_sparse_hessian(const std::string& group, int64_t n) const;

  h5::Reader r_;
  FitInputData d_;
  std::optional<BinRange> range_;     // the requested observed bins; unset: everything
  std::optional<int64_t> logk_bins_;  // FitInputReadOptions::logk_bins
  bool keep_float32_ = false;         // FitInputReadOptions::keep_float32
  /// The tensor rows whose logk is read: row_end_, or logk_bins_ when set.
  int64_t logk_row_end() const;
  /// With logk_bins_: the masked rows [nbins, nbinsfull), whose logk is read after that of the rows
  /// up to logk_row_end() (docs/input-reader.md "Ranged reads"); otherwise an empty range.
  std::pair<int64_t, int64_t> masked_logk_rows() const;
  int64_t obs_begin_ = 0, obs_end_ = 0;
  int64_t row_begin_ = 0, row_end_ = 0;
  std::vector<ChannelInfo> meta_channels_;
  bool have_meta_channels_ = false;
};

}  // namespace rabbit::io
