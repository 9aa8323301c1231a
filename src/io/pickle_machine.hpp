#pragma once
// The pickle stack machine of the non-executing reader (docs/input-reader.md "The meta pickle"):
// opcodes, stack, marks and memo. Private to src/io; the public API is rabbit/io/pickle.hpp.
// The opcode semantics follow CPython's pickle module (Lib/pickle.py, _Unpickler), restricted
// to data construction. Known callables (REDUCE/NEWOBJ/BUILD of whitelisted globals) are in
// pickle_known_callables.cpp, the value tree in pickle_value.cpp, numpy arrays in pickle_ndarray.cpp.
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "rabbit/io/pickle.hpp"

namespace rabbit::pickle::detail {

enum Op : uint8_t {
  MARK = '(',
  STOP = '.',
  POP = '0',
  POP_MARK = '1',
  DUP = '2',
  FLOAT = 'F',
  INT = 'I',
  BININT = 'J',
  BININT1 = 'K',
  LONG = 'L',
  BININT2 = 'M',
  NONE = 'N',
  PERSID = 'P',
  BINPERSID = 'Q',
  REDUCE = 'R',
  STRING = 'S',
  BINSTRING = 'T',
  SHORT_BINSTRING = 'U',
  UNICODE = 'V',
  BINUNICODE = 'X',
  APPEND = 'a',
  BUILD = 'b',
  GLOBAL = 'c',
  DICT = 'd',
  EMPTY_DICT = '}',
  APPENDS = 'e',
  GET = 'g',
  BINGET = 'h',
  INST = 'i',
  LONG_BINGET = 'j',
  LIST = 'l',
  EMPTY_LIST = ']',
  OBJ = 'o',
  PUT = 'p',
  BINPUT = 'q',
  LONG_BINPUT = 'r',
  SETITEM = 's',
  TUPLE = 't',
  EMPTY_TUPLE = ')',
  SETITEMS = 'u',
  BINFLOAT = 'G',
  PROTO = 0x80,
  NEWOBJ = 0x81,
  EXT1 = 0x82,
  EXT2 = 0x83,
  EXT4 = 0x84,
  TUPLE1 = 0x85,
  TUPLE2 = 0x86,
  TUPLE3 = 0x87,
  NEWTRUE = 0x88,
  NEWFALSE = 0x89,
  LONG1 = 0x8a,
  LONG4 = 0x8b,
  BINBYTES = 'B',
  SHORT_BINBYTES = 'C',
  SHORT_BINUNICODE = 0x8c,
  BINUNICODE8 = 0x8d,
  BINBYTES8 = 0x8e,
  EMPTY_SET = 0x8f,
  ADDITEMS = 0x90,
  FROZENSET = 0x91,
  NEWOBJ_EX = 0x92,
  STACK_GLOBAL = 0x93,
  MEMOIZE = 0x94,
  FRAME = 0x95,
  BYTEARRAY8 = 0x96,
  NEXT_BUFFER = 0x97,
  READONLY_BUFFER = 0x98,
};

/// A new node of kind k, registered with the running parse (pickle_value.cpp) so that reference
/// cycles built by a hostile stream can be broken instead of leaking.
ValuePtr make(Kind k);
ValuePtr make_string(Kind k, std::string s);
/// UTF-8 text of code points < 256 -> latin-1 bytes (Python's str.encode("latin1")).
bool utf8_to_latin1(const std::string& in, std::string& out);
/// Bytes per element of a numeric typestr ("<f8", "i4", "?"), 0 if not one.
size_t dtype_itemsize(std::string typestr);

class Machine {
 public:
  Machine(const uint8_t* data, size_t size, const Limits& limits)
      : data_(data), size_(size), limits_(limits) {}

  ValuePtr run() {
    while (true) {
      if (pos_ >= size_) {
        throw DecodeError("meta: truncated pickle stream at byte " + std::to_string(pos_) +
                          " (no STOP opcode)");
      }
      op_pos_ = pos_;
      op_ = data_[pos_++];
      if (op_ == STOP) {
        if (stack_.empty()) corrupt("STOP with an empty stack");
        return stack_.back();
      }
      step();
      if (stack_.size() > limits_.max_stack)
        corrupt("stack exceeds " + std::to_string(limits_.max_stack) + " entries");
    }
  }

 private:
  [[noreturn]] void corrupt(const std::string& what) const {
    throw DecodeError("meta: corrupt pickle stream at byte " + std::to_string(op_pos_) + " (opcode " +
                      opcode_name(op_) + "): " + what);
  }
  [[noreturn]] void truncated() const {
    throw DecodeError("meta: truncated pickle stream at byte " + std::to_string(op_pos_) + " (opcode " +
                      opcode_name(op_) + ")");
  }
  [[noreturn]] void unsupported(const std::string& why) const {
    throw DecodeError("meta: pickle opcode 0x" + hex(op_) + " (" + opcode_name(op_) +
                      ") not supported at byte " + std::to_string(op_pos_) + ": " + why);
  }
  static std::string hex(uint8_t b) {
    const char* digits = "0123456789abcdef";
    return {digits[b >> 4], digits[b & 15]};
  }

