#pragma once
// Internal to the result file: the writers and readers of the two layouts behind ResultWriter and
// ResultReader (docs/output-format.md), and the small HDF5 helpers they share.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rabbit/io/hdf5_handle.hpp"
#include "rabbit/postfit/result_file.hpp"

namespace rabbit::result::detail {

// ---- HDF5 helpers (result_h5.cpp); writing failures throw Error naming `what` ----
void check(herr_t status, const std::string& what);
h5::Handle check_id(hid_t id, const std::string& what);
/// Transfer property list of every write (a small type-conversion buffer; see result_h5.cpp).
hid_t write_plist();
h5::Handle utf8_string_type();
/// Group creation with link creation order tracked and indexed.
h5::Handle group_create_plist();
void write_attribute(hid_t object, const Attribute& attribute);
/// A string attribute, "" when absent.
std::string read_string_attribute(hid_t object, const char* name);
/// A link's name by index: creation order where the group tracks it, else name order.
std::vector<std::string> link_names(hid_t group);
bool link_exists(hid_t file, const std::string& path);

// ---- writers: one top-level group of the tree into the open file ----
void write_plain_root_attributes(hid_t file);
void write_plain_axis(hid_t parent, const std::string& link_name, const Axis& axis);
void write_plain_group(hid_t file, const Node& group);
void write_rabbit_group(hid_t file, const Node& group);

/// The rabbit layout's histogram storage: boost-histogram's flow-inclusive buffer in its memory
/// order, the first axis fastest (every axis with its flow bins; string categories with their
/// overflow bin), from the plain
/// layout's values (upstream's Workspace.hist: category overflow bins hold 1 when the channel
/// has flow, 0 otherwise). Weight storage interleaves (value, variance) per bin.
std::vector<double> boost_histogram_storage(const Node& hist);

// ---- readers ----
class ReaderBackend {
 public:
  virtual ~ReaderBackend() = default;
  virtual Layout layout() const = 0;
  virtual std::vector<std::string> result_groups() const = 0;
  virtual bool exists(const std::string& path) const = 0;
  virtual Hist hist(const std::string& path, bool flow_bins) const = 0;
  virtual double scalar(const std::string& path) const = 0;
  virtual std::vector<std::string> strings(const std::string& path) const = 0;
  virtual std::string attr_str(const std::string& path, const std::string& name) const = 0;
  virtual std::vector<ResultReader::Entry> members(const std::string& path) const = 0;
};

/// The plain layout (root attribute rabbit_plain_format).
std::unique_ptr<ReaderBackend> plain_reader(h5::Handle file, std::string file_path);
/// Rabbit's layout: groups with narf_h5py_pickle_protocol_version, read by our non-executing pickle
/// reader, the persistent ids resolved to the proxied groups and buffer datasets.
std::unique_ptr<ReaderBackend> rabbit_reader(h5::Handle file, std::string file_path);
/// True when some top-level group carries narf_h5py_pickle_protocol_version.
bool has_rabbit_groups(hid_t file);

/// Undoes escape_key for one path component.
std::string unescape_key(const std::string& link_name);

}  // namespace rabbit::result::detail
