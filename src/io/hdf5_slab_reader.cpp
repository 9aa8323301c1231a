// h5::Reader's slab reads (see hdf5_reader.hpp): the elements of a dataset whose index along one
// logical axis lies in [begin, end), selected as hyperslabs so that HDF5 decodes only the chunks
// they touch (docs/input-reader.md "Ranged reads").
#include <limits>
#include <string>
#include <vector>

#include "rabbit/core/logging.hpp"
#include "rabbit/io/hdf5_reader.hpp"

namespace rabbit::h5 {
namespace {

// Product of shape[from, to).
int64_t product(const std::vector<int64_t>& shape, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < to; ++d) p *= shape[d];
  return p;
}

}  // namespace

int64_t Reader::slab_size(const DatasetInfo& info, int axis, int64_t begin, int64_t end) {
  const auto a = static_cast<size_t>(axis);
  return product(info.shape, 0, a) * (end - begin) * product(info.shape, a + 1, info.shape.size());
}

void Reader::read_slab(const DatasetInfo& info, hid_t mem_type, void* dst, int axis, int64_t begin,
                       int64_t end) const {
  if (axis < 0 || axis >= info.rank() || begin < 0 || end < begin ||
      end > info.shape[static_cast<size_t>(axis)]) {
    fail(info.path, "read range [" + std::to_string(begin) + "," + std::to_string(end) + ") along axis " +
                        std::to_string(axis) + " outside the shape " + info.shape_string());
  }
  const int64_t count = slab_size(info, axis, begin, end);
  if (count <= 0)
    return;  // never touch the filter path for nothing (docs/input-reader.md "File structure and storage
             // conventions")
  if (begin == 0 && end == info.shape[static_cast<size_t>(axis)]) {
    read_numeric(info, mem_type, dst, 0, info.size);
    return;
  }
  const auto a = static_cast<size_t>(axis);
  Handle d = open_dataset(info.path);
  Handle file_space(H5Dget_space(d));
  if (info.storage_rank == 1) {
    // The flat C-order storage: `outer` blocks of (end - begin)·inner elements, one per index of
    // the axes before `axis`, extent·inner apart.
    const int64_t inner = product(info.shape, a + 1, info.shape.size());
    const int64_t extent = info.shape[a];
    const hsize_t start = static_cast<hsize_t>(begin * inner);
    const hsize_t stride = static_cast<hsize_t>(extent * inner);
    const hsize_t blocks = static_cast<hsize_t>(product(info.shape, 0, a));
    const hsize_t block = static_cast<hsize_t>((end - begin) * inner);
    H5Sselect_hyperslab(file_space, H5S_SELECT_SET, &start, &stride, &blocks, &block);
  } else if (!info.has_original_shape && info.storage_rank == info.rank()) {
    std::vector<hsize_t> start(info.shape.size(), 0), counts(info.shape.begin(), info.shape.end());
    start[a] = static_cast<hsize_t>(begin);
    counts[a] = static_cast<hsize_t>(end - begin);
    H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start.data(), nullptr, counts.data(), nullptr);
  } else {
    fail(info.path, "partial reads need a 1-D (flat) dataset or one stored with its own shape");
  }
  const hsize_t n = static_cast<hsize_t>(count);
  Handle mem_space(H5Screate_simple(1, &n, nullptr));
  read_selection(info, mem_type, mem_space, file_space, dst);
}

void Reader::read_doubles_slab(const DatasetInfo& info, int axis, int64_t begin, int64_t end,
                               double* dst) const {
  if (info.type_class != TypeClass::floating) {
    fail(info.path, "must be floating point (float32/float64), found " + info.type_description());
  }
  if (info.type_size != sizeof(double)) {
    log().warn("{}: dataset '{}' is stored as {}; promoted to double", filename_, info.path,
               info.type_description());
  }
  read_slab(info, H5T_NATIVE_DOUBLE, dst, axis, begin, end);
}

void Reader::read_floats_slab(const DatasetInfo& info, int axis, int64_t begin, int64_t end,
                              float* dst) const {
  if (info.type_class != TypeClass::floating || info.type_size != sizeof(float)) {
    fail(info.path, "must be float32 to be held as float32, found " + info.type_description());
  }
  read_slab(info, H5T_NATIVE_FLOAT, dst, axis, begin, end);
}

void Reader::read_ints_slab(const DatasetInfo& info, int axis, int64_t begin, int64_t end,
                            int64_t* dst) const {
  if (info.type_class != TypeClass::integer) {
    fail(info.path, "must be integer, found " + info.type_description());
  }
  if (!info.is_signed && info.type_size >= 8) {
    // HDF5 would clip values above INT64_MAX silently: read unsigned and check.
    read_slab(info, H5T_NATIVE_UINT64, dst, axis, begin, end);
    const int64_t n = slab_size(info, axis, begin, end);
    for (int64_t i = 0; i < n; ++i) {
      if (static_cast<uint64_t>(dst[i]) > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        fail(info.path, "element " + std::to_string(i) + " of the read range exceeds the int64 range");
      }
    }
    return;
  }
  read_slab(info, H5T_NATIVE_INT64, dst, axis, begin, end);
}

}  // namespace rabbit::h5
