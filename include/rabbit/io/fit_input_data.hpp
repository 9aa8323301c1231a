#pragma once
// FitInputData: everything a rabbit fit tensor holds, host-resident and immutable once read.
// Layouts follow docs/input-reader.md "Datasets"; all numbers are promoted to double on load, except
// a float32 logk when FitInputReadOptions::keep_float32 asks (docs/input-reader.md "Precision").
#include <Eigen/Core>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rabbit {

enum class SystematicType { log_normal, normal };

/// One axis of a channel, as decoded from the pickled hist/boost-histogram axis (docs/input-reader.md "Per
/// axis").
struct AxisInfo {
  /// "regular", "variable", "integer", "category_str", "category_int", "boolean", or "opaque"
  /// when the pickle held something the reader does not know (then only `size` is reliable).
  std::string kind;
  std::string core_class;  // boost-histogram core class name, e.g. "regular_uoflow"
  std::string name;
  std::string label;
  int64_t size = 0;  // number of regular bins
  bool underflow = false;
  bool overflow = false;
  bool growth = false;
  bool circular = false;
  std::vector<double> edges;  // size+1 edges (regular, variable, integer, boolean)
  std::vector<std::string> categories_str;
  std::vector<int64_t> categories_int;

  /// Bins including flow bins: size + underflow + overflow.
  int64_t extent() const { return size + (underflow ? 1 : 0) + (overflow ? 1 : 0); }
};

struct ChannelInfo {
  std::string name;
  std::vector<AxisInfo> axes;
  bool masked = false;
  bool flow = false;
  int64_t start = 0;  // first bin in the full bin axis
  int64_t stop = 0;   // one past the last bin
  int64_t nbins() const { return stop - start; }
};

/// One external likelihood term (docs/input-reader.md "External terms"): adds g·x_sub + ½ x_subᵀ H x_sub,
/// plus the Gaussian scalars of rabbit PR #147 (docs/model.md "External terms"): `const_value` in every NLL,
/// `lognorm` in the full NLL only. Absent scalars are derived by the model where rabbit does.
struct ExternalTerm {
  std::string name;
  std::vector<std::string> params;
  std::optional<Eigen::VectorXd> grad_values;  // [n]
  std::optional<Eigen::MatrixXd> hess;         // [n, n], dense (sparse inputs are densified)
  bool hess_was_sparse = false;                // stored as hess_sparse: rabbit derives no scalars then
  std::optional<double> const_value;           // dataset `const` (½ μᵀHμ of a Gaussian prior)
  std::optional<double> lognorm;               // dataset `lognorm` (½ log det(2π H⁻¹))
};

/// Sparse logk in compressed-row form over the nonzero entries of the sparse norm: the systematic
/// effects of norm entry i are columns cols[rowptr[i]..rowptr[i+1]) with their values. A column
/// c < nsyst is κᵃ (or the symmetric κ) of systematic c; c >= nsyst is κᵈ of systematic c-nsyst.
struct SparseLogk {
  std::vector<int64_t> rowptr;    // [nnz_norm + 1]
  std::vector<int32_t> cols;      // [nnz_logk]
  std::vector<double> values;     // [nnz_logk]; empty when FitInputData::logk_float32
  std::vector<float> values_f32;  // [nnz_logk] when FitInputData::logk_float32, else empty
};

/// A range [begin, end) of observed bins.
struct BinRange {
  int64_t begin = 0;
  int64_t end = 0;
};

/// How much of a fit tensor read_fit_input reads (docs/input-reader.md "Ranged reads").
struct FitInputReadOptions {
  /// Unset: everything. Set: the per-bin arrays hold only these observed bins (no masked bins);
  /// everything that is not per bin (names, constraints, channels, external terms) is complete.
  std::optional<BinRange> bins;
  /// Set, with `bins` unset: everything is read except the logk of the observed bins from this one
  /// on (dense rows, sparse values and columns; the CSR rowptr stays complete; the masked bins' logk
  /// is read), for rank 0 of an MPI fit (docs/mpi.md "Memory per rank").
  std::optional<int64_t> logk_bins;
  /// A logk stored as float32 in the file stays float32 in memory (FitInputData::logk_float32,
  /// docs/input-reader.md "Precision"); false: promoted to double like every other dataset.
  bool keep_float32 = false;
};

struct FitInputData {
  std::string filename;

  // ---- the bins the per-bin arrays hold (docs/input-reader.md "Ranged reads") ----
  /// False: all bins, observed [0, nbins) and masked [nbins, nbinsfull). True: only the observed
  /// bins [bin_begin, bin_end), indexed from bin_begin (row 0 of every per-bin array is bin_begin;
  /// sparse norm_index is (b - bin_begin)*nproc + p; data_cov_inv holds the range's rows,
  /// all columns; betavariations is [nbinsfull, bin_end - bin_begin, nproc]).
  bool ranged = false;
  int64_t bin_begin = 0;
  int64_t bin_end = 0;  // nbins for a full read

