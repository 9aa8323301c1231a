// Known callables of the non-executing pickle reader (docs/input-reader.md "The meta pickle"):
// REDUCE, NEWOBJ and BUILD of a few whitelisted globals (numpy arrays, dtypes and scalars,
// _codecs.encode, bytearray, OrderedDict, set/frozenset, copyreg._reconstructor) become data
// nodes; every other callable stays an opaque object node with its class, args and state.
#include "pickle_machine.hpp"

namespace rabbit::pickle::detail {
namespace {

bool is_numpy_module(const std::string& module, const char* sub) {
  return module == std::string("numpy.core.") + sub || module == std::string("numpy._core.") + sub;
}

}  // namespace

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

// REDUCE of a callable on args: data-only interpretation of a few known callables.
ValuePtr Machine::reduce(const ValuePtr& callable, const ValuePtr& args) {
  if (callable->is(Kind::global)) {
    const std::string& module = callable->text;
    const std::string& name = callable->name;
    const bool tuple_args = args->is(Kind::tuple);
    const auto& a = args->items;
    if (is_numpy_module(module, "numeric") && name == "_frombuffer" && tuple_args && a.size() == 4) {
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
    if (module == "_codecs" && name == "encode" && tuple_args && !a.empty() && a[0]->is(Kind::string)) {
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

ValuePtr Machine::newobj(const ValuePtr& cls, const ValuePtr& args) {
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

void Machine::build(ValuePtr& target, const ValuePtr& state) {
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
}  // namespace rabbit::pickle::detail
