#pragma once
// Internal to rabbit_io: what the HDF5 filter callbacks of the Blosc-family filters share
// (blosc1_filter.cpp, blosc2_filter.cpp; their codec headers cannot meet in one translation unit).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace rabbit::io::detail {

/// Compression settings of a filter from its client data, PyTables' layout: [2] type size,
/// [4] level, [5] shuffle, [6] codec; absent entries take level 5 and the given defaults.
struct FilterCompression {
  size_t typesize = 1;
  int clevel = 5;
  int shuffle = 0;
  int compcode = 0;
};
FilterCompression filter_compression(size_t cd_nelmts, const unsigned cd_values[], int default_shuffle,
                                     int default_compcode);

/// One validated compressed chunk: its decoded size, and how to write the decoded bytes into a
/// buffer of that size.
struct ChunkDecoding {
  size_t bytes = 0;
  std::function<void(void* dst)> write;
};

/// The body of an HDF5 filter callback (H5Z_func_t). Decoding (H5Z_FLAG_REVERSE) writes straight
/// into the buffer handed back to HDF5 (no intermediate copy); encoding copies `encode`'s result.
/// *buf is replaced by memory from H5allocate_memory and its size returned. Any exception frees
/// what was allocated, leaves its message for take_filter_error() and returns 0, HDF5's failure.
/// `codec` names the codec in the out-of-memory message.
size_t run_filter_callback(
    unsigned flags, size_t nbytes, size_t* buf_size, void** buf, const char* codec,
    const std::function<ChunkDecoding(const void* src, size_t src_bytes)>& decode,
    const std::function<std::vector<uint8_t>(const void* src, size_t src_bytes)>& encode);

}  // namespace rabbit::io::detail
