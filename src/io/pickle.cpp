// Non-executing pickle reader (see pickle.hpp). Follows the opcode semantics of CPython's
// pickle module (Lib/pickle.py, _Unpickler), restricted to data construction.
#include "rabbit/io/pickle.hpp"

#include <bit>
#include <cstring>
#include <unordered_map>

namespace rabbit::pickle {
namespace {

enum Op : uint8_t {
  MARK = '(', STOP = '.', POP = '0', POP_MARK = '1', DUP = '2', FLOAT = 'F', INT = 'I',
  BININT = 'J', BININT1 = 'K', LONG = 'L', BININT2 = 'M', NONE = 'N', PERSID = 'P',
  BINPERSID = 'Q', REDUCE = 'R', STRING = 'S', BINSTRING = 'T', SHORT_BINSTRING = 'U',
  UNICODE = 'V', BINUNICODE = 'X', APPEND = 'a', BUILD = 'b', GLOBAL = 'c', DICT = 'd',
  EMPTY_DICT = '}', APPENDS = 'e', GET = 'g', BINGET = 'h', INST = 'i', LONG_BINGET = 'j',
  LIST = 'l', EMPTY_LIST = ']', OBJ = 'o', PUT = 'p', BINPUT = 'q', LONG_BINPUT = 'r',
  SETITEM = 's', TUPLE = 't', EMPTY_TUPLE = ')', SETITEMS = 'u', BINFLOAT = 'G',
  PROTO = 0x80, NEWOBJ = 0x81, EXT1 = 0x82, EXT2 = 0x83, EXT4 = 0x84, TUPLE1 = 0x85,
  TUPLE2 = 0x86, TUPLE3 = 0x87, NEWTRUE = 0x88, NEWFALSE = 0x89, LONG1 = 0x8a, LONG4 = 0x8b,
  BINBYTES = 'B', SHORT_BINBYTES = 'C', SHORT_BINUNICODE = 0x8c, BINUNICODE8 = 0x8d,
  BINBYTES8 = 0x8e, EMPTY_SET = 0x8f, ADDITEMS = 0x90, FROZENSET = 0x91, NEWOBJ_EX = 0x92,
  STACK_GLOBAL = 0x93, MEMOIZE = 0x94, FRAME = 0x95, BYTEARRAY8 = 0x96, NEXT_BUFFER = 0x97,
  READONLY_BUFFER = 0x98,
};

// Every node created by the running parse (weakly), so that reference cycles built by a hostile
// stream can be broken instead of leaking.
thread_local std::vector<std::weak_ptr<Value>>* g_created = nullptr;

ValuePtr make(Kind k) {
  auto v = std::make_shared<Value>();
  v->kind = k;
  if (g_created != nullptr) g_created->push_back(v);
  return v;
}

template <typename F>
void for_each_child(Value& v, F&& f) {
  for (auto& i : v.items) f(i);
  for (auto& [k, x] : v.dict_items) {
    f(k);
    f(x);
  }
  for (ValuePtr* p : {&v.cls, &v.args, &v.state, &v.dtype}) f(*p);
}

void clear_children(Value& v) {
  std::vector<ValuePtr> dropped;
  for_each_child(v, [&](ValuePtr& c) {
    if (c) dropped.push_back(std::move(c));
  });
  v.items.clear();
  v.dict_items.clear();
}

// True if a node reachable from root can reach itself (iterative three-colour DFS).
bool has_cycle(const ValuePtr& root, std::unordered_map<const Value*, int>& colour) {
  struct Frame {
    Value* node;
    std::vector<Value*> children;
    size_t next = 0;
  };
  auto children_of = [](Value* v) {
    std::vector<Value*> out;
    for_each_child(*v, [&](ValuePtr& c) {
      if (c) out.push_back(c.get());
    });
    return out;
  };
  std::vector<Frame> stack;
  colour[root.get()] = 1;
  stack.push_back({root.get(), children_of(root.get())});
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.next == f.children.size()) {
      colour[f.node] = 2;
      stack.pop_back();
      continue;
    }
    Value* c = f.children[f.next++];
    const int state = colour[c];
    if (state == 1) return true;
    if (state == 0) {
      colour[c] = 1;
      stack.push_back({c, children_of(c)});
    }
  }
  return false;
}

