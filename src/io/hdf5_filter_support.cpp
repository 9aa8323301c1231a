#include "hdf5_filter_support.hpp"

#include <hdf5.h>

#include <cstring>
#include <exception>
#include <string>

#include "rabbit/core/error.hpp"
#include "rabbit/io/blosc_filters.hpp"

namespace rabbit::io::detail {

FilterCompression filter_compression(size_t cd_nelmts, const unsigned cd_values[], int default_shuffle,
                                     int default_compcode) {
  FilterCompression c;
  c.typesize = cd_nelmts >= 3 && cd_values[2] > 0 ? cd_values[2] : 1;
  c.clevel = cd_nelmts >= 5 ? static_cast<int>(cd_values[4]) : 5;
  c.shuffle = cd_nelmts >= 6 ? static_cast<int>(cd_values[5]) : default_shuffle;
  c.compcode = cd_nelmts >= 7 ? static_cast<int>(cd_values[6]) : default_compcode;
  return c;
}

size_t run_filter_callback(
    unsigned flags, size_t nbytes, size_t* buf_size, void** buf, const char* codec,
    const std::function<ChunkDecoding(const void* src, size_t src_bytes)>& decode,
    const std::function<std::vector<uint8_t>(const void* src, size_t src_bytes)>& encode) {
  void* result = nullptr;
  try {
    size_t result_bytes = 0;
    if (flags & H5Z_FLAG_REVERSE) {
      const ChunkDecoding chunk = decode(*buf, nbytes);
      result_bytes = chunk.bytes;
      result = H5allocate_memory(result_bytes == 0 ? 1 : result_bytes, false);
      if (result == nullptr) throw InputError(std::string(codec) + ": out of memory");
      chunk.write(result);
    } else {
      const std::vector<uint8_t> out = encode(*buf, nbytes);
      result_bytes = out.size();
      result = H5allocate_memory(result_bytes, false);
      if (result == nullptr) throw InputError(std::string(codec) + ": out of memory");
      std::memcpy(result, out.data(), out.size());
    }
    H5free_memory(*buf);
    *buf = result;
    *buf_size = result_bytes;
    return result_bytes;
  } catch (const std::exception& e) {
    if (result != nullptr) H5free_memory(result);
    set_filter_error(e.what());
    return 0;
  }
}

}  // namespace rabbit::io::detail
