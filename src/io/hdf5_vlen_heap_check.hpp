#pragma once
// Our own check of the HDF5 global heap before HDF5 reads variable-length data (names, index lists):
// docs/input-reader.md "Variable-length data and the global heap". HDF5 1.10/1.14 trusts the heap
// bytes it dereferences; one corrupt byte there crashes or hangs the library inside H5Dread.
#include <hdf5.h>

#include <cstddef>
#include <string>

namespace rabbit::h5 {

/// Reads the raw element descriptors (length, heap collection address, object index) of the 1-D
/// variable-length dataset `dataset` itself, and walks every global heap collection they reference
/// the way HDF5 will, with bounds checks: each referenced object must exist and hold exactly
/// length × `base_size` bytes (`base_size` 1 for strings, the element size for lists).
/// Throws InputError "FILE: dataset 'PATH': corrupt variable-length data: ..." otherwise, so that
/// H5Dread only runs on heap bytes it can parse.
void check_vlen_heap(const std::string& filename, hid_t file, hid_t dataset, const std::string& path,
                     size_t base_size);

}  // namespace rabbit::h5
