// The opcodes of the non-executing pickle reader (docs/input-reader.md "The meta pickle"):
// one switch over CPython's opcode table, data construction only. Text-protocol opcodes, the
// extension registry and out-of-band buffers are refused with the byte offset and opcode name.
#include "pickle_machine.hpp"

#include <bit>

namespace rabbit::pickle::detail {

void Machine::step() {
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
    case POP_MARK:
      pop_mark();
      break;
    case DUP:
      push(top());
      break;
    case NONE:
      push(make(Kind::none));
      break;
    case NEWTRUE:
    case NEWFALSE: {
      auto v = make(Kind::boolean);
      v->boolean = op_ == NEWTRUE;
      push(v);
      break;
    }
    case BININT:
      push(integer(static_cast<int32_t>(static_cast<uint32_t>(read_le(4)))));
      break;
    case BININT1:
      push(integer(static_cast<int64_t>(read_le(1))));
      break;
    case BININT2:
      push(integer(static_cast<int64_t>(read_le(2))));
      break;
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
    case SHORT_BINUNICODE:
      push(make_string(Kind::string, read_bytes(read_le(1))));
      break;
    case BINUNICODE:
      push(make_string(Kind::string, read_bytes(read_le(4))));
      break;
    case BINUNICODE8:
      push(make_string(Kind::string, read_bytes(read_le(8))));
      break;
    case SHORT_BINSTRING:
      push(make_string(Kind::string, read_bytes(read_le(1))));
      break;
    case BINSTRING: {
      const int64_t n = static_cast<int32_t>(static_cast<uint32_t>(read_le(4)));
      if (n < 0) corrupt("negative BINSTRING length");
      push(make_string(Kind::string, read_bytes(static_cast<uint64_t>(n))));
      break;
    }
    case SHORT_BINBYTES:
      push(make_string(Kind::bytes, read_bytes(read_le(1))));
      break;
    case BINBYTES:
      push(make_string(Kind::bytes, read_bytes(read_le(4))));
      break;
    case BINBYTES8:
    case BYTEARRAY8:
      push(make_string(Kind::bytes, read_bytes(read_le(8))));
      break;
    case EMPTY_DICT:
      push(make(Kind::dict));
      break;
    case EMPTY_LIST:
      push(make(Kind::list));
      break;
    case EMPTY_TUPLE:
      push(make(Kind::tuple));
      break;
    case EMPTY_SET:
      push(make(Kind::set));
      break;
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
    case MEMOIZE:
      memo_put(memo_.size(), top());
      break;
    case BINPUT:
      memo_put(read_le(1), top());
      break;
    case LONG_BINPUT:
      memo_put(read_le(4), top());
      break;
    case BINGET:
      push(memo_get(read_le(1)));
      break;
    case LONG_BINGET:
      push(memo_get(read_le(4)));
      break;
    case INT:
    case LONG:
    case FLOAT:
    case STRING:
    case UNICODE:
    case GET:
    case PUT:
    case INST:
    case OBJ:
    case PERSID:
      unsupported("text-protocol opcode (protocol 0/1 pickles are not supported)");
    case EXT1:
    case EXT2:
    case EXT4:
      unsupported("extension registry");
    case NEXT_BUFFER:
    case READONLY_BUFFER:
      unsupported("out-of-band buffers");
    default:
      unsupported("unknown opcode");
  }
}

void Machine::append_items(ValuePtr& target, std::vector<ValuePtr> items) {
  if (target->is(Kind::list) || target->is(Kind::object)) {
    check_items(target->items.size() + items.size());
    for (auto& i : items) target->items.push_back(std::move(i));
    return;
  }
  corrupt("APPEND on a " + target->describe());
}
void Machine::set_items(ValuePtr& target, std::vector<ValuePtr> kv) {
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

}  // namespace rabbit::pickle::detail

namespace rabbit::pickle {

std::string opcode_name(uint8_t op) {
  using namespace detail;
  switch (op) {
    case MARK:
      return "MARK";
    case STOP:
      return "STOP";
    case POP:
      return "POP";
    case POP_MARK:
      return "POP_MARK";
    case DUP:
      return "DUP";
    case FLOAT:
      return "FLOAT";
    case INT:
      return "INT";
    case BININT:
      return "BININT";
    case BININT1:
      return "BININT1";
    case LONG:
      return "LONG";
    case BININT2:
      return "BININT2";
    case NONE:
      return "NONE";
    case PERSID:
      return "PERSID";
    case BINPERSID:
      return "BINPERSID";
    case REDUCE:
      return "REDUCE";
    case STRING:
      return "STRING";
    case BINSTRING:
      return "BINSTRING";
    case SHORT_BINSTRING:
      return "SHORT_BINSTRING";
    case UNICODE:
      return "UNICODE";
    case BINUNICODE:
      return "BINUNICODE";
    case APPEND:
      return "APPEND";
    case BUILD:
      return "BUILD";
    case GLOBAL:
      return "GLOBAL";
    case DICT:
      return "DICT";
    case EMPTY_DICT:
      return "EMPTY_DICT";
    case APPENDS:
      return "APPENDS";
    case GET:
      return "GET";
    case BINGET:
      return "BINGET";
    case INST:
      return "INST";
    case LONG_BINGET:
      return "LONG_BINGET";
    case LIST:
      return "LIST";
    case EMPTY_LIST:
      return "EMPTY_LIST";
    case OBJ:
      return "OBJ";
    case PUT:
      return "PUT";
    case BINPUT:
      return "BINPUT";
    case LONG_BINPUT:
      return "LONG_BINPUT";
    case SETITEM:
      return "SETITEM";
    case TUPLE:
      return "TUPLE";
    case EMPTY_TUPLE:
      return "EMPTY_TUPLE";
    case SETITEMS:
      return "SETITEMS";
    case BINFLOAT:
      return "BINFLOAT";
    case PROTO:
      return "PROTO";
    case NEWOBJ:
      return "NEWOBJ";
    case EXT1:
      return "EXT1";
    case EXT2:
      return "EXT2";
    case EXT4:
      return "EXT4";
    case TUPLE1:
      return "TUPLE1";
    case TUPLE2:
      return "TUPLE2";
    case TUPLE3:
      return "TUPLE3";
    case NEWTRUE:
      return "NEWTRUE";
    case NEWFALSE:
      return "NEWFALSE";
    case LONG1:
      return "LONG1";
    case LONG4:
      return "LONG4";
    case BINBYTES:
      return "BINBYTES";
    case SHORT_BINBYTES:
      return "SHORT_BINBYTES";
    case SHORT_BINUNICODE:
      return "SHORT_BINUNICODE";
    case BINUNICODE8:
      return "BINUNICODE8";
    case BINBYTES8:
      return "BINBYTES8";
    case EMPTY_SET:
      return "EMPTY_SET";
    case ADDITEMS:
      return "ADDITEMS";
    case FROZENSET:
      return "FROZENSET";
    case NEWOBJ_EX:
      return "NEWOBJ_EX";
    case STACK_GLOBAL:
      return "STACK_GLOBAL";
    case MEMOIZE:
      return "MEMOIZE";
    case FRAME:
      return "FRAME";
    case BYTEARRAY8:
      return "BYTEARRAY8";
    case NEXT_BUFFER:
      return "NEXT_BUFFER";
    case READONLY_BUFFER:
      return "READONLY_BUFFER";
    default: {
      const char* digits = "0123456789abcdef";
      return std::string("0x") + digits[op >> 4] + digits[op & 15];
    }
  }
}

}  // namespace rabbit::pickle
