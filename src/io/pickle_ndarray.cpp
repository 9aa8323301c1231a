// numpy arrays of the non-executing pickle reader (docs/input-reader.md "The meta pickle"): the
// dtype spec (kind, item size, byte order) and the conversion of an ndarray node's raw bytes
// (C or Fortran order) to doubles or int64.
#include <bit>
#include <type_traits>

#include "pickle_machine.hpp"

namespace rabbit::pickle {
namespace detail {

// Bytes per element of a numeric typestr ("<f8", "i4", "?"), 0 if not one.
size_t dtype_itemsize(std::string typestr) {
  if (!typestr.empty() &&
      (typestr[0] == '<' || typestr[0] == '>' || typestr[0] == '|' || typestr[0] == '=')) {
    typestr.erase(0, 1);
  }
  if (typestr == "?") return 1;
  if (typestr.size() < 2 || typestr.size() > 3) return 0;
  size_t n = 0;
  for (size_t i = 1; i < typestr.size(); ++i) {
    if (typestr[i] < '0' || typestr[i] > '9') return 0;
    n = n * 10 + static_cast<size_t>(typestr[i] - '0');
  }
  return n;
}

}  // namespace detail

namespace {

struct DtypeSpec {
  char kind = 0;
  int itemsize = 0;
  bool big_endian = false;
};

DtypeSpec dtype_spec(const Value& array) {
  if (array.dtype == nullptr || !array.dtype->is(Kind::dtype)) {
    throw DecodeError("meta: numpy array without a dtype");
  }
  const Value& dt = *array.dtype;
  std::string s = dt.text;
  DtypeSpec spec;
  char order = dt.byteorder;
  if (!s.empty() && (s[0] == '<' || s[0] == '>' || s[0] == '|' || s[0] == '=')) {
    order = s[0];
    s.erase(0, 1);
  }
  spec.big_endian = order == '>';
  if (s == "?" || s == "b1") {
    spec.kind = 'b';
    spec.itemsize = 1;
    return spec;
  }
  if (s.size() < 2) throw DecodeError("meta: unsupported numpy dtype '" + dt.text + "'");
  spec.kind = s[0];
  try {
    spec.itemsize = std::stoi(s.substr(1));
  } catch (...) {
    throw DecodeError("meta: unsupported numpy dtype '" + dt.text + "'");
  }
  const bool ok = (spec.kind == 'f' && (spec.itemsize == 4 || spec.itemsize == 8)) ||
                  ((spec.kind == 'i' || spec.kind == 'u') &&
                   (spec.itemsize == 1 || spec.itemsize == 2 || spec.itemsize == 4 || spec.itemsize == 8));
  if (!ok) throw DecodeError("meta: unsupported numpy dtype '" + dt.text + "'");
  return spec;
}

// Element i (in C order) of a numeric array, as double or int64.
template <typename T>
std::vector<T> convert(const Value& array) {
  const DtypeSpec spec = dtype_spec(array);
  uint64_t count = 1;
  for (int64_t e : array.shape) {
    if (e != 0 && count > (uint64_t{1} << 40) / static_cast<uint64_t>(e)) {
      throw DecodeError("meta: numpy array too large");
    }
    count *= static_cast<uint64_t>(e);
  }
  if (count * static_cast<uint64_t>(spec.itemsize) != array.text.size()) {
    throw DecodeError("meta: numpy array of shape " + std::to_string(count) + " elements has " +
                      std::to_string(array.text.size()) + " data bytes");
  }
  std::vector<T> out(static_cast<size_t>(count));
  const auto* base = reinterpret_cast<const uint8_t*>(array.text.data());
  // Fortran order: map each C-order index to its storage position.
  const size_t rank = array.shape.size();
  std::vector<uint64_t> fstride(rank, 1);
  for (size_t d = 1; d < rank; ++d) fstride[d] = fstride[d - 1] * static_cast<uint64_t>(array.shape[d - 1]);
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t storage = i;
    if (array.fortran_order && rank > 1) {
      storage = 0;
      uint64_t rem = i;
      for (size_t d = rank; d-- > 0;) {
        const auto e = static_cast<uint64_t>(array.shape[d]);
        storage += (rem % e) * fstride[d];
        rem /= e;
      }
    }
    const uint8_t* p = base + storage * static_cast<uint64_t>(spec.itemsize);
    uint64_t u = 0;
    for (int b = 0; b < spec.itemsize; ++b) {
      const int k = spec.big_endian ? b : spec.itemsize - 1 - b;
      u = (u << 8) | p[k];
    }
    double d = 0;
    int64_t n = 0;
    switch (spec.kind) {
      case 'f':
        d = spec.itemsize == 8 ? std::bit_cast<double>(u)
                               : static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(u)));
        n = static_cast<int64_t>(d);
        break;
      case 'i': {
        const int shift = 64 - 8 * spec.itemsize;
        n = static_cast<int64_t>(u << shift) >> shift;
        d = static_cast<double>(n);
        break;
      }
      default:  // 'u', 'b'
        n = static_cast<int64_t>(u);
        d = static_cast<double>(u);
        break;
    }
    if constexpr (std::is_same_v<T, double>) {
      out[i] = d;
    } else {
      out[i] = n;
    }
  }
  return out;
}

}  // namespace

std::vector<double> ndarray_to_doubles(const Value& array) {
  if (!array.is(Kind::ndarray)) throw DecodeError("meta: expected a numpy array, found " + array.describe());
  return convert<double>(array);
}

std::vector<int64_t> ndarray_to_ints(const Value& array) {
  if (!array.is(Kind::ndarray)) throw DecodeError("meta: expected a numpy array, found " + array.describe());
  return convert<int64_t>(array);
}

}  // namespace rabbit::pickle
