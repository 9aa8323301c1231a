// The thread count of this process from its CPU affinity and cgroup CPU quota (rabbit/core/cpu_budget.hpp).
#include "rabbit/core/cpu_budget.hpp"

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "cgroup_dirs.hpp"

namespace rabbit::cpus {
namespace {

namespace fs = std::filesystem;

// A positive number from the first word of `text`; false for "max", -1 (v1: no quota) or garbage.
bool positive_number(const std::string& text, double& value) {
  try {
    size_t used = 0;
    value = std::stod(text, &used);
    return used > 0 && value > 0.0 && std::isfinite(value);
  } catch (const std::exception&) {
    return false;
  }
}

std::string first_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

// CPUs allowed by one cgroup directory: v2 "cpu.max" holds "QUOTA PERIOD" or "max PERIOD"; v1 holds
// cpu.cfs_quota_us (-1: none) and cpu.cfs_period_us. 0 when no quota is set there.
double quota_of(const fs::path& dir, bool v2) {
  double quota = 0, period = 0;
  if (v2) {
    std::istringstream words(first_line(dir / "cpu.max"));
    std::string q, p;
    if (!(words >> q >> p) || !positive_number(q, quota) || !positive_number(p, period)) return 0.0;
  } else if (!positive_number(first_line(dir / "cpu.cfs_quota_us"), quota) ||
             !positive_number(first_line(dir / "cpu.cfs_period_us"), period)) {
    return 0.0;
  }
  return quota / period;
}

}  // namespace

double cgroup_cpu_quota(const std::string& proc_self_cgroup, const std::string& v2_root,
                        const std::string& v1_cpu_root, std::string* where) {
  double least = 0.0;
  for (const auto& [dir, v2] : cgroups::controller_dirs(proc_self_cgroup, "cpu", v2_root, v1_cpu_root)) {
    const double q = quota_of(dir, v2);
    if (q > 0.0 && (least == 0.0 || q < least)) {
      least = q;
      if (where) *where = (dir / (v2 ? "cpu.max" : "cpu.cfs_quota_us")).string();
    }
  }
  return least;
}

int affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  return CPU_COUNT(&set);
}

Budget detect() {
  Budget b;
  const int affinity = affinity_cpus();
  if (affinity > 0) {
    b.threads = affinity;
    b.source = fmt::format("{} CPU(s) in the affinity mask", affinity);
  } else {
    b.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    b.source = fmt::format("{} online CPU(s)", b.threads);
  }
  std::ifstream f("/proc/self/cgroup");
  std::stringstream text;
  text << f.rdbuf();
  std::string where;
  // v1 mounts the cpu controller as cpu,cpuacct (a link named cpu points there on most systems)
  const double quota = cgroup_cpu_quota(text.str(), "/sys/fs/cgroup", "/sys/fs/cgroup/cpu", &where);
  if (quota > 0.0) {
    const int by_quota = std::max(1, static_cast<int>(std::ceil(quota - 1e-9)));
    if (by_quota < b.threads) {
      b.threads = by_quota;
      b.source = fmt::format("the CPU quota {:g} of {}", quota, where);
    }
  }
  b.threads = std::max(1, b.threads);
  return b;
}

}  // namespace rabbit::cpus
