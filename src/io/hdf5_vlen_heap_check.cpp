// The global-heap check of hdf5_vlen_heap_check.hpp. File format terms (element descriptor, global
// heap collection, heap object) as in docs/input-reader.md "Variable-length data and the global heap".
#include "hdf5_vlen_heap_check.hpp"

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include "rabbit/core/error.hpp"
#include "rabbit/io/blosc_filters.hpp"
#include "rabbit/io/hdf5_handle.hpp"
#include "rabbit/io/hdf5_reader.hpp"

namespace rabbit::h5 {
namespace {

struct CorruptVlen : std::runtime_error {
  using std::runtime_error::runtime_error;
};

uint64_t decode_le(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

/// Bytes of the file read without HDF5, bounds-checked against the file size.
class RawFile {
 public:
  explicit RawFile(const std::string& filename) : in_(filename, std::ios::binary) {
    std::error_code ec;
    size_ = std::filesystem::file_size(filename, ec);
    if (ec || !in_) throw CorruptVlen("cannot reopen the file to check it");
  }
  uint64_t size() const { return size_; }
  std::vector<uint8_t> read(uint64_t offset, uint64_t count, const std::string& what) {
    if (offset > size_ || count > size_ - offset) {
      throw CorruptVlen(what + " at " + hex(offset) + " (" + std::to_string(count) +
                        " bytes) lies outside the file (" + std::to_string(size_) + " bytes)");
    }
    std::vector<uint8_t> bytes(static_cast<size_t>(count));
    in_.seekg(static_cast<std::streamoff>(offset));
    if (count > 0 && !in_.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(count))) {
      throw CorruptVlen("cannot read " + what + " at " + hex(offset));
    }
    return bytes;
  }

 private:
  std::ifstream in_;
  uint64_t size_ = 0;
};

struct FileSizes {
  size_t addr = 8;    // sizeof_addr of the superblock
  size_t length = 8;  // sizeof_size
  uint64_t base = 0;  // base address: the user block precedes it
};

// ---- the filters a chunk of descriptors may pass through, undone without HDF5's pipeline

std::vector<uint8_t> inflate_chunk(const std::vector<uint8_t>& in, size_t expected) {
  std::vector<uint8_t> out(expected + 1);
  uLongf out_len = static_cast<uLongf>(out.size());
  const int rc = uncompress(out.data(), &out_len, in.data(), static_cast<uLong>(in.size()));
  if (rc != Z_OK || out_len != expected) {
    throw CorruptVlen("a deflate chunk does not decode to the " + std::to_string(expected) +
                      " bytes of its element descriptors");
  }
  out.resize(expected);
  return out;
}

std::vector<uint8_t> unshuffle(const std::vector<uint8_t>& in, size_t element_size) {
  if (element_size <= 1) return in;
  std::vector<uint8_t> out(in.size());
  const size_t n = in.size() / element_size;
  for (size_t b = 0; b < element_size; ++b)
    for (size_t i = 0; i < n; ++i) out[i * element_size + b] = in[b * n + i];
  std::memcpy(out.data() + n * element_size, in.data() + n * element_size, in.size() - n * element_size);
  return out;
}

std::vector<uint8_t> unfilter_chunk(hid_t dcpl, unsigned filter_mask, std::vector<uint8_t> bytes,
                                    size_t expected) {
  const int nfilters = H5Pget_nfilters(dcpl);
  for (int i = nfilters - 1; i >= 0; --i) {
    if (filter_mask & (1u << i)) continue;  // HDF5 skipped this filter when it wrote the chunk
    unsigned flags = 0, config = 0;
    unsigned cd[8] = {0};
    size_t ncd = 8;
    const H5Z_filter_t id =
        H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &ncd, cd, 0, nullptr, &config);
    switch (id) {
      case H5Z_FILTER_DEFLATE:
        bytes = inflate_chunk(bytes, expected);
        break;
      case H5Z_FILTER_SHUFFLE:
        bytes = unshuffle(bytes, ncd >= 1 ? cd[0] : 1);
        break;
      case H5Z_FILTER_FLETCHER32:
        if (bytes.size() < 4) throw CorruptVlen("a fletcher32 chunk is shorter than its checksum");
        bytes.resize(bytes.size() - 4);
        break;
      case io::kBloscFilterId:
        bytes = io::blosc1_decode(bytes.data(), bytes.size(), static_cast<int64_t>(expected));
        break;
      case io::kBlosc2FilterId:
        bytes = io::blosc2_decode_frame(bytes.data(), bytes.size(), static_cast<int64_t>(expected));
        break;
      default:
        throw CorruptVlen("HDF5 filter " + std::to_string(id) + " ('" + filter_name(static_cast<int>(id)) +
                          "') on variable-length data cannot be checked (use gzip, shuffle or Blosc)");
    }
  }
  if (bytes.size() != expected) {
    throw CorruptVlen("a chunk decodes to " + std::to_string(bytes.size()) + " bytes, its " +
                      "element descriptors need " + std::to_string(expected));
  }
  return bytes;
}

/// The objects of one global heap collection: index -> size, walked as HDF5's deserializer does.
class HeapCollections {
 public:
  HeapCollections(RawFile& raw, FileSizes sizes) : raw_(raw), sizes_(sizes) {}

