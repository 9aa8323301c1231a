// The TensorWriter's HDF5 write layer: see hdf5_writer.hpp.
#include "hdf5_writer.hpp"

namespace rabbit::io {

void require_blosc2_encoder(const std::string& filename) {
  io::ensure_blosc_filters();
  unsigned config = 0;
  if (H5Zfilter_avail(kBlosc2FilterId) <= 0 || H5Zget_filter_info(kBlosc2FilterId, &config) < 0 ||
      !(config & H5Z_FILTER_CONFIG_ENCODE_ENABLED))
    throw ResourceError(filename +
                        ": cannot write Blosc2: HDF5 filter 32026 is not available with an "
                        "encoder (RABBIT_BLOSC_FILTERS=plugin with a decode-only plugin?); use gzip");
}

/// A group without modification times, so that equal content gives equal bytes.
hid_t make_group(hid_t loc, const std::string& name) {
  h5::Handle gcpl(H5Pcreate(H5P_GROUP_CREATE));
  H5Pset_obj_track_times(gcpl, false);
  return H5Gcreate2(loc, name.c_str(), H5P_DEFAULT, gcpl, H5P_DEFAULT);
}

void H5Out::write_shape_attribute(hid_t dset, const std::vector<int64_t>& shape, const std::string& name,
                                  const char* attr_name) const {
  const hsize_t n = shape.size();
  h5::Handle space(check(H5Screate_simple(1, &n, nullptr), name));
  h5::Handle attr(check(H5Acreate2(dset, attr_name, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT),
                        name + " attribute " + attr_name));
  check(H5Awrite(attr, H5T_NATIVE_INT64, shape.data()), name + " attribute " + attr_name, 0);
}

/// A float64 scalar dataset, as h5py's create_dataset(name, data=float) (no filter, no shape attr).
void H5Out::write_scalar(hid_t loc, const std::string& name, double value) const {
  h5::Handle space(check(H5Screate(H5S_SCALAR), name));
  h5::Handle dcpl(check(H5Pcreate(H5P_DATASET_CREATE), name));
  H5Pset_obj_track_times(dcpl, false);
  h5::Handle dset(
      check(H5Dcreate2(loc, name.c_str(), H5T_IEEE_F64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), name));
  check(H5Dwrite(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, &value), name, 0);
}

void H5Out::write_strings(hid_t loc, const std::string& name, const std::vector<std::string>& values) const {
  h5::Handle type(check(H5Tcopy(H5T_C_S1), name));
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  std::vector<const char*> ptrs;
  for (const auto& s : values) ptrs.push_back(s.c_str());
  write_list(loc, name, type, type, ptrs.data(), ptrs.size());
}

void H5Out::write_index_lists(hid_t loc, const std::string& name,
                              const std::vector<std::vector<int32_t>>& lists) const {
  h5::Handle file_type(check(H5Tvlen_create(H5T_STD_I32LE), name));
  h5::Handle mem_type(check(H5Tvlen_create(H5T_NATIVE_INT32), name));
  std::vector<hvl_t> vl;
  for (const auto& l : lists) vl.push_back(hvl_t{l.size(), const_cast<int32_t*>(l.data())});
  write_list(loc, name, file_type, mem_type, vl.data(), vl.size());
}

void H5Out::write_int32(hid_t loc, const std::string& name, const std::vector<int32_t>& values) const {
  write_list(loc, name, H5T_STD_I32LE, H5T_NATIVE_INT32, values.data(), values.size());
}

void H5Out::write_meta(hid_t file, const std::vector<uint8_t>& pickle) const {
  h5::Handle group(check(make_group(file, "meta"), "meta"));
  {
    h5::Handle space(check(H5Screate(H5S_SCALAR), "meta"));
    h5::Handle attr(check(H5Acreate2(group, "narf_h5py_pickle_protocol_version", H5T_STD_I64LE, space,
                                     H5P_DEFAULT, H5P_DEFAULT),
                          "meta attribute"));
    const int64_t version = 1;
    check(H5Awrite(attr, H5T_NATIVE_INT64, &version), "meta attribute", 0);
  }
  const hsize_t n = pickle.size();
  h5::Handle space(check(H5Screate_simple(1, &n, nullptr), "meta/pickle_data"));
  h5::Handle dcpl(check(H5Pcreate(H5P_DATASET_CREATE), "meta/pickle_data"));
  H5Pset_obj_track_times(dcpl, false);
  // Python writes Blosc v1 (32001) here; any filter HDF5 knows is fine for wums (docs/tensor-writer.md "The
  // meta pickle bytes").
  if (compression_ != Compression::none) {
    const hsize_t chunk = std::min<hsize_t>(n, 1048576);
    check(H5Pset_chunk(dcpl, 1, &chunk), "meta/pickle_data", 0);
    check(H5Pset_deflate(dcpl, 4), "meta/pickle_data", 0);
  }
  h5::Handle dset(check(H5Dcreate2(group, "pickle_data", H5T_STD_U8LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT),
                        "meta/pickle_data"));
  check(H5Dwrite(dset, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, pickle.data()), "meta/pickle_data",
        0);
}

void H5Out::add_filter(hid_t dcpl, const std::string& name, size_t typesize, size_t chunk_bytes) const {
  if (compression_ == Compression::gzip) {
    check(H5Pset_deflate(dcpl, 4), name + " deflate", 0);
  } else if (compression_ == Compression::blosc2) {
    // Same cd_values as hdf5plugin.Blosc2(cname="lz4", clevel=5) on 1-D chunks.
    const unsigned cd[7] = {1, 0, static_cast<unsigned>(typesize), static_cast<unsigned>(chunk_bytes), 5,
                            1, 1};
    check(H5Pset_filter(dcpl, kBlosc2FilterId, H5Z_FLAG_MANDATORY, 7, cd), name + " blosc2 filter", 0);
  }
}

// 1-D list dataset (strings, vlen int lists, int32) compressed with deflate like h5py's
// compression="gzip"; empty lists contiguous without a filter.
void H5Out::write_list(hid_t loc, const std::string& name, hid_t file_type, hid_t mem_type, const void* data,
                       size_t count) const {
  const hsize_t n = count;
  h5::Handle space(check(H5Screate_simple(1, &n, nullptr), name));
  h5::Handle dcpl(check(H5Pcreate(H5P_DATASET_CREATE), name));
  H5Pset_obj_track_times(dcpl, false);  // reproducible files (h5py default too)
  if (n > 0 && compression_ != Compression::none) {
    const hsize_t chunk = std::min<hsize_t>(n, 1024);
    check(H5Pset_chunk(dcpl, 1, &chunk), name, 0);
    check(H5Pset_deflate(dcpl, 4), name, 0);
  }
  h5::Handle dset(
      check(H5Dcreate2(loc, name.c_str(), file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), name));
  if (n > 0) check(H5Dwrite(dset, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), name, 0);
}

}  // namespace rabbit::io