  // ---- names (docs/input-reader.md "Name and index lists") ----
  std::vector<std::string> procs;  // signals first
  std::vector<std::string> signals;
  std::vector<std::string> systs;
  std::vector<std::string> systsnoconstraint;
  std::vector<std::string> systgroups;
  std::vector<std::vector<int64_t>> systgroupidxs;  // per group, indices into systs
  std::vector<int64_t> noiidxs;                     // indices into systs
  Eigen::VectorXd constraintweights;                // [nsyst]

  // ---- observations (docs/input-reader.md "Observations"), over the nbins observed bins ----
  Eigen::VectorXd data_obs;                 // [nbins]
  std::optional<Eigen::VectorXd> data_var;  // [nbins]
  std::vector<std::string> pseudodatanames;
  Eigen::MatrixXd pseudodata;                    // [nbins, npseudo] (column per pseudodata set)
  std::optional<Eigen::MatrixXd> pseudodatavar;  // [nbins, npseudo]
  std::optional<Eigen::MatrixXd> data_cov_inv;   // [nbins, nbins]

  // ---- model tensors (docs/input-reader.md "Dense model tensors", "Sparse model tensors") ----
  bool sparse = false;
  bool symmetric_tensor = false;
  SystematicType systematic_type = SystematicType::log_normal;
  /// Dense: [nbinsfull * nproc], row-major (bin outer). Sparse: the nonzero values.
  std::vector<double> norm;
  /// Sparse only: flat index b*nproc + p of each nonzero norm entry, sorted ascending.
  std::vector<int64_t> norm_index;
  /// Dense only: [nbinsfull, nproc, nsyst] (symmetric) or [nbinsfull, nproc, 2, nsyst], row-major.
  /// Empty when logk_float32.
  std::vector<double> logk;
  /// True: the logk values are held as float32, in logk_f32 (dense) or logk_sparse.values_f32
  /// (sparse), as the file stores them (FitInputReadOptions::keep_float32, docs/input-reader.md
  /// "Precision"); `logk` and `logk_sparse.values` are then empty.
  bool logk_float32 = false;
  /// Dense only, when logk_float32: the layout of `logk`.
  std::vector<float> logk_f32;
  /// Sparse only.
  SparseLogk logk_sparse;
  /// -1: logk holds every held bin. Otherwise (FitInputReadOptions::logk_bins) the bins [0, logk_end),
  /// then the masked bins [nbins, nbinsfull): no evaluation may reach the bins [logk_end, nbins).
  int64_t logk_end = -1;

  // ---- Monte-Carlo statistics (docs/input-reader.md "Monte-Carlo statistics"), [nbinsfull * nproc] ----
  std::vector<double> sumw;
  std::vector<double> sumw2;
  /// True when sumw/sumw2 were derived from the legacy per-bin hkstat (then per bin, nproc = 1
  /// columns are NOT used: sumw/sumw2 hold [nbinsfull] values and sumw_per_bin is true).
  bool sumw_per_bin = false;
  /// Optional [nbinsfull, nbins, nproc] (dense files only).
  std::optional<std::vector<double>> betavariations;

  std::vector<ExternalTerm> external_terms;

  // ---- meta (docs/input-reader.md "The meta pickle") ----
  bool has_meta = false;
  std::vector<ChannelInfo> channels;  // in bin-layout order
  /// The raw pickled meta bytes (for passing provenance through to outputs), empty if absent.
  std::vector<uint8_t> meta_pickle;

  // ---- derived (docs/input-reader.md "Per file"), the file's counts also in a ranged read ----
  int64_t nbins = 0;
  int64_t nbinsfull = 0;
  int64_t nbinsmasked = 0;
  int64_t nproc = 0;
  int64_t nsyst = 0;
  int64_t nsignals = 0;
  int64_t nsystnoconstraint = 0;

  /// Number of logk columns per (bin, process): nsyst (symmetric) or 2*nsyst.
  int64_t logk_width() const { return symmetric_tensor ? nsyst : 2 * nsyst; }
  /// Index of a pseudodata set by name; throws OptionError naming the valid names if unknown.
  int64_t pseudodata_index(const std::string& name) const;
};

/// `in` with its logk in double (a copy; the values are those of the float32 ones when logk_float32),
/// for consumers that only read double (docs/input-reader.md "Precision").
FitInputData with_double_logk(const FitInputData& in);

/// Reads a rabbit fit tensor, all of it or the per-bin arrays of a range of observed bins
/// (options.bins). Throws InputError (one line naming file and dataset, or the file and a range
/// that is not within [0, nbins)) on any problem.
FitInputData read_fit_input(const std::string& filename, const FitInputReadOptions& options = {});

}  // namespace rabbit
