#pragma once
// The result of a rabbit_fit run as a tree in memory (docs/output-format.md): rabbit_fit records
// groups, histograms, scalars and name lists through the functions below, and ResultWriter
// serialises the tree as one of the two layouts: rabbit's own (pickled dictionaries in the h5py
// protocol of wums.ioutils) or the plain HDF5 layout. Recording first keeps one set of call sites
// for both layouts; each entry says in which layouts it appears.
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace rabbit::result {

/// One histogram axis (output-format.md "Conventions"). Set `shared_id` to refer to /axes/<id> by
/// soft link in the plain layout; the rabbit layout always writes the axis into the histogram.
struct Axis {
  std::string type =
      "strcategory";  // regular, variable, integer, strcategory, intcategory, boolean, floatcategory
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

/// The two result layouts.
enum class Layout { rabbit, plain };

/// In which layouts a recorded entry appears.
enum class Visibility : uint8_t { both, plain_only, rabbit_only };

/// How a list of names appears in the rabbit layout: the numpy arrays of upstream's meta
/// (`procs`, `nois`: object arrays of bytes; `pois`: a fixed-width bytes array).
enum class NameArray : uint8_t { object_bytes, fixed_bytes };

/// A plain-layout HDF5 attribute (the rabbit layout has no attributes).
struct Attribute {
  std::string name;
  std::variant<std::string, int64_t, double, bool> value;  // bool: stored as uint8
};

struct Node {
  enum class Kind {
    dict,  // an HDF5 group (plain) / a Python dict (rabbit)
    hist,  // a histogram
    real,
    integer,
    boolean,
    text,      // scalars: Python float, int, bool, str
    strings,   // a list of names
    integers,  // a list of int64
    axis,      // an axis group of the plain meta (channel axes)
    pickled,   // rabbit only: an object given as a complete pickle stream (the input's meta)
    json,      // rabbit only: an object given as JSON text (the parsed options)
  };
  Kind kind = Kind::dict;
  std::string key;
  Visibility visibility = Visibility::both;
  std::string rabbit_type;  // dict: the plain layout's rabbit_type attribute ("" for none)
  std::vector<Attribute> attributes;
  std::vector<std::unique_ptr<Node>> children;  // dict, in insertion order
  bool written = false;  // a top-level dict already serialised by ResultWriter::flush()

  double real = 0.0;
  int64_t integer = 0;
  bool boolean = false;
  std::string text;  // text; pickled: the stream; json: the document
  std::vector<std::string> strings;
  NameArray name_array = NameArray::object_bytes;
  std::vector<int64_t> integers;

  // hist: values in C order over the axes (with `flow`, the extents include the flow bins of the
  // non-strcategory axes); variances empty for double storage.
  std::vector<Axis> axes;
  std::vector<double> values, variances;
  std::string label;
  bool flow = false;

  Axis axis;  // axis
};

/// A handle to a recorded group: where new entries go, and in which layouts they appear.
class Group {
 public:
  Group() = default;
  Group(Node* node, Visibility visibility) : node_(node), visibility_(visibility) {}
  bool valid() const { return node_ != nullptr; }
  Node* node() const { return node_; }
  Visibility visibility() const { return visibility_; }

 private:
  Node* node_ = nullptr;
  Visibility visibility_ = Visibility::both;
};

/// The same group, with everything recorded through the returned handle restricted to `layout`.
Group only_in(Group group, Layout layout);

/// Escapes a rabbit key into a plain-layout HDF5 link name (output-format.md "Conventions").
std::string escape_key(const std::string& key);

// ---- recording (the names of the plain layout's writers, which they replace) ----
Group create_group(Group parent, const std::string& key, const std::string& rabbit_type);
void set_attr(Group group, const std::string& name, const std::string& value);
void set_attr(Group group, const std::string& name, int64_t value);
void set_attr(Group group, const std::string& name, double value);
void set_attr_u8(Group group, const std::string& name, bool value);
void write_strings(Group group, const std::string& name, const std::vector<std::string>& values,
                   NameArray as = NameArray::object_bytes);
void write_int64s(Group group, const std::string& name, const std::vector<int64_t>& values);
void write_scalar(Group group, const std::string& key, double value);
void write_scalar(Group group, const std::string& key, int64_t value);
void write_scalar_bool(Group group, const std::string& key, bool value);
void write_scalar_str(Group group, const std::string& key, const std::string& value);
/// A histogram; values in C order over the axes; variances make it "weight" storage.
void write_hist(Group group, const std::string& key, const std::vector<Axis>& axes, const double* values,
                const double* variances, const std::string& label = "", bool flow = false);
/// An axis group of the plain layout (the meta's channel axes); never in the rabbit layout.
void write_axis(Group parent, const std::string& link_name, const Axis& axis);
/// Rabbit layout only: an object as a complete pickle stream, re-emitted unchanged.
void write_pickled(Group group, const std::string& key, std::vector<uint8_t> pickle_stream);
/// Rabbit layout only: a Python object (dict, list, str, int, float, bool, None) given as JSON.
void write_json(Group group, const std::string& key, std::string json_text);

/// Elements in the hist's storage along one axis as the plain layout writes it (with `flow`, the
/// flow bins of every axis but strcategory).
int64_t plain_extent(const Axis& axis, bool flow);

}  // namespace rabbit::result