  const uint8_t* take(uint64_t n) {
    if (n > size_ - pos_) truncated();
    const uint8_t* p = data_ + pos_;
    pos_ += static_cast<size_t>(n);
    return p;
  }
  uint64_t read_le(int bytes) {
    const uint8_t* p = take(static_cast<uint64_t>(bytes));
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
    return v;
  }
  std::string read_bytes(uint64_t n) {
    const uint8_t* p = take(n);
    return std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
  }
  std::string read_line() {
    const size_t start = pos_;
    while (pos_ < size_ && data_[pos_] != '\n') ++pos_;
    if (pos_ >= size_) truncated();
    std::string line(reinterpret_cast<const char*>(data_ + start), pos_ - start);
    ++pos_;
    return line;
  }

  ValuePtr pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) {
      corrupt("stack underflow");
    }
    ValuePtr v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  ValuePtr& top() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) {
      corrupt("stack underflow");
    }
    return stack_.back();
  }
  void push(ValuePtr v) { stack_.push_back(std::move(v)); }
  // Everything above the last mark, removing the mark.
  std::vector<ValuePtr> pop_mark() {
    if (marks_.empty()) corrupt("no MARK on the stack");
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<ValuePtr> items(std::make_move_iterator(stack_.begin() + static_cast<ptrdiff_t>(m)),
                                std::make_move_iterator(stack_.end()));
    stack_.resize(m);
    return items;
  }

  void memo_put(uint64_t index, const ValuePtr& v) {
    if (memo_.size() >= limits_.max_memo && memo_.find(index) == memo_.end()) {
      corrupt("memo exceeds " + std::to_string(limits_.max_memo) + " entries");
    }
    memo_[index] = v;
  }
  ValuePtr memo_get(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) corrupt("memo index " + std::to_string(index) + " was never stored");
    return it->second;
  }

  static std::string fix_module(std::string module) {
    // Python 2 names (pickle's fix_imports) and the narf -> wums rename (docs/input-reader.md "The meta
    // pickle").
    if (module == "__builtin__") return "builtins";
    if (module == "copy_reg") return "copyreg";
    if (module == "narf.ioutils") return "wums.ioutils";
    return module;
  }
  ValuePtr make_global(std::string module, std::string name) {
    auto v = make(Kind::global);
    v->text = fix_module(std::move(module));
    v->name = std::move(name);
    return v;
  }

  static ValuePtr integer(int64_t i) {
    auto v = make(Kind::integer);
    v->integer = i;
    return v;
  }

  ValuePtr decode_long(const uint8_t* p, uint64_t n) {
    auto v = make(Kind::integer);
    if (n == 0) return v;
    const bool negative = (p[n - 1] & 0x80) != 0;
    // Fits in int64 when every byte beyond the 8th is pure sign extension.
    bool fits = true;
    for (uint64_t i = 8; i < n; ++i) fits = fits && p[i] == (negative ? 0xFF : 0x00);
    if (n >= 8 && n > 8) fits = fits && (((p[7] & 0x80) != 0) == negative);
    if (!fits) {
      v->big_integer = true;
      v->text.assign(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
      return v;
    }
    uint64_t u = negative ? ~uint64_t{0} : 0;
    const uint64_t m = std::min<uint64_t>(n, 8);
    for (uint64_t i = 0; i < m; ++i) {
      u &= ~(uint64_t{0xFF} << (8 * i));
      u |= uint64_t{p[i]} << (8 * i);
    }
    v->integer = static_cast<int64_t>(u);
    return v;
  }

  void check_items(size_t n) {
    if (n > limits_.max_container_items) corrupt("container too large");
  }

  // Known callables, interpreted as data (pickle_known_callables.cpp).
  ValuePtr reduce(const ValuePtr& callable, const ValuePtr& args);
  ValuePtr newobj(const ValuePtr& cls, const ValuePtr& args);
  void build(ValuePtr& target, const ValuePtr& state);

  // One opcode and the container updates it makes (pickle_machine.cpp).
  void step();
  void append_items(ValuePtr& target, std::vector<ValuePtr> items);
  void set_items(ValuePtr& target, std::vector<ValuePtr> kv);

  const uint8_t* data_;
  size_t size_;
  Limits limits_;
  size_t pos_ = 0;
  size_t op_pos_ = 0;
  uint8_t op_ = 0;
  std::vector<ValuePtr> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, ValuePtr> memo_;
};

}  // namespace rabbit::pickle::detail
