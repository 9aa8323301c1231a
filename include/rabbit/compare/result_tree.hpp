#pragma once
// What rabbit_compare compares: a fit result seen as a tree of fit groups ("results",
// "results_asimov", ...), each holding named quantities (histograms with their axes, values and
// variances; numbers). Each source format has one adapter:
//   - open_result_file: a result file read through result::ResultReader (our plain layout, and
//     whichever layouts ResultReader serves);
//   - reference_json_tree / open_reference_json: upstream rabbit's results dumped as JSON
//     (tests/reference/fits/CASE.json, written by tools/make_reference.py).
// The comparison itself (compare.hpp) sees only this interface.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rabbit/io/json.hpp"

namespace rabbit::compare {

/// One histogram axis.
struct TreeAxis {
  std::string name;
  /// Category axes are matched by label; binned axes by bin position.
  bool category = false;
  /// Category labels; numeric categories as shortest round-trip numbers ("0.5").
  std::vector<std::string> labels;
  /// Entries along this axis in the histogram's values.
  int64_t extent = 0;
  /// Binned axes: the number of in-range bins where the source knows it; -1 where only `extent` is
  /// known. Entries beyond `bins` are flow bins (a result file's histograms carry them).
  int64_t bins = -1;
  /// With `bins` known: the axis has an underflow bin, first among the entries where they hold it
  /// (a JSON axis says so although its values leave the flow bins out).
  bool underflow = false;
};

struct TreeHist {
  std::vector<TreeAxis> axes;
  std::vector<double> values;     // C order over the axes' extents
  std::vector<double> variances;  // empty without variances (double storage)
};

struct Quantity {
  /// `other`: strings and the like, listed but neither compared nor required on both sides.
  enum class Kind { scalar, hist, other };
  Kind kind = Kind::other;
  double scalar = 0.0;  // booleans as 0/1
  TreeHist hist;
};

struct QuantityInfo {
  std::string name;  // the keys from the group down, joined with '/': "mappings/BaseMapping/chi2"
  Quantity::Kind kind = Quantity::Kind::other;
};

class ResultTree {
 public:
  virtual ~ResultTree() = default;
  /// "PATH (layout)", for messages.
  virtual std::string description() const = 0;
  /// The fit groups in file order, named as in a result file: "results", "results_asimov", ...
  virtual std::vector<std::string> groups() const = 0;
  /// Every quantity of a group, in file order.
  virtual std::vector<QuantityInfo> quantities(const std::string& group) const = 0;
  /// One quantity, read when asked: result files can hold large covariances.
  virtual Quantity load(const std::string& group, const std::string& name) const = 0;
};

/// A result file, through result::ResultReader. InputError if it cannot be read.
std::unique_ptr<ResultTree> open_result_file(const std::string& path);

/// Upstream's results as JSON: `results` maps a group key to rabbit's result dictionary, with
/// histograms as {"axes": [{"name", "labels" | "edges", "underflow", ...}], "values",
/// "variances"} without flow bins. Key "data_obs" (or "" or "results") is the group "results",
/// any other key K the group "results_K".
std::unique_ptr<ResultTree> reference_json_tree(const io::Json& results, const std::string& description);

/// A JSON file: a reference case ({"tensor", "args", "results": {...}}) or a bare results object.
std::unique_ptr<ResultTree> open_reference_json(const std::string& path);

/// A ".json" file as reference JSON, anything else as a result file.
std::unique_ptr<ResultTree> open_result_tree(const std::string& path);

/// The label of a numeric category: the shortest decimal that reads back as `value`.
std::string number_label(double value);

}  // namespace rabbit::compare
