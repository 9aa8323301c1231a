#pragma once
// HDF5 filters 32001 (Blosc v1) and 32026 (Blosc2 contiguous frame, PyTables' hdf5-blosc2 layout),
// implemented with the real libraries: Debian's c-blosc and C-Blosc2 (docs/input-reader.md
// "Compression filters and HDF5_PLUGIN_PATH"). Registered in-process with H5Zregister unless a filter with
// that id is already available (a dynamic plugin found through HDF5_PLUGIN_PATH / the default plugin
// directory, or an earlier in-process registration), which then takes precedence.
//
// Environment switch RABBIT_BLOSC_FILTERS:
//   unset / "auto"  register ours only for ids not already available (default);
//   "builtin"       always register ours (replaces any plugin);
//   "plugin"        never register ours: rely on HDF5 dynamic plugins only.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rabbit::io {

inline constexpr int kBloscFilterId = 32001;
inline constexpr int kBlosc2FilterId = 32026;

enum class FilterSource {
  builtin,      // our decoder (c-blosc / C-Blosc2)
  external,     // a plugin or an earlier registration that we left in place
  unavailable,  // neither (RABBIT_BLOSC_FILTERS=plugin and no plugin found)
};

struct BloscFilterStatus {
  FilterSource blosc = FilterSource::unavailable;
  FilterSource blosc2 = FilterSource::unavailable;
};

/// Registers the filters once per process (thread-safe) and reports where each one comes from.
const BloscFilterStatus& ensure_blosc_filters();

std::string to_string(FilterSource source);

/// The cause of the last failure of one of our filter callbacks in this thread ("" if none);
/// clears it. HDF5 only learns "filter returned failure"; the reader appends this cause.
std::string take_filter_error();
void set_filter_error(std::string message);

// ---- the codecs behind the callbacks, usable on their own (tests, tools) ----

/// Decodes one Blosc (v1 format, as written by filter 32001) chunk. `expected_bytes` >= 0
/// requires exactly that decoded size. Throws InputError("Blosc chunk: ...") on corrupt input.
std::vector<uint8_t> blosc1_decode(const void* src, size_t src_bytes, int64_t expected_bytes = -1);
/// Compresses like filter 32001 does (one Blosc chunk).
std::vector<uint8_t> blosc1_encode(const void* src, size_t src_bytes, size_t typesize, int clevel,
                                   int shuffle, int compcode);

/// Decodes the payload of filter 32026: a Blosc2 contiguous frame holding one chunk (or a B2ND
/// array). Throws InputError("Blosc2 frame: ...") on corrupt input.
std::vector<uint8_t> blosc2_decode_frame(const void* src, size_t src_bytes, int64_t expected_bytes = -1);
/// Compresses like filter 32026 does for 1-D chunks: a super-chunk with one chunk, as a cframe.
std::vector<uint8_t> blosc2_encode_frame(const void* src, size_t src_bytes, size_t typesize, int clevel,
                                         int shuffle, int compcode);

namespace detail {
// Filter callbacks and set_local hooks (defined next to each codec).
size_t blosc1_filter(unsigned flags, size_t cd_nelmts, const unsigned cd_values[], size_t nbytes,
                     size_t* buf_size, void** buf);
size_t blosc2_filter(unsigned flags, size_t cd_nelmts, const unsigned cd_values[], size_t nbytes,
                     size_t* buf_size, void** buf);
}  // namespace detail

}  // namespace rabbit::io
