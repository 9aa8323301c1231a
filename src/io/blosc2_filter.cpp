// HDF5 filter 32026 (Blosc2) on top of C-Blosc2. The payload of every HDF5 chunk is a Blosc2
// contiguous frame ("cframe") of a super-chunk holding the whole HDF5 chunk as chunk 0
// (docs/input-reader.md "Compression filters and HDF5_PLUGIN_PATH"), or a B2ND array frame for chunk rank
// >= 2. Own translation unit: blosc2.h clashes with c-blosc's blosc.h.
#include <b2nd.h>
#include <blosc2.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "hdf5_filter_support.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/io/blosc_filters.hpp"

namespace rabbit::io {
namespace {

void init_blosc2_once() {
  static std::once_flag once;
  std::call_once(once, [] { blosc2_init(); });
}

struct SchunkDeleter {
  void operator()(blosc2_schunk* s) const { blosc2_schunk_free(s); }
};
struct ContextDeleter {
  void operator()(blosc2_context* c) const { blosc2_free_ctx(c); }
};
struct ArrayDeleter {
  void operator()(b2nd_array_t* a) const { b2nd_free(a); }
};

constexpr uint8_t kFrameMagic[] = {'b', '2', 'f', 'r', 'a', 'm', 'e', 0};

// A decoded frame, ready to be written into a destination buffer of `nbytes`.
class FrameDecoder {
 public:
  FrameDecoder(const void* src, size_t src_bytes) {
    init_blosc2_once();
    // Cheap structural checks first, so that garbage gets a precise message.
    const auto* p = static_cast<const uint8_t*>(src);
    if (src_bytes < 64) fail("truncated (" + std::to_string(src_bytes) + " bytes)");
    if (std::memcmp(p + 2, kFrameMagic, sizeof kFrameMagic) != 0) {
      fail("missing 'b2frame' magic (not a Blosc2 frame; is this a bare Blosc chunk?)");
    }
    uint64_t frame_len = 0;
    for (int i = 0; i < 8; ++i) frame_len = (frame_len << 8) | p[16 + i];
    if (frame_len > src_bytes) {
      fail("frame length " + std::to_string(frame_len) + " > " + std::to_string(src_bytes) +
           " bytes available");
    }
    // copy=false: the library only borrows the bytes, which outlive this object.
    schunk_.reset(blosc2_schunk_from_buffer(const_cast<uint8_t*>(p), static_cast<int64_t>(src_bytes), false));
    if (!schunk_) fail("cannot parse the frame header");
    if (schunk_->nchunks < 1) fail("frame holds no chunk");
    if (blosc2_meta_exists(schunk_.get(), "b2nd") >= 0 || blosc2_meta_exists(schunk_.get(), "caterva") >= 0) {
      b2nd_array_t* array = nullptr;
      if (b2nd_from_schunk(schunk_.get(), &array) < 0 || array == nullptr) {
        fail("cannot open the B2ND array");
      }
      array_.reset(array);
      int64_t items = 1;
      for (int i = 0; i < array->ndim; ++i) items *= array->shape[i];
      nbytes_ = items * array->sc->typesize;
    } else {
      bool needs_free = false;
      uint8_t* chunk = nullptr;
      const int cbytes = blosc2_schunk_get_lazychunk(schunk_.get(), 0, &chunk, &needs_free);
      if (cbytes < 0 || chunk == nullptr) fail("cannot locate chunk 0 (code " + std::to_string(cbytes) + ")");
      chunk_ = chunk;
      chunk_owned_ = needs_free;
      chunk_bytes_ = cbytes;
      int32_t nbytes = 0, cb = 0, blocksize = 0;
      if (blosc2_cbuffer_sizes(chunk, &nbytes, &cb, &blocksize) < 0) fail("corrupt chunk header");
      if (cb > cbytes) {
        fail("corrupt Blosc chunk (cbytes " + std::to_string(cb) + " > " + std::to_string(cbytes) +
             " available)");
      }
      nbytes_ = nbytes;
    }
  }
  ~FrameDecoder() {
    array_.reset();  // borrows the super-chunk
    if (chunk_owned_) std::free(chunk_);
  }
  FrameDecoder(const FrameDecoder&) = delete;
  FrameDecoder& operator=(const FrameDecoder&) = delete;

  int64_t nbytes() const { return nbytes_; }