  void check_object(uint64_t collection, uint64_t index, uint64_t expected_size) {
    const std::map<uint64_t, uint64_t>& objects = collection_at(collection);
    const auto it = objects.find(index);
    if (index == 0 || it == objects.end()) {
      throw CorruptVlen("global heap collection at " + hex(collection) + " has no object " +
                        std::to_string(index));
    }
    if (it->second != expected_size) {
      throw CorruptVlen("global heap object " + std::to_string(index) + " at " + hex(collection) + " holds " +
                        std::to_string(it->second) + " bytes, its element needs " +
                        std::to_string(expected_size));
    }
  }

 private:
  const std::map<uint64_t, uint64_t>& collection_at(uint64_t address) {
    const auto known = collections_.find(address);
    if (known != collections_.end()) return known->second;
    const uint64_t header_size = 8 + sizes_.length;    // "GCOL", version, 3 reserved, collection size
    const uint64_t object_header = 8 + sizes_.length;  // index, references, 4 reserved, object size
    if (address > raw_.size() || sizes_.base > raw_.size() - address) {
      throw CorruptVlen("global heap collection address " + hex(address) + " lies outside the file");
    }
    const uint64_t at = sizes_.base + address;
    const std::vector<uint8_t> header = raw_.read(at, header_size, "global heap collection");
    if (std::memcmp(header.data(), "GCOL", 4) != 0 || header[4] != 1) {
      throw CorruptVlen("no global heap collection (signature GCOL, version 1) at " + hex(address));
    }
    const uint64_t size = decode_le(header.data() + 8, sizes_.length);
    if (size < header_size) {
      throw CorruptVlen("global heap collection at " + hex(address) + " claims " + std::to_string(size) +
                        " bytes");
    }
    const std::vector<uint8_t> heap = raw_.read(at, size, "global heap collection");
    std::map<uint64_t, uint64_t> objects;
    uint64_t p = header_size;
    while (p < size) {
      if (size - p < object_header) break;  // too small for an object: free space, as HDF5 assumes
      const uint64_t index = decode_le(heap.data() + p, 2);
      const uint64_t object_size = decode_le(heap.data() + p + 8, sizes_.length);
      uint64_t need = 0;
      if (index > 0) {
        if (object_size > size - p - object_header) {
          throw CorruptVlen("global heap object " + std::to_string(index) + " at " + hex(address) +
                            " claims " + std::to_string(object_size) + " bytes, past the collection end");
        }
        need = object_header + ((object_size + 7) / 8) * 8;
        objects[index] = object_size;
      } else {
        // The free-space object: its size counts from its own header; zero would never advance.
        if (object_size == 0 || object_size > size - p) {
          throw CorruptVlen("global heap collection at " + hex(address) + " has free space of " +
                            std::to_string(object_size) + " bytes at offset " + std::to_string(p));
        }
        need = object_size;
      }
      p += need;
    }
    return collections_.emplace(address, std::move(objects)).first->second;
  }

