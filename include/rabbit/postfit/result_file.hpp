#pragma once
// The result file of rabbit_fit (docs/output-format.md): ResultWriter serialises the recorded
// result tree (result_tree.hpp) as rabbit's own layout (default) or the plain HDF5 layout,
// atomically (a temporary name renamed when complete, fsynced; every termination signal removes the
// temporary file: rabbit/core/termination.hpp, rabbit/core/durable_file.hpp);
// ResultReader reads either layout, and result files that upstream rabbit wrote.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rabbit/core/termination.hpp"
#include "rabbit/io/hdf5_handle.hpp"
#include "rabbit/postfit/result_tree.hpp"

namespace rabbit::result {

namespace detail {
class ReaderBackend;
}

/// The file being written: created under a temporary name next to the final one; flush() writes the
/// groups recorded so far, commit() writes the rest, closes and renames the file. Destroyed without
/// commit (an exception, a signal), the temporary file is removed.
class ResultWriter {
 public:
  explicit ResultWriter(const std::string& final_path, Layout layout = Layout::rabbit);
  ~ResultWriter();
  ResultWriter(const ResultWriter&) = delete;
  ResultWriter& operator=(const ResultWriter&) = delete;

  /// The root of the result tree: top-level groups ("meta", "results", ...) are created here.
  Group root() { return Group(&root_, Visibility::both); }
  Layout layout() const { return layout_; }
  const std::string& temporary_path() const { return tmp_path_; }
  const std::string& final_path() const { return final_path_; }
  /// Declares a shared axis: /axes/<id> of the plain layout (written once); histograms refer to it
  /// through Axis::shared_id. The rabbit layout writes every axis into its histogram.
  void shared_axis(const std::string& id, const Axis& axis);
  /// Writes every top-level group recorded and not yet written, then frees its memory: call it
  /// when a fit's group is complete (upstream writes each fit's group when it is done too). Handles
  /// into a written group must not be used again.
  void flush();
  void commit();

 private:
  std::string final_path_;
  std::string tmp_path_;
  std::unique_ptr<termination::TemporaryFile> tmp_guard_;  // removes tmp_path_ on a signal
  Layout layout_;
  Node root_;
  h5::Handle file_;
  h5::Handle axes_;
  std::vector<std::string> written_axes_;
  size_t next_unwritten_ = 0;
  bool committed_ = false;
};

// ---- reading (reports, tests) ----
struct Hist {
  std::vector<std::vector<std::string>> axis_labels;  // per axis: category labels ("" if not a category)
  /// Per axis: the values of a float category (plain layout), or of a string category whose
  /// labels are all numbers (the rabbit layout writes float categories as numpy's str of them).
  std::vector<std::vector<double>> axis_values;
  std::vector<std::string> axis_names;
  std::vector<int64_t> shape;
  std::vector<double> values;
  std::vector<double> variances;  // empty for double storage
  std::string label;
  /// The values include the flow bins of every axis but string and float categories
  /// (hist(path, true)).
  bool flow = false;
};

/// Reads a result file of either layout. A path names an entry as the escaped keys
/// (escape_key) from the top-level group down, joined by '/': "results/parms",
/// "results/mappings/BaseMapping/channels/ch0/hist_postfit_inclusive", "results/_cpp/converged".
class ResultReader {
 public:
  /// One member of a group or dictionary.
  struct Entry {
    std::string key;         // the rabbit key (unescaped)
    std::string path;        // its path for the reading functions
    std::string type;        // "hist", "dict", "float", "int", "bool", "str", "strings", ...; "" if unknown
    bool container = false;  // a dictionary to descend into
  };

  explicit ResultReader(const std::string& path);
  ~ResultReader();
  ResultReader(ResultReader&&) noexcept;
  ResultReader& operator=(ResultReader&&) noexcept;

  Layout layout() const;
  /// Names (keys) of the result groups in run order (creation order; name order for files that do
  /// not track it).
  std::vector<std::string> result_groups() const;
  /// docs/user-guide.md "Choosing a result": KEY -> "results_KEY"; none -> "results", else "results_asimov".
  /// Unknown: InputError listing groups.
  std::string pick_result(const std::optional<std::string>& key) const;
  bool exists(const std::string& path) const;
  /// A histogram's bins in C order: without flow bins, or with `flow_bins` including the flow bins
  /// of every axis but string and float categories (zero where the fit wrote none: channels
  /// without flow), the same in either layout.
  Hist hist(const std::string& path, bool flow_bins = false) const;
  double scalar(const std::string& path) const;
  std::vector<std::string> strings(const std::string& path) const;
  /// A plain-layout attribute ("" if absent; the rabbit layout has none).
  std::string attr_str(const std::string& path, const std::string& name) const;
  /// The members of the group or dictionary at `path` in file order, without the layouts'
  /// bookkeeping (`_order` lists, aliases kept for older readers).
  std::vector<Entry> members(const std::string& path) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::unique_ptr<detail::ReaderBackend> backend_;
};

}  // namespace rabbit::result
