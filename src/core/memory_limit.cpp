// The memory headroom of this process (rabbit/core/memory_limit.hpp).
#include "rabbit/core/memory_limit.hpp"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "cgroup_dirs.hpp"
#include "rabbit/core/error.hpp"

namespace rabbit::memory {
namespace {

namespace fs = std::filesystem;

// A limit this large means "no limit" (cgroup v1 writes 2^63 rounded down to a page).
constexpr double kUnlimited = 1152921504606846976.0;  // 2^60

bool read_number(const fs::path& file, double& value) {
  std::ifstream in(file);
  std::string text;
  if (!(in >> text) || text == "max") return false;
  try {
    value = std::stod(text);
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

double stat_entry(const fs::path& file, const std::string& key) {
  std::ifstream in(file);
  std::string k;
  double v = 0;
  while (in >> k >> v)
    if (k == key) return v;
  return 0.0;
}

void keep_least(Headroom& best, double bytes, const std::string& source) {
  if (bytes < 0) bytes = 0;
  if (best.source.empty() || bytes < best.bytes) best = {bytes, source};
}

}  // namespace

Headroom cgroup_headroom(const std::string& proc_self_cgroup, const std::string& v2_root,
                         const std::string& v1_memory_root) {
  Headroom best;
  for (const auto& [dir, v2] :
       cgroups::controller_dirs(proc_self_cgroup, "memory", v2_root, v1_memory_root)) {
    double limit = 0, usage = 0;
    if (v2) {
      if (!read_number(dir / "memory.max", limit) || !read_number(dir / "memory.current", usage)) continue;
      usage -= stat_entry(dir / "memory.stat", "inactive_file");
    } else {
      if (!read_number(dir / "memory.limit_in_bytes", limit) ||
          !read_number(dir / "memory.usage_in_bytes", usage))
        continue;
      usage -= stat_entry(dir / "memory.stat", "total_inactive_file");
    }
    if (limit >= kUnlimited) continue;
    keep_least(best, limit - std::max(usage, 0.0),
               fmt::format("the memory limit of cgroup {} ({})", dir.string(),
                           v2 ? "memory.max" : "memory.limit_in_bytes"));
  }
  return best;
}

Headroom available() {
  Headroom best;
  struct rlimit as {};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    std::ifstream statm("/proc/self/statm");
    double pages = 0;
    statm >> pages;
    keep_least(best, static_cast<double>(as.rlim_cur) - pages * static_cast<double>(sysconf(_SC_PAGESIZE)),
               fmt::format("the address-space limit (ulimit -v, {})", gib(static_cast<double>(as.rlim_cur))));
  }
  {
    std::ifstream f("/proc/self/cgroup");
    std::stringstream text;
    text << f.rdbuf();
    const Headroom cg = cgroup_headroom(text.str(), "/sys/fs/cgroup", "/sys/fs/cgroup/memory");
    if (!cg.source.empty()) keep_least(best, cg.bytes, cg.source);
  }
  {
    std::ifstream f("/proc/meminfo");
    std::string key, unit;
    double kib = 0;
    while (f >> key >> kib >> unit)
      if (key == "MemAvailable:") {
        keep_least(best, kib * 1024.0, "the available system memory (MemAvailable)");
        break;
      }
  }
  return best;
}

std::string gib(double bytes) {
  return fmt::format("{:.2f} GiB", bytes / 1073741824.0);
}

void require(double bytes, const std::string& what) {
  const Headroom h = available();
  if (!h.source.empty() && bytes > h.bytes)
    throw ResourceError(fmt::format("{} needs about {} but only {} are available under {}", what, gib(bytes),
                                    gib(h.bytes), h.source));
}

namespace {
std::string& current_allocation() {
  static std::string what;
  return what;
}
std::string& left_by_exception() {
  static std::string what;
  return what;
}
}  // namespace

AllocationScope::AllocationScope(std::string what)
    : previous_(std::move(what)), uncaught_at_start_(std::uncaught_exceptions()) {
  left_by_exception().clear();
  std::swap(previous_, current_allocation());
}

AllocationScope::~AllocationScope() {
  if (std::uncaught_exceptions() > uncaught_at_start_ && left_by_exception().empty())
    left_by_exception() = current_allocation();
  std::swap(previous_, current_allocation());
}

std::string what_is_allocated() {
  return current_allocation().empty() ? left_by_exception() : current_allocation();
}

std::string out_of_memory_message() {
  const std::string what = what_is_allocated();
  const Headroom h = available();
  return fmt::format(
      "out of memory while allocating {}{}", what.empty() ? "memory" : what,
      h.source.empty() ? std::string() : fmt::format(" ({} left under {})", gib(h.bytes), h.source));
}

}  // namespace rabbit::memory
