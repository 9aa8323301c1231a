// HDF5 filter 32001 (Blosc v1) on top of Debian's c-blosc. Kept in its own translation unit:
// blosc.h and blosc2.h define clashing macros and functions.
#include <blosc.h>
#include <hdf5.h>

#include <cstring>
#include <string>

#include "rabbit/core/error.hpp"
#include "rabbit/io/blosc_filters.hpp"

namespace rabbit::io {

namespace {

// Validates a Blosc chunk and returns its decoded size.
size_t blosc1_checked_size(const void* src, size_t src_bytes, int64_t expected_bytes) {
  if (src_bytes < BLOSC_MIN_HEADER_LENGTH) {
    throw InputError("Blosc chunk: truncated (" + std::to_string(src_bytes) +
                     " bytes, the header alone has 16)");
  }
  size_t nbytes = 0, cbytes = 0, blocksize = 0;
  blosc_cbuffer_sizes(src, &nbytes, &cbytes, &blocksize);
  if (cbytes > src_bytes) {
    throw InputError("Blosc chunk: corrupt (cbytes " + std::to_string(cbytes) + " > " +
                     std::to_string(src_bytes) + " available)");
  }
  size_t validated = 0;
  if (blosc_cbuffer_validate(src, src_bytes, &validated) < 0) {
    throw InputError("Blosc chunk: corrupt header (version/sizes inconsistent)");
  }
  if (expected_bytes >= 0 && static_cast<int64_t>(nbytes) != expected_bytes) {
    throw InputError("Blosc chunk: decodes to " + std::to_string(nbytes) + " bytes, expected " +
                     std::to_string(expected_bytes));
  }
  return nbytes;
}

void blosc1_decode_into(const void* src, void* dst, size_t nbytes) {
  if (nbytes == 0) return;
  const int got = blosc_decompress_ctx(src, dst, nbytes, 1);
  if (got < 0 || static_cast<size_t>(got) != nbytes) {
    const char* complib = blosc_cbuffer_complib(src);
    throw InputError("Blosc chunk: decompression failed (codec library " +
                     std::string(complib ? complib : "unknown") + ", code " + std::to_string(got) +
                     ")");
  }
}

}  // namespace

std::vector<uint8_t> blosc1_decode(const void* src, size_t src_bytes, int64_t expected_bytes) {
  const size_t nbytes = blosc1_checked_size(src, src_bytes, expected_bytes);
  std::vector<uint8_t> out(nbytes);
  blosc1_decode_into(src, out.data(), nbytes);
  return out;
}

std::vector<uint8_t> blosc1_encode(const void* src, size_t src_bytes, size_t typesize, int clevel,
                                   int shuffle, int compcode) {
  const char* compname = nullptr;
  if (blosc_compcode_to_compname(compcode, &compname) < 0 || compname == nullptr) {
    throw InputError("Blosc: unknown codec code " + std::to_string(compcode));
  }
  std::vector<uint8_t> out(src_bytes + BLOSC_MAX_OVERHEAD);
  const int n = blosc_compress_ctx(clevel, shuffle, typesize == 0 ? 1 : typesize, src_bytes, src,
                                   out.data(), out.size(), compname, 0, 1);
  if (n <= 0) throw InputError("Blosc: compression failed (code " + std::to_string(n) + ")");
  out.resize(static_cast<size_t>(n));
  return out;
}

namespace detail {

size_t blosc1_filter(unsigned flags, size_t cd_nelmts, const unsigned cd_values[], size_t nbytes,
                     size_t* buf_size, void** buf) {
  void* result = nullptr;
  try {
    size_t result_bytes = 0;
    if (flags & H5Z_FLAG_REVERSE) {
      const int64_t expected = cd_nelmts >= 4 ? static_cast<int64_t>(cd_values[3]) : -1;
      result_bytes = blosc1_checked_size(*buf, nbytes, expected);
      // Decode straight into the buffer handed back to HDF5: no intermediate copy.
      result = H5allocate_memory(result_bytes == 0 ? 1 : result_bytes, false);
      if (result == nullptr) throw InputError("Blosc: out of memory");
      blosc1_decode_into(*buf, result, result_bytes);
    } else {
      const size_t typesize = cd_nelmts >= 3 && cd_values[2] > 0 ? cd_values[2] : 1;
      const int clevel = cd_nelmts >= 5 ? static_cast<int>(cd_values[4]) : 5;
      const int shuffle = cd_nelmts >= 6 ? static_cast<int>(cd_values[5]) : 1;
      const int compcode = cd_nelmts >= 7 ? static_cast<int>(cd_values[6]) : BLOSC_BLOSCLZ;
      const std::vector<uint8_t> out = blosc1_encode(*buf, nbytes, typesize, clevel, shuffle, compcode);
      result_bytes = out.size();
      result = H5allocate_memory(result_bytes, false);
      if (result == nullptr) throw InputError("Blosc: out of memory");
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

}  // namespace detail
}  // namespace rabbit::io
