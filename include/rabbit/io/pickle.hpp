#pragma once
// A small, non-executing reader of Python pickle streams (protocols 2-5), enough for rabbit's
// `meta` (docs/input-reader.md "The meta pickle") and result files (docs/output-format.md). Nothing is ever
// imported or called: globals stay names, REDUCE/NEWOBJ/BUILD build opaque Object nodes (class +
// args + state), except a few known callables that are interpreted as data (numpy arrays and
// dtypes, numpy.frombuffer, OrderedDict, set, frozenset, _codecs.encode). Persistent ids
// (BINPERSID) stay persistent_ref nodes: result files (postfit/result_file.hpp) resolve wums'
// H5Path ids to their HDF5 objects themselves. Corrupt or hostile streams throw
// pickle::DecodeError (an InputError) with the byte offset and opcode; every length is
// bounds-checked and stack/memo/depth sizes are limited.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rabbit/core/error.hpp"

namespace rabbit::pickle {

/// The meta could not be decoded (message starts with "meta: ...").
class DecodeError : public InputError {
 public:
  explicit DecodeError(const std::string& what) : InputError(what) {}
};

enum class Kind {
  none,
  boolean,
  integer,
  floating,
  string,
  bytes,
  list,
  tuple,
  dict,
  set,
  global,          // module + name (a class or function reference)
  object,          // result of NEWOBJ / REDUCE of an unknown callable, with BUILD state
  persistent_ref,  // BINPERSID
  ndarray,
  dtype,
  mark_sentinel  // internal
};

struct Value;
using ValuePtr = std::shared_ptr<Value>;

struct Value {
  Value() = default;
  Value(const Value&) = delete;
  Value& operator=(const Value&) = delete;
  /// Iterative: hostile streams can nest containers a million levels deep.
  ~Value();

  Kind kind = Kind::none;
  bool boolean = false;
  int64_t integer = 0;
  bool big_integer = false;  // LONG1/LONG4 value outside int64: `text` holds the LE bytes
  double floating = 0.0;
  std::string text;             // string (UTF-8 bytes as stored), bytes; global: module;
                                // dtype: typestr ("f8"); ndarray: raw data bytes
  std::string name;             // global: qualified name; object: "newobj" or "reduce"
  std::vector<ValuePtr> items;  // list, tuple, set; object: list items (APPEND on objects)
  std::vector<std::pair<ValuePtr, ValuePtr>> dict_items;  // dict; object: SETITEM on objects
  ValuePtr cls;                                           // object: the class / callable (usually a global)
  ValuePtr args;                                          // object: constructor args; persistent_ref: pid
  ValuePtr state;                                         // object: BUILD state (nullptr if none)
  // ndarray / dtype
  char byteorder = '=';        // dtype: '<', '>', '|', '='
  ValuePtr dtype;              // ndarray: its dtype value
  std::vector<int64_t> shape;  // ndarray
  bool fortran_order = false;  // ndarray

  bool is(Kind k) const { return kind == k; }
  /// For globals: "module.name".
  std::string qualified_name() const { return text + "." + name; }
  /// Dict lookup by string key (nullptr if absent or not a dict).
  const Value* get(std::string_view key) const;
  /// Human-readable summary for messages ("dict", "object hist.axis.Regular", ...).
  std::string describe() const;
};

struct Limits {
  size_t max_stack = 1u << 20;
  size_t max_memo = 1u << 22;
  size_t max_marks = 1u << 16;
  size_t max_container_items = 1u << 26;
};

/// Parses a complete pickle stream and returns the object of its STOP opcode.
ValuePtr parse(const uint8_t* data, size_t size, const Limits& limits = {});
inline ValuePtr parse(const std::vector<uint8_t>& bytes, const Limits& limits = {}) {
  return parse(bytes.data(), bytes.size(), limits);
}

/// Converts an ndarray of a numeric dtype (f2? no; f4 f8 i1..i8 u1..u8 b1/?) to doubles / int64,
/// honouring the byte order. Throws DecodeError for other dtypes.
std::vector<double> ndarray_to_doubles(const Value& array);
std::vector<int64_t> ndarray_to_ints(const Value& array);

/// Opcode name for messages ("BINUNICODE"), or "0x.." for unknown bytes.
std::string opcode_name(uint8_t op);

}  // namespace rabbit::pickle
