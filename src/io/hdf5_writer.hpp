#pragma once
// The HDF5 write layer of the TensorWriter (docs/tensor-writer.md "Conventions"): checked
// creation of groups, attributes, flat chunked and filtered numeric arrays with
// `original_shape`, string and vlen-int lists, scalars and the meta group, all without object
// times so that equal content gives equal bytes. Private to src/io; every failure is a
// ResourceError "FILE: cannot write WHAT".
#include <hdf5.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "rabbit/core/error.hpp"
#include "rabbit/io/blosc_filters.hpp"
#include "rabbit/io/hdf5_handle.hpp"
#include "rabbit/io/tensor_writer.hpp"

namespace rabbit::io {

/// Blosc2 (32026) writing goes through the io module's filter registration (blosc_filters.hpp:
/// C-Blosc2, PyTables' hdf5-blosc2 payload) or an encode-capable plugin that took precedence.
void require_blosc2_encoder(const std::string& filename);

/// A group without modification times, so that equal content gives equal bytes.
hid_t make_group(hid_t loc, const std::string& name);

class H5Out {
 public:
  H5Out(std::string filename, Compression compression)
      : filename_(std::move(filename)), compression_(compression) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw ResourceError(filename_ + ": cannot write " + what);
  }

  hid_t check(hid_t id, const std::string& what) const {
    if (id < 0) fail(what);
    return id;
  }
  void check(herr_t rc, const std::string& what, int) const {
    if (rc < 0) fail(what);
  }

  void write_shape_attribute(hid_t dset, const std::vector<int64_t>& shape, const std::string& name,
                             const char* attr_name = "original_shape") const;

  /// A flat 1-D numeric dataset with `original_shape` (rabbit's writeFlatInChunks): chunked,
  /// compressed, all-zero chunks left unwritten; empty arrays contiguous without a filter.
  template <typename T>
  void write_flat(hid_t loc, const std::string& name, const std::vector<T>& values,
                  const std::vector<int64_t>& shape, hid_t file_type, hid_t mem_type, size_t max_chunk_bytes,
                  bool compress = true) const {
    const int64_t expected =
        std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
    if (expected != static_cast<int64_t>(values.size()))
      throw Error("TensorWriter: internal shape mismatch for " + name);
    const hsize_t n = values.size();
    h5::Handle space(check(H5Screate_simple(1, &n, nullptr), name));
    h5::Handle dcpl(check(H5Pcreate(H5P_DATASET_CREATE), name));
    H5Pset_obj_track_times(dcpl, false);  // reproducible files (h5py default too)
    hsize_t chunk = 1;
    if (n > 0) {
      chunk = std::min<hsize_t>(n, std::max<hsize_t>(1, max_chunk_bytes / sizeof(T)));
      check(H5Pset_chunk(dcpl, 1, &chunk), name + " chunking", 0);
      if (compress) add_filter(dcpl, name, sizeof(T), chunk * sizeof(T));
    }
    h5::Handle dset(
        check(H5Dcreate2(loc, name.c_str(), file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), name));
    for (hsize_t begin = 0; begin < n; begin += chunk) {
      const hsize_t count = std::min(chunk, n - begin);
      const bool all_zero = std::all_of(values.begin() + static_cast<std::ptrdiff_t>(begin),
                                        values.begin() + static_cast<std::ptrdiff_t>(begin + count),
                                        [](T v) { return v == T(0); });
      if (all_zero) continue;
      h5::Handle mem(check(H5Screate_simple(1, &count, nullptr), name));
      h5::Handle file_space(check(H5Dget_space(dset), name));
      check(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, &begin, nullptr, &count, nullptr), name, 0);
      check(H5Dwrite(dset, mem_type, mem, file_space, H5P_DEFAULT, values.data() + begin), name, 0);
    }
    write_shape_attribute(dset, shape, name);
  }

  void write_doubles(hid_t loc, const std::string& name, const std::vector<double>& values,
                     const std::vector<int64_t>& shape, bool as_float32, size_t max_chunk_bytes,
                     bool compress = true) const {
    if (as_float32) {
      std::vector<float> f(values.begin(), values.end());
      write_flat(loc, name, f, shape, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, max_chunk_bytes, compress);
    } else {
      write_flat(loc, name, values, shape, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, max_chunk_bytes, compress);
    }
  }

  /// A float64 scalar dataset, as h5py's create_dataset(name, data=float) (no filter, no shape attr).
  void write_scalar(hid_t loc, const std::string& name, double value) const;

  void write_strings(hid_t loc, const std::string& name, const std::vector<std::string>& values) const;

  void write_index_lists(hid_t loc, const std::string& name,
                         const std::vector<std::vector<int32_t>>& lists) const;

  void write_int32(hid_t loc, const std::string& name, const std::vector<int32_t>& values) const;

  /// The `meta` group: protocol attribute and the pickle bytes (docs/tensor-writer.md "The meta pickle
  /// bytes").
  void write_meta(hid_t file, const std::vector<uint8_t>& pickle) const;

 private:
  void add_filter(hid_t dcpl, const std::string& name, size_t typesize, size_t chunk_bytes) const;

  // 1-D list dataset (strings, vlen int lists, int32) compressed with deflate like h5py's
  // compression="gzip"; empty lists contiguous without a filter.
  void write_list(hid_t loc, const std::string& name, hid_t file_type, hid_t mem_type, const void* data,
                  size_t count) const;

  std::string filename_;
  Compression compression_;
};

}  // namespace rabbit::io