  void decode_into(void* dst, int64_t dst_bytes) {
    if (dst_bytes < nbytes_) fail("destination too small");
    if (nbytes_ == 0) return;
    if (array_) {
      int64_t start[B2ND_MAX_DIM] = {0}, stop[B2ND_MAX_DIM];
      for (int i = 0; i < array_->ndim; ++i) stop[i] = array_->shape[i];
      if (b2nd_get_slice_cbuffer(array_.get(), start, stop, dst, stop, dst_bytes) < 0) {
        fail("cannot decompress the B2ND array");
      }
      return;
    }
    blosc2_dparams dparams = BLOSC2_DPARAMS_DEFAULTS;
    dparams.nthreads = 1;
    std::unique_ptr<blosc2_context, ContextDeleter> dctx(blosc2_create_dctx(dparams));
    if (!dctx) fail("cannot create a decompression context");
    const int got =
        blosc2_decompress_ctx(dctx.get(), chunk_, chunk_bytes_, dst, static_cast<int32_t>(dst_bytes));
    if (got < 0 || got != nbytes_) {
      fail(std::string("chunk decompression failed (") +
           (got < 0 ? print_error(got) : "size " + std::to_string(got)) + ")");
    }
  }

 private:
  static std::string print_error(int code) {
    const char* s = print_error_string(code);
    return s ? s : ("code " + std::to_string(code));
  }
  static const char* print_error_string(int code) { return ::print_error(code); }
  [[noreturn]] static void fail(const std::string& what) { throw InputError("Blosc2 frame: " + what); }

  std::unique_ptr<blosc2_schunk, SchunkDeleter> schunk_;
  std::unique_ptr<b2nd_array_t, ArrayDeleter> array_;
  uint8_t* chunk_ = nullptr;
  bool chunk_owned_ = false;
  int32_t chunk_bytes_ = 0;
  int64_t nbytes_ = 0;
};

}  // namespace

std::vector<uint8_t> blosc2_decode_frame(const void* src, size_t src_bytes, int64_t expected_bytes) {
  FrameDecoder decoder(src, src_bytes);
  if (expected_bytes >= 0 && decoder.nbytes() != expected_bytes) {
    throw InputError("Blosc2 frame: decodes to " + std::to_string(decoder.nbytes()) + " bytes, expected " +
                     std::to_string(expected_bytes));
  }
  std::vector<uint8_t> out(static_cast<size_t>(decoder.nbytes()));
  decoder.decode_into(out.data(), decoder.nbytes());
  return out;
}

std::vector<uint8_t> blosc2_encode_frame(const void* src, size_t src_bytes, size_t typesize, int clevel,
                                         int shuffle, int compcode) {
  init_blosc2_once();
  blosc2_cparams cparams = BLOSC2_CPARAMS_DEFAULTS;
  cparams.compcode = static_cast<uint8_t>(compcode);
  cparams.clevel = static_cast<uint8_t>(clevel);
  cparams.typesize = static_cast<int32_t>(typesize == 0 ? 1 : typesize);
  cparams.filters[BLOSC2_MAX_FILTERS - 1] = static_cast<uint8_t>(shuffle);
  cparams.nthreads = 1;
  blosc2_dparams dparams = BLOSC2_DPARAMS_DEFAULTS;
  dparams.nthreads = 1;
  blosc2_storage storage = BLOSC2_STORAGE_DEFAULTS;
  storage.contiguous = true;
  storage.cparams = &cparams;
  storage.dparams = &dparams;
  std::unique_ptr<blosc2_schunk, SchunkDeleter> schunk(blosc2_schunk_new(&storage));
  if (!schunk) throw InputError("Blosc2: cannot create a super-chunk");
  if (blosc2_schunk_append_buffer(schunk.get(), src, static_cast<int32_t>(src_bytes)) < 0) {
    throw InputError("Blosc2: compression failed");
  }
  uint8_t* frame = nullptr;
  bool needs_free = false;
  const int64_t len = blosc2_schunk_to_buffer(schunk.get(), &frame, &needs_free);
  if (len < 0 || frame == nullptr) throw InputError("Blosc2: cannot serialise the frame");
  std::vector<uint8_t> out(frame, frame + len);
  if (needs_free) std::free(frame);
  return out;
}

namespace detail {

size_t blosc2_filter(unsigned flags, size_t cd_nelmts, const unsigned cd_values[], size_t nbytes,
                     size_t* buf_size, void** buf) {
  return run_filter_callback(
      flags, nbytes, buf_size, buf, "Blosc2",
      [&](const void* src, size_t src_bytes) {
        auto decoder = std::make_shared<FrameDecoder>(src, src_bytes);
        if (cd_nelmts >= 4 && decoder->nbytes() != static_cast<int64_t>(cd_values[3])) {
          throw InputError("Blosc2 frame: decodes to " + std::to_string(decoder->nbytes()) +
                           " bytes, the HDF5 chunk has " + std::to_string(cd_values[3]));
        }
        return ChunkDecoding{static_cast<size_t>(decoder->nbytes()),
                             [decoder](void* dst) { decoder->decode_into(dst, decoder->nbytes()); }};
      },
      [&](const void* src, size_t src_bytes) {
        const FilterCompression c = filter_compression(cd_nelmts, cd_values, BLOSC_SHUFFLE, BLOSC_BLOSCLZ);
        return blosc2_encode_frame(src, src_bytes, c.typesize, c.clevel, c.shuffle, c.compcode);
      });
}

}  // namespace detail
}  // namespace rabbit::io
