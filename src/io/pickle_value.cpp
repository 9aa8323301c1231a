// The value tree of the non-executing pickle reader (docs/input-reader.md "The meta pickle"):
// node creation, the iterative destructor, describe/get, and parse(), which runs the machine
// and then refuses self-referencing trees and breaks the garbage a hostile stream may leave.
#include "pickle_machine.hpp"

namespace rabbit::pickle {
namespace {

// Every node created by the running parse (weakly), so that reference cycles built by a hostile
// stream can be broken instead of leaking.
thread_local std::vector<std::weak_ptr<Value>>* g_created = nullptr;

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

}  // namespace

namespace detail {

ValuePtr make(Kind k) {
  auto v = std::make_shared<Value>();
  v->kind = k;
  if (g_created != nullptr) g_created->push_back(v);
  return v;
}

ValuePtr make_string(Kind k, std::string s) {
  auto v = make(k);
  v->text = std::move(s);
  return v;
}

}  // namespace detail

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
    case Kind::none:
      return "None";
    case Kind::boolean:
      return "bool";
    case Kind::integer:
      return "int";
    case Kind::floating:
      return "float";
    case Kind::string:
      return "str";
    case Kind::bytes:
      return "bytes";
    case Kind::list:
      return "list";
    case Kind::tuple:
      return "tuple";
    case Kind::dict:
      return "dict";
    case Kind::set:
      return "set";
    case Kind::global:
      return "global " + qualified_name();
    case Kind::object:
      return "object " + (cls && cls->kind == Kind::global ? cls->qualified_name() : std::string("?"));
    case Kind::persistent_ref:
      return "persistent reference";
    case Kind::ndarray:
      return "numpy array";
    case Kind::dtype:
      return "numpy dtype";
    case Kind::mark_sentinel:
      return "mark";
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
    detail::Machine machine(data, size, limits);
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

}  // namespace rabbit::pickle