  RawFile& raw_;
  FileSizes sizes_;
  std::map<uint64_t, std::map<uint64_t, uint64_t>> collections_;
};

FileSizes file_sizes(hid_t file) {
  Handle fcpl(H5Fget_create_plist(file));
  size_t addr = 0, length = 0;
  hsize_t userblock = 0;
  if (!fcpl.valid() || H5Pget_sizes(fcpl, &addr, &length) < 0 || H5Pget_userblock(fcpl, &userblock) < 0) {
    throw CorruptVlen("cannot read the file's address sizes: " + current_hdf5_error());
  }
  if ((addr != 2 && addr != 4 && addr != 8) || (length != 2 && length != 4 && length != 8)) {
    throw CorruptVlen("unsupported address/length sizes " + std::to_string(addr) + "/" +
                      std::to_string(length));
  }
  return FileSizes{addr, length, userblock};
}

/// Every element descriptor of the dataset: its stored bytes, element by element.
std::vector<uint8_t> element_descriptors(RawFile& raw, hid_t dataset, uint64_t n, size_t descriptor_size) {
  Handle dcpl(H5Dget_create_plist(dataset));
  const H5D_layout_t layout = H5Pget_layout(dcpl);
  if (layout == H5D_CONTIGUOUS) {
    const haddr_t offset = H5Dget_offset(dataset);
    if (offset == HADDR_UNDEF) return {};  // never written: HDF5 returns fill values, no heap read
    return raw.read(offset, n * descriptor_size, "the element descriptors");
  }
  if (layout != H5D_CHUNKED) {
    throw CorruptVlen("variable-length data with compact or virtual storage cannot be checked");
  }
  hsize_t chunk = 0;
  if (H5Pget_chunk(dcpl, 1, &chunk) != 1 || chunk == 0) throw CorruptVlen("invalid chunk dimensions");
  Handle space(H5Dget_space(dataset));
  hsize_t nchunks = 0;
  if (H5Dget_num_chunks(dataset, space, &nchunks) < 0) {
    throw CorruptVlen("cannot list the chunks: " + current_hdf5_error());
  }
  std::vector<uint8_t> all(static_cast<size_t>(n * descriptor_size), 0);
  const uint64_t chunk_bytes = chunk * descriptor_size;
  for (hsize_t c = 0; c < nchunks; ++c) {
    hsize_t offset = 0, stored = 0;
    unsigned mask = 0;
    haddr_t addr = 0;
    if (H5Dget_chunk_info(dataset, space, c, &offset, &mask, &addr, &stored) < 0) {
      throw CorruptVlen("cannot locate chunk " + std::to_string(c) + ": " + current_hdf5_error());
    }
    if (addr == HADDR_UNDEF) continue;
    if (offset >= n || stored > raw.size()) throw CorruptVlen("chunk " + std::to_string(c) + " is invalid");
    std::vector<uint8_t> bytes(static_cast<size_t>(stored));
    uint32_t read_mask = 0;
    if (H5Dread_chunk(dataset, H5P_DEFAULT, &offset, &read_mask, bytes.data()) < 0) {
      throw CorruptVlen("cannot read chunk " + std::to_string(c) + ": " + current_hdf5_error());
    }
    bytes = unfilter_chunk(dcpl, read_mask, std::move(bytes), static_cast<size_t>(chunk_bytes));
    const uint64_t count = std::min<uint64_t>(chunk, n - offset);
    std::memcpy(all.data() + offset * descriptor_size, bytes.data(),
                static_cast<size_t>(count * descriptor_size));
  }
  return all;
}

}  // namespace

void check_vlen_heap(const std::string& filename, hid_t file, hid_t dataset, const std::string& path,
                     size_t base_size) {
  try {
    Handle space(H5Dget_space(dataset));
    hssize_t n = H5Sget_simple_extent_npoints(space);
    if (H5Sget_simple_extent_type(space) == H5S_NULL || n < 0) n = 0;
    if (n == 0) return;
    RawFile raw(filename);
    const FileSizes sizes = file_sizes(file);
    const size_t descriptor_size = 4 + sizes.addr + 4;  // length, collection address, object index
    if (static_cast<uint64_t>(n) > raw.size()) {
      throw CorruptVlen(std::to_string(n) + " elements in a file of " + std::to_string(raw.size()) +
                        " bytes");
    }
    const std::vector<uint8_t> descriptors =
        element_descriptors(raw, dataset, static_cast<uint64_t>(n), descriptor_size);
    HeapCollections heap(raw, sizes);
    for (size_t e = 0; e < descriptors.size() / descriptor_size; ++e) {
      const uint8_t* d = descriptors.data() + e * descriptor_size;
      const uint64_t length = decode_le(d, 4);
      const uint64_t collection = decode_le(d + 4, sizes.addr);
      const uint64_t index = decode_le(d + 4 + sizes.addr, 4);
      if (collection == 0) continue;  // a null element: HDF5 reads no heap object
      try {
        heap.check_object(collection, index, length * base_size);
      } catch (const CorruptVlen& e_what) {
        throw CorruptVlen("element " + std::to_string(e) + ": " + e_what.what());
      }
    }
  } catch (const CorruptVlen& e) {
    throw InputError(filename + ": dataset '" + path + "': corrupt variable-length data: " + e.what());
  } catch (const InputError& e) {  // a Blosc decoder's own message
    throw InputError(filename + ": dataset '" + path + "': corrupt variable-length data: " + e.what());
  }
}

}  // namespace rabbit::h5