ValuePtr make_string(Kind k, std::string s) {
  auto v = make(k);
  v->text = std::move(s);
  return v;
}

// UTF-8 text of code points < 256 -> latin-1 bytes (Python's str.encode("latin1")).
bool utf8_to_latin1(const std::string& in, std::string& out) {
  out.clear();
  for (size_t i = 0; i < in.size();) {
    const auto c = static_cast<unsigned char>(in[i]);
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else if ((c & 0xE0) == 0xC0 && i + 1 < in.size()) {
      const unsigned cp = ((c & 0x1Fu) << 6) | (static_cast<unsigned char>(in[i + 1]) & 0x3Fu);
      if (cp > 0xFF) return false;
      out += static_cast<char>(cp);
      i += 2;
    } else {
      return false;
    }
  }
  return true;
}

// Bytes per element of a numeric typestr ("<f8", "i4", "?"), 0 if not one.
size_t dtype_itemsize(std::string typestr) {
  if (!typestr.empty() && (typestr[0] == '<' || typestr[0] == '>' || typestr[0] == '|' || typestr[0] == '=')) {
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

bool is_numpy_module(const std::string& module, const char* sub) {
  return module == std::string("numpy.core.") + sub || module == std::string("numpy._core.") + sub;
}

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
      if (stack_.size() > limits_.max_stack) corrupt("stack exceeds " + std::to_string(limits_.max_stack) + " entries");
    }
  }

 private:
  [[noreturn]] void corrupt(const std::string& what) const {
    throw DecodeError("meta: corrupt pickle stream at byte " + std::to_string(op_pos_) +
                      " (opcode " + opcode_name(op_) + "): " + what);
  }
  [[noreturn]] void truncated() const {
    throw DecodeError("meta: truncated pickle stream at byte " + std::to_string(op_pos_) +
                      " (opcode " + opcode_name(op_) + ")");
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
    // Python 2 names (pickle's fix_imports) and the narf -> wums rename (docs/input-reader.md "The meta pickle").
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

  // REDUCE of a callable on args: data-only interpretation of a few known callables.
  ValuePtr reduce(const ValuePtr& callable, const ValuePtr& args) {
    if (callable->is(Kind::global)) {
      const std::string& module = callable->text;
      const std::string& name = callable->name;
      const bool tuple_args = args->is(Kind::tuple);
      const auto& a = args->items;
      if (is_numpy_module(module, "numeric") && name == "_frombuffer" && tuple_args &&
          a.size() == 4) {
        auto arr = make(Kind::ndarray);
        if (!(a[0]->is(Kind::bytes) || a[0]->is(Kind::string))) corrupt("_frombuffer: buffer is not bytes");
        arr->text = a[0]->text;
        arr->dtype = a[1];
        if (!a[2]->is(Kind::tuple)) corrupt("_frombuffer: shape is not a tuple");
        for (const auto& e : a[2]->items) {
          if (!e->is(Kind::integer) || e->integer < 0) corrupt("_frombuffer: bad shape");
          arr->shape.push_back(e->integer);
        }
        arr->fortran_order = a[3]->is(Kind::string) && a[3]->text == "F";
        return arr;
      }
      if (module == "numpy" && name == "frombuffer" && tuple_args && a.size() == 2 && a[0]->is(Kind::bytes) &&
          (a[1]->is(Kind::string) || a[1]->is(Kind::dtype))) {
        // numpy.frombuffer(bytes, dtype): the portable 1-D array form of result files.
        auto arr = make(Kind::ndarray);
        arr->text = a[0]->text;
        if (a[1]->is(Kind::dtype)) {
          arr->dtype = a[1];
        } else {
          arr->dtype = make(Kind::dtype);
          arr->dtype->text = a[1]->text;
        }
        const size_t itemsize = dtype_itemsize(arr->dtype->text);
        if (itemsize == 0 || arr->text.size() % itemsize != 0) corrupt("frombuffer: bad dtype or buffer size");
        arr->shape.push_back(static_cast<int64_t>(arr->text.size() / itemsize));
        return arr;
      }
      if (module == "numpy" && name == "dtype" && tuple_args && !a.empty() && a[0]->is(Kind::string)) {
        auto dt = make(Kind::dtype);
        dt->text = a[0]->text;
        return dt;
      }
      if (is_numpy_module(module, "multiarray") && name == "_reconstruct") {
        return make(Kind::ndarray);  // completed by BUILD
      }
      if (is_numpy_module(module, "multiarray") && name == "scalar" && tuple_args && a.size() == 2 &&
          a[0]->is(Kind::dtype) && (a[1]->is(Kind::bytes) || a[1]->is(Kind::string))) {
        auto arr = make(Kind::ndarray);
        arr->dtype = a[0];
        arr->text = a[1]->text;
        if (a[1]->is(Kind::string)) {
          std::string latin;
          if (utf8_to_latin1(a[1]->text, latin)) arr->text = latin;
        }
        try {
          if (!arr->dtype->text.empty() && arr->dtype->text.back() != '?' &&
              (arr->dtype->text.find('f') != std::string::npos)) {
            auto d = ndarray_to_doubles(*arr);
            if (d.size() == 1) {
              auto f = make(Kind::floating);
              f->floating = d[0];
              return f;
            }
          } else {
            auto d = ndarray_to_ints(*arr);
            if (d.size() == 1) return integer(d[0]);
          }
        } catch (const DecodeError&) {
          // Not a simple numeric scalar: keep it as a 0-d array.
        }
        return arr;
      }
      if (module == "_codecs" && name == "encode" && tuple_args && !a.empty() &&
          a[0]->is(Kind::string)) {
        std::string latin;
        if (!utf8_to_latin1(a[0]->text, latin)) corrupt("_codecs.encode: not latin-1 text");
        return make_string(Kind::bytes, std::move(latin));
      }
      if (module == "builtins" && name == "bytearray" && tuple_args) {
        if (a.empty()) return make(Kind::bytes);
        if (a[0]->is(Kind::bytes)) return make_string(Kind::bytes, a[0]->text);
      }
      if (module == "collections" && name == "OrderedDict" && tuple_args && a.empty()) {
        return make(Kind::dict);
      }
      if (module == "builtins" && (name == "set" || name == "frozenset") && tuple_args) {
        auto s = make(Kind::set);
        if (!a.empty() && (a[0]->is(Kind::list) || a[0]->is(Kind::tuple))) s->items = a[0]->items;
        return s;
      }
      if (module == "copyreg" && name == "_reconstructor" && tuple_args && a.size() == 3) {
        auto obj = make(Kind::object);
        obj->cls = a[0];
        obj->args = make(Kind::tuple);
        obj->name = "reduce";
        return obj;
      }
    }
    auto obj = make(Kind::object);
    obj->cls = callable;
    obj->args = args;
    obj->name = "reduce";
    return obj;
  }

  ValuePtr newobj(const ValuePtr& cls, const ValuePtr& args) {
    if (cls->is(Kind::global)) {
      if (cls->text == "collections" && cls->name == "OrderedDict") return make(Kind::dict);
      if (cls->text == "builtins" && (cls->name == "set" || cls->name == "frozenset")) {
        auto s = make(Kind::set);
        if (args->is(Kind::tuple) && !args->items.empty() &&
            (args->items[0]->is(Kind::list) || args->items[0]->is(Kind::tuple))) {
          s->items = args->items[0]->items;
        }
        return s;
      }
    }
    auto obj = make(Kind::object);
    obj->cls = cls;
    obj->args = args;
    obj->name = "newobj";
    return obj;
  }

  void build(ValuePtr& target, const ValuePtr& state) {
    if (target->is(Kind::ndarray) && state->is(Kind::tuple) && target->dtype == nullptr) {
      // numpy ndarray.__setstate__: (version, shape, dtype, is_fortran, raw)
      const auto& s = state->items;
      if (s.size() < 4) corrupt("ndarray state has " + std::to_string(s.size()) + " items");
      const size_t off = s.size() == 5 ? 1 : 0;
      const auto& shape = s[off];
      if (!shape->is(Kind::tuple)) corrupt("ndarray state: shape is not a tuple");
      target->shape.clear();
      for (const auto& e : shape->items) {
        if (!e->is(Kind::integer) || e->integer < 0) corrupt("ndarray state: bad shape");
        target->shape.push_back(e->integer);
      }
      target->dtype = s[off + 1];
      target->fortran_order = s[off + 2]->is(Kind::boolean) && s[off + 2]->boolean;
      const auto& raw = s[off + 3];
      if (raw->is(Kind::bytes)) {
        target->text = raw->text;
      } else if (raw->is(Kind::string)) {
        if (!utf8_to_latin1(raw->text, target->text)) corrupt("ndarray state: raw data not latin-1");
      } else {
        target->text.clear();  // object arrays (a list of items): keep shape/dtype only
        target->items = raw->items;
      }
      return;
    }
    if (target->is(Kind::dtype)) {
      if (state->is(Kind::tuple) && state->items.size() > 1 && state->items[1]->is(Kind::string) &&
          !state->items[1]->text.empty()) {
        target->byteorder = state->items[1]->text[0];
      }
      return;
    }
    if (target->is(Kind::object)) {
      target->state = state;
      return;
    }
    if (target->is(Kind::dict) && state->is(Kind::dict)) {
      // dict subclasses with a __dict__: merge attribute dict into items is wrong; keep as is.
      return;
    }
    // Anything else: Python would call __setstate__; a data-only reader ignores the state.
  }

  void step() {
    switch (op_) {
      case PROTO: {
        const uint64_t v = read_le(1);
        if (v > 5) unsupported("pickle protocol " + std::to_string(v) + " is newer than 5");
        break;
      }
      case FRAME: {
        const uint64_t n = read_le(8);
        if (n > size_ - pos_) truncated();
        break;  // a read-ahead hint only
      }
      case MARK:
        if (marks_.size() >= limits_.max_marks) corrupt("too many nested MARKs");
        marks_.push_back(stack_.size());
        break;
      case POP:
        if (!marks_.empty() && stack_.size() == marks_.back()) {
          marks_.pop_back();  // CPython: POP of a mark pops the mark
        } else {
          pop();
        }
        break;
      case POP_MARK: pop_mark(); break;
      case DUP: push(top()); break;
      case NONE: push(make(Kind::none)); break;
      case NEWTRUE:
      case NEWFALSE: {
        auto v = make(Kind::boolean);
        v->boolean = op_ == NEWTRUE;
        push(v);
        break;
      }
      case BININT: push(integer(static_cast<int32_t>(static_cast<uint32_t>(read_le(4))))); break;
      case BININT1: push(integer(static_cast<int64_t>(read_le(1)))); break;
      case BININT2: push(integer(static_cast<int64_t>(read_le(2)))); break;
      case LONG1: {
        const uint64_t n = read_le(1);
        push(decode_long(take(n), n));
        break;
      }
      case LONG4: {
        const int64_t n = static_cast<int32_t>(static_cast<uint32_t>(read_le(4)));
        if (n < 0) corrupt("negative LONG4 length");
        push(decode_long(take(static_cast<uint64_t>(n)), static_cast<uint64_t>(n)));
        break;
      }
      case BINFLOAT: {
        const uint8_t* p = take(8);
        uint64_t u = 0;
        for (int i = 0; i < 8; ++i) u = (u << 8) | p[i];  // big-endian
        auto v = make(Kind::floating);
        v->floating = std::bit_cast<double>(u);
        push(v);
        break;
      }
      case SHORT_BINUNICODE: push(make_string(Kind::string, read_bytes(read_le(1)))); break;
      case BINUNICODE: push(make_string(Kind::string, read_bytes(read_le(4)))); break;
      case BINUNICODE8: push(make_string(Kind::string, read_bytes(read_le(8)))); break;
      case SHORT_BINSTRING: push(make_string(Kind::string, read_bytes(read_le(1)))); break;
      case BINSTRING: {
        const int64_t n = static_cast<int32_t>(static_cast<uint32_t>(read_le(4)));
        if (n < 0) corrupt("negative BINSTRING length");
        push(make_string(Kind::string, read_bytes(static_cast<uint64_t>(n))));
        break;
      }
      case SHORT_BINBYTES: push(make_string(Kind::bytes, read_bytes(read_le(1)))); break;
      case BINBYTES: push(make_string(Kind::bytes, read_bytes(read_le(4)))); break;
      case BINBYTES8:
      case BYTEARRAY8: push(make_string(Kind::bytes, read_bytes(read_le(8)))); break;
      case EMPTY_DICT: push(make(Kind::dict)); break;
      case EMPTY_LIST: push(make(Kind::list)); break;
      case EMPTY_TUPLE: push(make(Kind::tuple)); break;
      case EMPTY_SET: push(make(Kind::set)); break;
      case TUPLE1:
      case TUPLE2:
      case TUPLE3: {
        const int n = op_ - TUPLE1 + 1;
        auto t = make(Kind::tuple);
        t->items.resize(static_cast<size_t>(n));
        for (int i = n - 1; i >= 0; --i) t->items[static_cast<size_t>(i)] = pop();
        push(t);
        break;
      }
      case TUPLE: {
        auto t = make(Kind::tuple);
        t->items = pop_mark();
        push(t);
        break;
      }
      case LIST: {
        auto l = make(Kind::list);
        l->items = pop_mark();
        push(l);
        break;
      }
      case DICT: {
        auto items = pop_mark();
        if (items.size() % 2) corrupt("odd number of items for DICT");
        auto d = make(Kind::dict);
        for (size_t i = 0; i < items.size(); i += 2) d->dict_items.emplace_back(items[i], items[i + 1]);
        push(d);
        break;
      }
      case FROZENSET: {
        auto s = make(Kind::set);
        s->items = pop_mark();
        push(s);
        break;
      }
      case APPEND: {
        ValuePtr item = pop();
        ValuePtr& list = top();
        append_items(list, {item});
        break;
      }
      case APPENDS: {
        auto items = pop_mark();
        ValuePtr& list = top();
        append_items(list, std::move(items));
        break;
      }
      case ADDITEMS: {
        auto items = pop_mark();
        ValuePtr& set = top();
        if (!set->is(Kind::set)) corrupt("ADDITEMS on a " + set->describe());
        check_items(set->items.size() + items.size());
        for (auto& i : items) set->items.push_back(std::move(i));
        break;
      }
      case SETITEM: {
        ValuePtr value = pop();
        ValuePtr key = pop();
        set_items(top(), {key, value});
        break;
      }
      case SETITEMS: {
        auto items = pop_mark();
        if (items.size() % 2) corrupt("odd number of items for SETITEMS");
        set_items(top(), std::move(items));
        break;
      }
      case STACK_GLOBAL: {
        ValuePtr name = pop();
        ValuePtr module = pop();
        if (!name->is(Kind::string) || !module->is(Kind::string)) {
          corrupt("STACK_GLOBAL needs two strings");
        }
        push(make_global(module->text, name->text));
        break;
      }
      case GLOBAL: {
        std::string module = read_line();
        std::string name = read_line();
        push(make_global(std::move(module), std::move(name)));
        break;
      }
      case REDUCE: {
        ValuePtr args = pop();
        ValuePtr callable = pop();
        push(reduce(callable, args));
        break;
      }
      case NEWOBJ: {
        ValuePtr args = pop();
        ValuePtr cls = pop();
        push(newobj(cls, args));
        break;
      }
      case NEWOBJ_EX: {
        pop();  // kwargs: not needed by a data-only reader
        ValuePtr args = pop();
        ValuePtr cls = pop();
        push(newobj(cls, args));
        break;
      }
      case BUILD: {
        ValuePtr state = pop();
        build(top(), state);
        break;
      }
      case BINPERSID: {
        auto ref = make(Kind::persistent_ref);
        ref->args = pop();
        push(ref);
        break;
      }
      case MEMOIZE: memo_put(memo_.size(), top()); break;
      case BINPUT: memo_put(read_le(1), top()); break;
      case LONG_BINPUT: memo_put(read_le(4), top()); break;
      case BINGET: push(memo_get(read_le(1))); break;
      case LONG_BINGET: push(memo_get(read_le(4))); break;
      case INT: case LONG: case FLOAT: case STRING: case UNICODE: case GET: case PUT: case INST:
      case OBJ: case PERSID:
        unsupported("text-protocol opcode (protocol 0/1 pickles are not supported)");
      case EXT1: case EXT2: case EXT4: unsupported("extension registry");
      case NEXT_BUFFER: case READONLY_BUFFER: unsupported("out-of-band buffers");
      default: unsupported("unknown opcode");
    }
  }

  void append_items(ValuePtr& target, std::vector<ValuePtr> items) {
    if (target->is(Kind::list) || target->is(Kind::object)) {
      check_items(target->items.size() + items.size());
      for (auto& i : items) target->items.push_back(std::move(i));
      return;
    }
    corrupt("APPEND on a " + target->describe());
  }
  void set_items(ValuePtr& target, std::vector<ValuePtr> kv) {
    if (!(target->is(Kind::dict) || target->is(Kind::object))) {
      corrupt("SETITEM on a " + target->describe());
    }
    check_items(target->dict_items.size() + kv.size() / 2);
    for (size_t i = 0; i + 1 < kv.size(); i += 2) {
      // Python dict semantics: a repeated key replaces the value in place.
      bool replaced = false;
      if (kv[i]->is(Kind::string)) {
        for (auto& [k, v] : target->dict_items) {
          if (k->is(Kind::string) && k->text == kv[i]->text) {
            v = kv[i + 1];
            replaced = true;
            break;
          }
        }
      }
      if (!replaced) target->dict_items.emplace_back(kv[i], kv[i + 1]);
    }
  }

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

Value::~Value() {
  if (items.empty() && dict_items.empty() && !cls && !args && !state && !dtype) return;
  std::vector<ValuePtr> pending;
  auto harvest = [&pending](Value& v) {
    for (auto& i : v.items) pending.push_back(std::move(i));
    for (auto& [k, x] : v.dict_items) {
      pending.push_back(std::move(k));
      pending.push_back(std::move(x));
    }
    v.items.clear();
    v.dict_items.clear();
    for (ValuePtr* p : {&v.cls, &v.args, &v.state, &v.dtype}) {
      if (*p) pending.push_back(std::move(*p));
    }
  };
  harvest(*this);
  while (!pending.empty()) {
    ValuePtr p = std::move(pending.back());
    pending.pop_back();
    if (p && p.use_count() == 1) harvest(*p);
  }
}

const Value* Value::get(std::string_view key) const {
  if (kind != Kind::dict) return nullptr;
  for (const auto& [k, v] : dict_items) {
    if (k && k->kind == Kind::string && k->text == key) return v.get();
  }
  return nullptr;
}

std::string Value::describe() const {
  switch (kind) {
    case Kind::none: return "None";
    case Kind::boolean: return "bool";
    case Kind::integer: return "int";
    case Kind::floating: return "float";
    case Kind::string: return "str";
    case Kind::bytes: return "bytes";
    case Kind::list: return "list";
    case Kind::tuple: return "tuple";
    case Kind::dict: return "dict";
    case Kind::set: return "set";
    case Kind::global: return "global " + qualified_name();
    case Kind::object:
      return "object " + (cls && cls->kind == Kind::global ? cls->qualified_name() : std::string("?"));
    case Kind::persistent_ref: return "persistent reference";
    case Kind::ndarray: return "numpy array";
    case Kind::dtype: return "numpy dtype";
    case Kind::mark_sentinel: return "mark";
  }
  return "?";
}

ValuePtr parse(const uint8_t* data, size_t size, const Limits& limits) {
  std::vector<std::weak_ptr<Value>> created;
  g_created = &created;
  struct Reset {
    ~Reset() { g_created = nullptr; }
  } reset;
  auto break_all = [&created] {
    for (auto& w : created) {
      if (auto p = w.lock()) clear_children(*p);
    }
  };
  ValuePtr root;
  try {
    Machine machine(data, size, limits);
    root = machine.run();
  } catch (...) {
    break_all();
    throw;
  }
  // The machine's stack and memo are gone: only what root reaches (plus cycles) is alive.
  std::unordered_map<const Value*, int> colour;
  if (has_cycle(root, colour)) {
    root.reset();
    break_all();
    throw DecodeError("meta: the pickle holds self-referencing objects (not supported)");
  }
  for (auto& w : created) {
    auto p = w.lock();
    if (p && colour.find(p.get()) == colour.end()) clear_children(*p);  // unreachable garbage
  }
  return root;
}

std::vector<double> ndarray_to_doubles(const Value& array) {
  if (!array.is(Kind::ndarray)) throw DecodeError("meta: expected a numpy array, found " + array.describe());
  return convert<double>(array);
}

std::vector<int64_t> ndarray_to_ints(const Value& array) {
  if (!array.is(Kind::ndarray)) throw DecodeError("meta: expected a numpy array, found " + array.describe());
  return convert<int64_t>(array);
}

std::string opcode_name(uint8_t op) {
  switch (op) {
    case MARK: return "MARK"; case STOP: return "STOP"; case POP: return "POP";
    case POP_MARK: return "POP_MARK"; case DUP: return "DUP"; case FLOAT: return "FLOAT";
    case INT: return "INT"; case BININT: return "BININT"; case BININT1: return "BININT1";
    case LONG: return "LONG"; case BININT2: return "BININT2"; case NONE: return "NONE";
    case PERSID: return "PERSID"; case BINPERSID: return "BINPERSID"; case REDUCE: return "REDUCE";
    case STRING: return "STRING"; case BINSTRING: return "BINSTRING";
    case SHORT_BINSTRING: return "SHORT_BINSTRING"; case UNICODE: return "UNICODE";
    case BINUNICODE: return "BINUNICODE"; case APPEND: return "APPEND"; case BUILD: return "BUILD";
    case GLOBAL: return "GLOBAL"; case DICT: return "DICT"; case EMPTY_DICT: return "EMPTY_DICT";
    case APPENDS: return "APPENDS"; case GET: return "GET"; case BINGET: return "BINGET";
    case INST: return "INST"; case LONG_BINGET: return "LONG_BINGET"; case LIST: return "LIST";
    case EMPTY_LIST: return "EMPTY_LIST"; case OBJ: return "OBJ"; case PUT: return "PUT";
    case BINPUT: return "BINPUT"; case LONG_BINPUT: return "LONG_BINPUT"; case SETITEM: return "SETITEM";
    case TUPLE: return "TUPLE"; case EMPTY_TUPLE: return "EMPTY_TUPLE"; case SETITEMS: return "SETITEMS";
    case BINFLOAT: return "BINFLOAT"; case PROTO: return "PROTO"; case NEWOBJ: return "NEWOBJ";
    case EXT1: return "EXT1"; case EXT2: return "EXT2"; case EXT4: return "EXT4";
    case TUPLE1: return "TUPLE1"; case TUPLE2: return "TUPLE2"; case TUPLE3: return "TUPLE3";
    case NEWTRUE: return "NEWTRUE"; case NEWFALSE: return "NEWFALSE"; case LONG1: return "LONG1";
    case LONG4: return "LONG4"; case BINBYTES: return "BINBYTES"; case SHORT_BINBYTES: return "SHORT_BINBYTES";
    case SHORT_BINUNICODE: return "SHORT_BINUNICODE"; case BINUNICODE8: return "BINUNICODE8";
    case BINBYTES8: return "BINBYTES8"; case EMPTY_SET: return "EMPTY_SET"; case ADDITEMS: return "ADDITEMS";
    case FROZENSET: return "FROZENSET"; case NEWOBJ_EX: return "NEWOBJ_EX";
    case STACK_GLOBAL: return "STACK_GLOBAL"; case MEMOIZE: return "MEMOIZE"; case FRAME: return "FRAME";
    case BYTEARRAY8: return "BYTEARRAY8"; case NEXT_BUFFER: return "NEXT_BUFFER";
    case READONLY_BUFFER: return "READONLY_BUFFER";
    default: {
      const char* digits = "0123456789abcdef";
      return std::string("0x") + digits[op >> 4] + digits[op & 15];
    }
  }
}

}  // namespace rabbit::pickle
