#include "rabbit/fit/shard_registry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <mutex>

#include "rabbit/backend/cpu/cpu_shard.hpp"
#include "rabbit/core/error.hpp"

namespace rabbit {
namespace {

struct Registry {
  std::mutex mutex;
  // Kinds are held by pointer so that a kind handed out by find_shard_kind does not move when
  // another one is registered.
  std::map<std::string, std::shared_ptr<const ShardKind>> kinds;
};

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry;  // never destroyed: shards built from it may outlive static destruction
    ShardKind cpu;
    cpu.create = [](const ShardSpec& s) {
      return make_cpu_shard(s.model, s.bin_begin, s.bin_end, s.threads);
    };
    reg->kinds["cpu"] = std::make_shared<const ShardKind>(std::move(cpu));
    return reg;
  }();
  return *r;
}

}  // namespace

void register_shard_kind(const std::string& name, ShardKind kind) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.kinds[name] = std::make_shared<const ShardKind>(std::move(kind));
}

const ShardKind* find_shard_kind(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.kinds.find(name);
  return it == r.kinds.end() ? nullptr : it->second.get();
}

const ShardKind& shard_kind(const std::string& name) {
  if (const ShardKind* kind = find_shard_kind(name)) return *kind;
  throw Error(fmt::format("no shard kind '{}' is registered (registered: {})", name,
                          fmt::join(shard_kind_names(), ", ")));
}

std::vector<std::string> shard_kind_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> out;
  for (const auto& [name, kind] : r.kinds) out.push_back(name);
  return out;
}

}  // namespace rabbit
