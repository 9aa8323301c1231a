#pragma once
// The plain-HDF5 result file of cli-and-output.md §3.7: writing (atomic: a temporary name renamed
// when complete; SIGINT/SIGTERM remove the temporary file) and the reading the reports need.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "rabbit/io/hdf5_handle.hpp"

namespace rabbit::result {

/// One histogram axis (§3.7.2). Set `shared_id` to refer to /axes/<id> by soft link instead.
struct Axis {
  std::string type = "strcategory";  // regular, variable, integer, strcategory, intcategory, boolean, floatcategory
  std::string name;
  std::string label;
  std::vector<std::string> labels;   // strcategory
  std::vector<double> edges;         // variable
  std::vector<int64_t> int_values;   // intcategory
  std::vector<double> float_values;  // floatcategory
  int64_t bins = 0;                  // regular
  double lower = 0, upper = 0;       // regular (float), integer (stored as int64)
  bool underflow = false, overflow = false, circular = false;
  std::string shared_id;

  int64_t size() const;
  static Axis strcat(std::string name, std::vector<std::string> labels, std::string shared_id = "");
  static Axis integer(std::string name, int64_t lower, int64_t upper);
  static Axis floatcat(std::string name, std::vector<double> values);
  static Axis down_up();
};

/// Escapes a rabbit key into an HDF5 link name (§3.7.1).
std::string escape_key(const std::string& key);

// ---- low-level writers on an open group ----
h5::Handle create_group(hid_t parent, const std::string& key, const std::string& rabbit_type);
void set_attr(hid_t obj, const std::string& name, const std::string& value);
void set_attr(hid_t obj, const std::string& name, int64_t value);
void set_attr(hid_t obj, const std::string& name, double value);
void set_attr_u8(hid_t obj, const std::string& name, bool value);
void write_strings(hid_t group, const std::string& name, const std::vector<std::string>& values);
void write_int64s(hid_t group, const std::string& name, const std::vector<int64_t>& values);
void write_scalar(hid_t group, const std::string& key, double value);
void write_scalar(hid_t group, const std::string& key, int64_t value);
void write_scalar_bool(hid_t group, const std::string& key, bool value);
void write_scalar_str(hid_t group, const std::string& key, const std::string& value);
/// A histogram group (§3.7.3); values in C order over the axes; variances make it "weight".
void write_hist(hid_t group, const std::string& key, const std::vector<Axis>& axes, const double* values,
                const double* variances, const std::string& label = "", bool flow = false);
void write_axis(hid_t parent, const std::string& link_name, const Axis& axis);

/// The file being written: created under a temporary name next to the final one; commit() closes
/// and renames it. Destroyed without commit (an exception, a signal), the temporary file is removed.
class ResultWriter {
 public:
  explicit ResultWriter(const std::string& final_path);
  ~ResultWriter();
  ResultWriter(const ResultWriter&) = delete;
  ResultWriter& operator=(const ResultWriter&) = delete;

  hid_t root() const { return file_.get(); }
  const std::string& temporary_path() const { return tmp_path_; }
  const std::string& final_path() const { return final_path_; }
  /// Writes a shared axis /axes/<id> (once).
  void shared_axis(const std::string& id, const Axis& axis);
  void commit();

 private:
  std::string final_path_;
  std::string tmp_path_;
  h5::Handle file_;
  h5::Handle axes_;
  std::vector<std::string> written_axes_;
  bool committed_ = false;
};

// ---- reading (reports, tests) ----
struct Hist {
  std::vector<std::vector<std::string>> axis_labels;  // per axis: category labels ("" if not a category)
  std::vector<std::vector<double>> axis_values;       // per axis: float-category values (else empty)
  std::vector<std::string> axis_names;
  std::vector<int64_t> shape;
  std::vector<double> values;
  std::vector<double> variances;  // empty for double storage
  std::string label;
};

class ResultReader {
 public:
  explicit ResultReader(const std::string& path);
  /// Names (keys) of the result groups in creation order.
  std::vector<std::string> result_groups() const;
  /// §5.4: KEY -> "results_KEY"; none -> "results", else "results_asimov". Unknown: InputError listing groups.
  std::string pick_result(const std::optional<std::string>& key) const;
  bool exists(const std::string& path) const;
  Hist hist(const std::string& path) const;
  double scalar(const std::string& path) const;
  std::vector<std::string> strings(const std::string& path) const;
  std::string attr_str(const std::string& path, const std::string& name) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  h5::Handle file_;
};

}  // namespace rabbit::result
