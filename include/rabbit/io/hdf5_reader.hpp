#pragma once
// A thin, read-only layer over the HDF5 C API for the fit-tensor reader (docs/input-reader.md "File structure
// and storage conventions"): logical shapes from `original_shape`, numeric reads promoted to double / int64
// straight into the caller's buffer (HDF5 converts chunk by chunk, no second full-size copy), vlen/fixed
// strings, ragged int lists, attributes. HDF5's own error printing is silenced while a Reader
// lives and every failure becomes an InputError "FILE: dataset 'NAME': what".
#include <cstdint>
#include <string>
#include <vector>

#include "rabbit/io/hdf5_handle.hpp"

namespace rabbit::h5 {

enum class TypeClass { floating, integer, string, vlen, other };

/// What the reader needs to know about one dataset before reading it.
struct DatasetInfo {
  std::string path;
  std::vector<int64_t> shape;  // logical shape: `original_shape` if present, else the dataspace
  int64_t size = 0;            // number of stored elements (= product of shape)
  TypeClass type_class = TypeClass::other;
  size_t type_size = 0;   // bytes per element (0 for variable-length types)
  bool is_signed = true;  // integers only
  bool has_original_shape = false;
  int storage_rank = 0;  // rank of the dataset's own dataspace (1 for flat arrays)

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  /// e.g. "float 4 bytes", "integer 8 bytes", "string", for messages.
  std::string type_description() const;
  /// e.g. "[13,2,4]".
  std::string shape_string() const;
};

std::string shape_to_string(const std::vector<int64_t>& shape);

/// HDF5 filter id → the name used in messages ("deflate", "blosc", "blosc2", ...).
std::string filter_name(int filter_id);

class Reader {
 public:
  /// Opens `filename` read-only; throws InputError "FILE: not an HDF5 file (or unreadable): ...".
  explicit Reader(std::string filename);
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  const std::string& filename() const { return filename_; }
  hid_t file() const { return file_.get(); }

  /// True if a link `path` exists (every intermediate group must exist too).
  bool exists(const std::string& path) const;
  bool is_group(const std::string& path) const;
  bool is_dataset(const std::string& path) const;
  /// Names of the links in a group, in HDF5's name-index (byte-wise sorted) order.
  std::vector<std::string> children(const std::string& group) const;

  /// Type and logical shape of a dataset; validates `original_shape` (docs/input-reader.md "Validation
  /// checklist" item 7).
  DatasetInfo info(const std::string& path) const;

  /// Reads a floating-point dataset (float32 promoted, with a warning) into dst[info.size].
  /// Integer or other classes are rejected with "must be floating point".
  void read_doubles(const DatasetInfo& info, double* dst) const;
  std::vector<double> read_doubles(const DatasetInfo& info) const;
  /// Reads elements [offset, offset+count) of a 1-D (flat) floating-point dataset.
  void read_doubles_range(const DatasetInfo& info, int64_t offset, int64_t count, double* dst) const;

  /// Reads the elements whose index along the logical `axis` lies in [begin, end), with every
  /// index of the other axes, in C order into dst (docs/input-reader.md "Ranged reads"): one
  /// strided hyperslab of a flat dataset (`original_shape`), an N-D hyperslab of a dataset stored
  /// with its own shape. HDF5 decodes only the chunks the selection touches.
  void read_doubles_slab(const DatasetInfo& info, int axis, int64_t begin, int64_t end, double* dst) const;
  /// The same for a float32 dataset read as float32 (no conversion; docs/input-reader.md "Precision").
  void read_floats_slab(const DatasetInfo& info, int axis, int64_t begin, int64_t end, float* dst) const;
  void read_ints_slab(const DatasetInfo& info, int axis, int64_t begin, int64_t end, int64_t* dst) const;
  /// Elements such a slab holds.
  static int64_t slab_size(const DatasetInfo& info, int axis, int64_t begin, int64_t end);

  /// Reads an integer dataset of any width/sign into int64 (HDF5 range-converts; values of an
  /// unsigned 64-bit dataset above INT64_MAX are rejected).
  std::vector<int64_t> read_ints(const DatasetInfo& info) const;
  void read_ints_range(const DatasetInfo& info, int64_t offset, int64_t count, int64_t* dst) const;

  /// Raw bytes of a 1-D uint8/int8 dataset (meta/pickle_data).
  std::vector<uint8_t> read_bytes(const DatasetInfo& info) const;

  /// 1-D vlen or fixed-length string dataset.
  std::vector<std::string> read_strings(const std::string& path) const;
  /// 1-D dataset of vlen integer sequences (hsystgroupidxs).
  std::vector<std::vector<int64_t>> read_ragged_ints(const std::string& path) const;

  bool has_attribute(const std::string& object, const std::string& name) const;
  /// Integer attribute (scalar or 1-D) as int64 values.
  std::vector<int64_t> read_int_attribute(const std::string& object, const std::string& name) const;

  /// Throws InputError "FILE: dataset 'OBJECT': what".
  [[noreturn]] void fail(const std::string& object, const std::string& what) const;
  /// Throws InputError "FILE: what".
  [[noreturn]] void fail_file(const std::string& what) const;

 private:
  template <class T>
  std::vector<T> buffer_for(const std::string& path, int64_t count) const;
  Handle open_dataset(const std::string& path) const;
  /// Every filter of the dataset must be available (docs/input-reader.md "Validation checklist" item 5),
  /// checked before reading.
  void check_filters(hid_t dataset, const std::string& path) const;
  void read_numeric(const DatasetInfo& info, hid_t mem_type, void* dst, int64_t offset, int64_t count) const;
  void read_slab(const DatasetInfo& info, hid_t mem_type, void* dst, int axis, int64_t begin,
                 int64_t end) const;
  /// H5Dread with the filter check and the one-line error (selections as in read_numeric).
  void read_selection(const DatasetInfo& info, hid_t mem_type, hid_t mem_space, hid_t file_space,
                      void* dst) const;

  std::string filename_;
  // Saved HDF5 automatic error printer, restored on destruction (declared before file_ so that
  // the file is closed while printing is still silenced).
  H5E_auto2_t saved_error_func_ = nullptr;
  void* saved_error_data_ = nullptr;
  Handle file_;
};

/// A scoped silencer of HDF5's automatic error-stack printing (restores the previous handler).
class ErrorSilencer {
 public:
  ErrorSilencer();
  ~ErrorSilencer();
  ErrorSilencer(const ErrorSilencer&) = delete;
  ErrorSilencer& operator=(const ErrorSilencer&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

/// Called first in every app's main (docs/reliability.md "HDF5's error printing and open files"):
/// turns HDF5's automatic error-stack printing off for the whole program (the causes go into our
/// one-line messages), and HDF5's exit handler off. Every file is closed by its Handle before main
/// returns; a file whose close failed (disk full) cannot be closed again, and the library's shutdown
/// would crash trying.
void configure_hdf5_for_application();

/// The cause of the failure on HDF5's current error stack: the operating system's message when HDF5
/// recorded one ("Permission denied", "No space left on device"), else current_hdf5_error().
std::string current_hdf5_cause();

/// The innermost descriptions on HDF5's current error stack, joined ("unable to open file:
/// file signature not found"); empty if the stack is empty.
std::string current_hdf5_error();

}  // namespace rabbit::h5
