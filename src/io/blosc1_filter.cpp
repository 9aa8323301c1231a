// HDF5 filter 32001 (Blosc v1) on top of Debian's c-blosc. Kept in its own translation unit:
// blosc.h and blosc2.h define clashing macros and functions.
#include <blosc.h>

#include <string>

#include "hdf5_filter_support.hpp"
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
                     std::string(complib ? complib : "unknown") + ", code " + std::to_string(got) + ")");
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
  const int n = blosc_compress_ctx(clevel, shuffle, typesize == 0 ? 1 : typesize, src_bytes, src, out.data(),
                                   out.size(), compname, 0, 1);
  if (n <= 0) throw InputError("Blosc: compression failed (code " + std::to_string(n) + ")");
  out.resize(static_cast<size_t>(n));
  return out;
}

namespace detail {

size_t blosc1_filter(unsigned flags, size_t cd_nelmts, const unsigned cd_values[], size_t nbytes,
                     size_t* buf_size, void** buf) {
  return run_filter_callback(
      flags, nbytes, buf_size, buf, "Blosc",
      [&](const void* src, size_t src_bytes) {
        const int64_t expected = cd_nelmts >= 4 ? static_cast<int64_t>(cd_values[3]) : -1;
        const size_t bytes = blosc1_checked_size(src, src_bytes, expected);
        return ChunkDecoding{bytes, [src, bytes](void* dst) { blosc1_decode_into(src, dst, bytes); }};
      },
      [&](const void* src, size_t src_bytes) {
        const FilterCompression c = filter_compression(cd_nelmts, cd_values, BLOSC_SHUFFLE, BLOSC_BLOSCLZ);
        return blosc1_encode(src, src_bytes, c.typesize, c.clevel, c.shuffle, c.compcode);
      });
}

}  // namespace detail
}  // namespace rabbit::io
