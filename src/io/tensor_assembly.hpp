#pragma once
// TensorAssembly: the arrays and name lists of a fit tensor as the TensorWriter will store them,
// built from its booked channels without touching HDF5 (TensorWriter::assemble,
// tensor_assembly.cpp) and written by write_tensor_file (tensor_file.cpp). Layouts follow
// docs/input-reader.md "Datasets"; the conventions are docs/tensor-writer.md "Conventions".
// Private to src/io.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rabbit/io/fit_input_data.hpp"

namespace rabbit::io {

struct TensorAssembly {
  std::vector<ChannelInfo> layout;  // bin-layout order (observed first), start/stop filled in
  std::vector<std::string> procs, signals, systs, systsnoconstraint, group_names, pseudodata_names;
  std::vector<std::vector<int32_t>> group_idxs;
  std::vector<int32_t> noiidxs;
  int64_t nbins = 0, nbinsfull = 0, nproc = 0, nsyst = 0, npseudo = 0;
  /// The meta's symmetric_tensor flag, and whether the logk tensor is stored as [.., nsyst]
  /// (only with meta: readers without meta assume the asymmetric layout).
  bool symmetric_tensor = true;
  bool symmetric_layout = true;
  int64_t width = 0;  // logk columns per (bin, process): nsyst or 2*nsyst
  SystematicType systematic_type = SystematicType::log_normal;

  std::vector<double> norm, sumw2;                     // [nbinsfull, nproc]
  std::vector<double> logk;                            // [nbinsfull, nproc, width]
  std::vector<double> data_obs, data_var;              // [nbins]
  std::vector<double> pseudodata;                      // [nbins, npseudo]
  std::vector<double> constraintweights;               // [nsyst]
  std::optional<std::vector<double>> data_cov_inv;     // [nbins, nbins], row-major
  std::optional<std::vector<double>> beta_variations;  // [nbinsfull, nbins, nproc]
  std::vector<ExternalTerm> external_terms;
};

/// The sparse form of an assembly's norm and logk (docs/tensor-writer.md "Conventions", Sparse):
/// the nonzero nominal entries in row-major (bin, proc) order and their nonzero logk columns.
struct SparseTensors {
  std::vector<int64_t> norm_indices;  // [nnz_norm, 2]
  std::vector<double> norm_values;
  std::vector<int64_t> logk_indices;  // [nnz_logk, 2]: (norm entry, column)
  std::vector<double> logk_values;
};
SparseTensors sparse_tensors(const TensorAssembly& a);

}  // namespace rabbit::io
