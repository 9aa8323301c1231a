// Protocol-5 pickle emitter for the meta group; see pickle_writer.hpp and docs/input-reader.md "Per axis",
// docs/tensor-writer.md "The meta pickle bytes".
#include "rabbit/io/pickle_writer.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "rabbit/core/error.hpp"
#include "rabbit/io/pickle.hpp"

namespace rabbit::pickle {
namespace {
// Opcodes (CPython Lib/pickle.py names).
constexpr uint8_t PROTO = 0x80, STOP = '.', NONE = 'N', NEWTRUE = 0x88, NEWFALSE = 0x89;
constexpr uint8_t BININT = 'J', BININT1 = 'K', BININT2 = 'M', LONG1 = 0x8a, BINFLOAT = 'G';
constexpr uint8_t SHORT_BINUNICODE = 0x8c, BINUNICODE = 'X', BYTEARRAY8 = 0x96;
constexpr uint8_t STACK_GLOBAL = 0x93, MARK = '(', TUPLE = 't', EMPTY_TUPLE = ')';
constexpr uint8_t EMPTY_DICT = '}', EMPTY_LIST = ']', SETITEMS = 'u', SETITEM = 's', APPENDS = 'e';
constexpr uint8_t NEWOBJ = 0x81, REDUCE = 'R', BUILD = 'b';
constexpr uint8_t SHORT_BINBYTES = 'C', BINBYTES = 'B', BINBYTES8 = 0x8e, BINPERSID = 'Q';
constexpr uint8_t MEMOIZE = 0x94, BINGET = 'h', LONG_BINGET = 'j';

template <typename T>
void append_le(std::vector<uint8_t>& out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}
}  // namespace

PickleWriter::PickleWriter() {
  op(PROTO);
  op(5);
}

void PickleWriter::raw(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  out_.insert(out_.end(), p, p + size);
}

void PickleWriter::none() {
  op(NONE);
}
void PickleWriter::boolean(bool value) {
  op(value ? NEWTRUE : NEWFALSE);
}

void PickleWriter::integer(int64_t value) {
  if (value >= 0 && value < 256) {
    op(BININT1);
    op(static_cast<uint8_t>(value));
  } else if (value >= 0 && value < 65536) {
    op(BININT2);
    append_le(out_, static_cast<uint16_t>(value));
  } else if (value >= std::numeric_limits<int32_t>::min() && value <= std::numeric_limits<int32_t>::max()) {
    op(BININT);
    append_le(out_, static_cast<uint32_t>(static_cast<int32_t>(value)));
  } else {
    // LONG1 with 8 two's-complement bytes (CPython would use the minimal length; both load).
    op(LONG1);
    op(8);
    append_le(out_, static_cast<uint64_t>(value));
  }
}

void PickleWriter::real(double value) {
  op(BINFLOAT);
  const auto bits = std::bit_cast<uint64_t>(value);
  for (int i = 7; i >= 0; --i) out_.push_back(static_cast<uint8_t>(bits >> (8 * i)));
}

void PickleWriter::string(const std::string& utf8) {
  if (utf8.size() < 256) {
    op(SHORT_BINUNICODE);
    op(static_cast<uint8_t>(utf8.size()));
  } else {
    if (utf8.size() > std::numeric_limits<uint32_t>::max())
      throw Error("pickle writer: string too long (" + std::to_string(utf8.size()) + " bytes)");
    op(BINUNICODE);
    append_le(out_, static_cast<uint32_t>(utf8.size()));
  }
  raw(utf8.data(), utf8.size());
}

void PickleWriter::bytearray(const uint8_t* data, size_t size) {
  op(BYTEARRAY8);
  append_le(out_, static_cast<uint64_t>(size));
  raw(data, size);
}

void PickleWriter::bytes(const void* data, size_t size) {
  if (size < 256) {
    op(SHORT_BINBYTES);
    op(static_cast<uint8_t>(size));
  } else if (size <= std::numeric_limits<uint32_t>::max()) {
    op(BINBYTES);
    append_le(out_, static_cast<uint32_t>(size));
  } else {
    op(BINBYTES8);
    append_le(out_, static_cast<uint64_t>(size));
  }
  raw(data, size);
}

void PickleWriter::persistent_id() {
  op(BINPERSID);
}

uint32_t PickleWriter::memoize() {
  op(MEMOIZE);
  return memo_size_++;
}

void PickleWriter::get(uint32_t memo_index) {
  if (memo_index < 256) {
    op(BINGET);
    op(static_cast<uint8_t>(memo_index));
  } else {
    op(LONG_BINGET);
    append_le(out_, memo_index);
  }
}

void PickleWriter::global(const std::string& module, const std::string& name) {
  string(module);
  string(name);
  op(STACK_GLOBAL);
}

void PickleWriter::mark() {
  op(MARK);
}
void PickleWriter::tuple_from_mark() {
  op(TUPLE);
}
void PickleWriter::empty_tuple() {
  op(EMPTY_TUPLE);
}
void PickleWriter::empty_dict() {
  op(EMPTY_DICT);
}
void PickleWriter::empty_list() {
  op(EMPTY_LIST);
}
void PickleWriter::setitems_from_mark() {
  op(SETITEMS);
}
void PickleWriter::appends_from_mark() {
  op(APPENDS);
}
void PickleWriter::setitem() {
  op(SETITEM);
}
void PickleWriter::newobj() {
  op(NEWOBJ);
}
void PickleWriter::reduce() {
  op(REDUCE);
}
void PickleWriter::build() {
  op(BUILD);
}

void PickleWriter::ndarray_1d(const std::string& typestr, const void* data, size_t itemsize, size_t count) {
  static_assert(std::endian::native == std::endian::little, "pickle writer assumes little endian");
  global("numpy.core.numeric", "_frombuffer");
  mark();
  bytearray(static_cast<const uint8_t*>(data), itemsize * count);
  // dtype: numpy.dtype(typestr, False, True) then BUILD (3, '<', None, None, None, -1, -1, 0)
  global("numpy", "dtype");
  mark();
  string(typestr);
  boolean(false);
  boolean(true);
  tuple_from_mark();
  reduce();
  mark();
  integer(3);
  string(itemsize == 1 ? "|" : "<");
  none();
  none();
  none();
  integer(-1);
  integer(-1);
  integer(0);
  tuple_from_mark();
  build();
  mark();  // shape (count,)
  integer(static_cast<int64_t>(count));
  tuple_from_mark();
  string("C");
  tuple_from_mark();
  reduce();
}

void PickleWriter::ndarray_1d_frombuffer(const std::string& typestr, const void* data, size_t itemsize,
                                         size_t count) {
  static_assert(std::endian::native == std::endian::little, "pickle writer assumes little endian");
  global("numpy", "frombuffer");
  mark();
  bytes(data, itemsize * count);
  string((itemsize == 1 ? "|" : "<") + typestr);
  tuple_from_mark();
  reduce();
}

std::vector<uint8_t> PickleWriter::finish() {
  if (!finished_) {
    op(STOP);
    finished_ = true;
  }
  return out_;
}

std::string core_class_for(const AxisInfo& axis) {
  auto flow_suffix = [&](const std::string& base) -> std::string {
    if (axis.circular) {
      if (axis.underflow || axis.growth)
        throw Error("pickle writer: axis '" + axis.name + "': circular " + base +
                    " axes have no underflow and cannot grow");
      return base == "integer" ? "integer_circular" : base + "_circular";
    }
    if (axis.growth) {
      if (base == "integer") {
        if (axis.underflow || axis.overflow)
          throw Error("pickle writer: axis '" + axis.name + "': growing integer axes have no flow bins");
        return "integer_growth";
      }
      if (!(axis.underflow && axis.overflow))
        throw Error("pickle writer: axis '" + axis.name + "': growing " + base + " axes need both flow bins");
      return base + "_uoflow_growth";
    }
    if (axis.underflow && axis.overflow) return base + "_uoflow";
    if (axis.underflow) return base + "_uflow";
    if (axis.overflow) return base + "_oflow";
    return base + "_none";
  };
  if (axis.kind == "regular" || axis.kind == "variable" || axis.kind == "integer")
    return flow_suffix(axis.kind);
  if (axis.kind == "category_str" || axis.kind == "category_int") {
    if (axis.underflow || axis.circular)
      throw Error("pickle writer: axis '" + axis.name + "': category axes have no underflow");
    if (axis.growth) {
      if (axis.overflow)
        throw Error("pickle writer: axis '" + axis.name + "': growing category axes have no overflow");
      return axis.kind + "_growth";
    }
    return axis.overflow ? axis.kind : axis.kind + "_none";
  }
  if (axis.kind == "boolean") {
    if (axis.underflow || axis.overflow || axis.growth || axis.circular)
      throw Error("pickle writer: axis '" + axis.name + "': boolean axes have no flow bins");
    return "boolean";
  }
  throw Error("pickle writer: axis '" + axis.name + "' of kind '" + axis.kind + "' cannot be pickled");
}

namespace {
std::string wrapper_class_for(const AxisInfo& axis) {
  if (axis.kind == "regular") return "Regular";
  if (axis.kind == "variable") return "Variable";
  if (axis.kind == "integer") return "Integer";
  if (axis.kind == "category_str") return "StrCategory";
  if (axis.kind == "category_int") return "IntCategory";
  if (axis.kind == "boolean") return "Boolean";
  throw Error("pickle writer: axis '" + axis.name + "' of kind '" + axis.kind + "' cannot be pickled");
}

// hist keeps name and label in the axis __dict__, which is the core's metadata.
void write_axis_metadata(PickleWriter& w, const AxisInfo& axis) {
  w.empty_dict();
  w.mark();
  w.string("name");
  w.string(axis.name);
  w.string("label");
  w.string(axis.label);
  w.setitems_from_mark();
}

void check_edges(const AxisInfo& axis, size_t expected) {
  if (axis.edges.size() != expected)
    throw Error("pickle writer: axis '" + axis.name + "' has " + std::to_string(axis.edges.size()) +
                " edges, expected " + std::to_string(expected));
}
}  // namespace

void write_axis(PickleWriter& w, const AxisInfo& axis, ArrayEncoding arrays) {
  auto ndarray = [&](const std::string& typestr, const void* data, size_t itemsize, size_t count) {
    if (arrays == ArrayEncoding::numpy_frombuffer)
      w.ndarray_1d_frombuffer(typestr, data, itemsize, count);
    else
      w.ndarray_1d(typestr, data, itemsize, count);
  };
  const std::string core = core_class_for(axis);
  w.global("hist.axis", wrapper_class_for(axis));
  w.empty_tuple();
  w.newobj();
  w.empty_dict();
  w.string("_ax");
  w.global("boost_histogram._core.axis", core);
  w.empty_tuple();
  w.newobj();
  w.mark();
  w.integer(0);  // class version
  if (axis.kind == "regular") {
    check_edges(axis, static_cast<size_t>(axis.size) + 1);
    w.integer(0);  // version of the identity transform
    w.integer(axis.size);
    write_axis_metadata(w, axis);
    w.real(axis.edges.front());
    w.real(axis.edges.back() - axis.edges.front());
  } else if (axis.kind == "variable") {
    check_edges(axis, static_cast<size_t>(axis.size) + 1);
    ndarray("f8", axis.edges.data(), sizeof(double), axis.edges.size());
    write_axis_metadata(w, axis);
  } else if (axis.kind == "integer") {
    check_edges(axis, static_cast<size_t>(axis.size) + 1);
    w.integer(axis.size);
    write_axis_metadata(w, axis);
    w.integer(static_cast<int64_t>(std::llround(axis.edges.front())));
  } else if (axis.kind == "boolean") {
    w.integer(2);
    write_axis_metadata(w, axis);
    w.integer(0);
  } else if (axis.kind == "category_int") {
    std::vector<int32_t> values;
    for (int64_t v : axis.categories_int) {
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
        throw Error("pickle writer: axis '" + axis.name + "': category " + std::to_string(v) +
                    " does not fit boost-histogram's 32-bit int categories");
      values.push_back(static_cast<int32_t>(v));
    }
    ndarray("i4", values.data(), sizeof(int32_t), values.size());
    write_axis_metadata(w, axis);
  } else {  // category_str
    w.integer(static_cast<int64_t>(axis.categories_str.size()));
    for (const auto& s : axis.categories_str) w.string(s);
    write_axis_metadata(w, axis);
  }
  w.tuple_from_mark();
  w.build();    // core.__setstate__(state tuple)
  w.setitem();  // {"_ax": core}
  w.build();    // wrapper.__dict__.update(...)
}

void h5_object_reference(PickleWriter& w, const std::string& path) {
  // H5Path is a plain class: copyreg's protocol-2 form, NEWOBJ then BUILD with its __dict__.
  w.global("wums.ioutils", "H5Path");
  w.empty_tuple();
  w.newobj();
  w.empty_dict();
  w.string("path");
  w.string(path);
  w.setitem();
  w.build();
  w.persistent_id();
}

void h5_pickle_proxy(PickleWriter& w, const std::string& group_path) {
  w.global("wums.ioutils", "H5PickleProxy");
  w.mark();
  w.none();
  h5_object_reference(w, group_path);
  w.tuple_from_mark();
  w.reduce();
}

void h5_buffer(PickleWriter& w, const std::string& dataset_path) {
  w.global("wums.ioutils", "H5Buffer");
  w.mark();
  w.none();
  h5_object_reference(w, dataset_path);
  w.boolean(false);  // not read-only: make_Hist reads it into the histogram's own view
  w.tuple_from_mark();
  w.reduce();
}

std::vector<uint8_t> make_meta_pickle(const std::vector<ChannelInfo>& channels, bool symmetric_tensor,
                                      SystematicType systematic_type,
                                      const std::vector<std::pair<std::string, std::string>>& meta_info) {
  PickleWriter w;
  w.empty_dict();
  w.mark();
  w.string("channel_info");
  w.empty_dict();
  if (!channels.empty()) {
    w.mark();
    for (const auto& ch : channels) {
      w.string(ch.name);
      w.empty_dict();
      w.mark();
      w.string("axes");
      w.empty_list();
      if (!ch.axes.empty()) {
        w.mark();
        for (const auto& ax : ch.axes) write_axis(w, ax);
        w.appends_from_mark();
      }
      w.string("masked");
      w.boolean(ch.masked);
      w.string("flow");
      w.boolean(ch.flow);
      w.setitems_from_mark();
    }
    w.setitems_from_mark();
  }
  w.string("symmetric_tensor");
  w.boolean(symmetric_tensor);
  w.string("systematic_type");
  w.string(systematic_type == SystematicType::normal ? "normal" : "log_normal");
  w.string("meta_info");
  w.empty_dict();
  if (!meta_info.empty()) {
    w.mark();
    for (const auto& [key, value] : meta_info) {
      w.string(key);
      w.string(value);
    }
    w.setitems_from_mark();
  }
  w.setitems_from_mark();
  return w.finish();
}

namespace {
// True if the object tree holds a persistent id: pickle.loads has no resolver for one.
bool holds_persistent_id(const Value& root) {
  std::vector<const Value*> pending{&root};
  while (!pending.empty()) {
    const Value* v = pending.back();
    pending.pop_back();
    if (v->is(Kind::persistent_ref)) return true;
    for (const auto& i : v->items) pending.push_back(i.get());
    for (const auto& [k, x] : v->dict_items) {
      pending.push_back(k.get());
      pending.push_back(x.get());
    }
    for (const ValuePtr* p : {&v->cls, &v->args, &v->state, &v->dtype})
      if (*p) pending.push_back(p->get());
  }
  return false;
}
}  // namespace

std::vector<uint8_t> input_meta_for_output(const FitInputData& input) {
  if (!input.meta_pickle.empty()) {
    try {
      if (!holds_persistent_id(*parse(input.meta_pickle))) return input.meta_pickle;
    } catch (const DecodeError&) {
      // Not decodable here (the reader fell back to the no-meta defaults): rebuild it below.
    }
  }
  return make_meta_pickle(input.channels, input.symmetric_tensor, input.systematic_type, {});
}

}  // namespace rabbit::pickle
