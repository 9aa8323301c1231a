#include "rabbit/fit/cuda_plugin_loader.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <system_error>

#include "rabbit/core/logging.hpp"
#include "rabbit/fit/shard_registry.hpp"

namespace rabbit {
namespace {

namespace fs = std::filesystem;

std::string dl_error() {
  const char* e = dlerror();
  return e ? e : "unknown dlopen error";
}

// The table after the checks of cuda_plugin.hpp; nullptr with *failure otherwise.
const CudaPluginV1* check_table(const std::string& path, const CudaPluginV1* t, std::string* failure) {
  const CudaPluginV1 ours;
  if (!t || t->abi != ours.abi || t->table_size != ours.table_size) {
    *failure = fmt::format("{} is a CUDA plugin of another interface version (ABI {}, here {})", path,
                           t ? t->abi : 0, ours.abi);
  } else if (std::strcmp(t->compiler, ours.compiler) != 0 || t->model_size != ours.model_size ||
             t->input_size != ours.input_size) {
    *failure = fmt::format(
        "{} was built by another build of rabbit (compiler {}, here {}); use the plugin built "
        "with this rabbit_fit",
        path, t->compiler, ours.compiler);
  } else if (t->core_identity() != static_cast<const void*>(&log())) {
    *failure = fmt::format(
        "{} has its own copy of rabbit_core (logger, exception types) instead of the shared "
        "librabbit_core.so of this process",
        path);
  } else {
    return t;
  }
  return nullptr;
}

// dlopen + entry point + checks. The library is never closed: its shards, linear algebra and
// vtables live as long as the fits that use them.
const CudaPluginV1* open_plugin(const std::string& path, std::string* failure) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    *failure = fmt::format("cannot load the CUDA plugin: {}", dl_error());
    return nullptr;
  }
  auto entry = reinterpret_cast<RabbitCudaPluginEntry>(dlsym(handle, kCudaPluginEntryPoint));
  if (!entry) {
    *failure = fmt::format("{} has no {} (not a rabbit CUDA plugin of this version): {}", path,
                           kCudaPluginEntryPoint, dl_error());
    return nullptr;
  }
  return check_table(path, entry(), failure);
}

void register_cuda_kind(const CudaPluginV1& plugin) {
  ShardKind cuda;
  const CudaPluginV1* p = &plugin;
  cuda.create = [p](const ShardSpec& s) { return p->make_shard(s.model, s.bin_begin, s.bin_end, s.device); };
  cuda.dense_linalg = [p](int device) { return p->make_dense_linalg(device); };
  cuda.dense_linalg_name = "cuSOLVER";
  register_shard_kind("cuda", std::move(cuda));
}

struct LoadResult {
  const CudaPluginV1* table = nullptr;
  std::string path;
  std::string failure;
};

LoadResult load() {
  LoadResult r;
  const auto candidates = cuda_plugin_candidates();
  const char* chosen = std::getenv(kCudaPluginVariable);
  if (chosen && *chosen) {
    r.path = chosen;
    r.table = open_plugin(r.path, &r.failure);
  } else {
    std::error_code ec;
    for (const auto& c : candidates) {
      if (!fs::exists(c, ec)) continue;
      r.path = c;
      r.table = open_plugin(c, &r.failure);
      break;  // the first file found is the plugin; a broken one is reported, not skipped
    }
    if (!r.table && r.failure.empty())
      r.failure = fmt::format(
          "cannot load the CUDA plugin: {} is neither next to the executable ({}) nor in {} (set {})",
          kCudaPluginFile, fs::path(candidates.at(0)).parent_path().string(),
          fs::path(candidates.at(1)).parent_path().string(), kCudaPluginVariable);
  }
  if (r.table) register_cuda_kind(*r.table);
  return r;
}

}  // namespace

std::vector<std::string> cuda_plugin_candidates() {
  const char* chosen = std::getenv(kCudaPluginVariable);
  if (chosen && *chosen) return {chosen};
  std::error_code ec;
  fs::path exe_dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  if (ec) exe_dir = fs::current_path(ec);
  return {(exe_dir / kCudaPluginFile).string(),
          (exe_dir / ".." / "lib" / "rabbit" / kCudaPluginFile).lexically_normal().string()};
}

const CudaPluginV1* cuda_plugin(std::string* failure) {
  static std::once_flag once;
  static LoadResult result;
  std::call_once(once, [] {
    result = load();
    if (result.table) log().debug("Loaded the CUDA backend plugin {}", result.path);
  });
  if (!result.table && failure) *failure = result.failure;
  return result.table;
}

bool nvidia_driver_present(std::string* why_not) {
  std::error_code ec;
  for (const char* p : {"/proc/driver/nvidia", "/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg"})
    if (fs::exists(p, ec)) return true;
  for (fs::directory_iterator it("/dev", ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename().string().rfind("nvidia", 0) == 0) return true;
  if (why_not)
    *why_not = "no NVIDIA driver on this machine (no /dev/nvidia*, /proc/driver/nvidia or /dev/dxg)";
  return false;
}

}  // namespace rabbit
