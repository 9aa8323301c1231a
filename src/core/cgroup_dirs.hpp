#pragma once
// The cgroup directories whose limits apply to this process, for one controller: shared by the CPU
// quota (cpu_budget.cpp) and the memory headroom (memory_limit.cpp). A job's limit may sit on the
// job's cgroup or on any ancestor (slurm puts --mem on the job, --cpus-per-task on the step), so
// every level counts; docs/user-guide.md "Threads" and "Memory".
#include <filesystem>
#include <string>
#include <vector>

namespace rabbit::cgroups {

struct ControllerDir {
  std::filesystem::path dir;
  bool v2 = false;  // the unified hierarchy (cgroup v2) rather than a v1 controller mount
};

/// For `proc_self_cgroup` (the text of /proc/self/cgroup): the directory of this process's cgroup
/// and of each ancestor up to the mount root, under `v2_root` for the unified hierarchy ("0::PATH")
/// and under `v1_root` for the v1 hierarchy that lists `controller` ("N:cpu,cpuacct:PATH"). Only the
/// root when the path is not visible under the mount (a container's cgroup namespace).
std::vector<ControllerDir> controller_dirs(const std::string& proc_self_cgroup, const std::string& controller,
                                           const std::string& v2_root, const std::string& v1_root);

}  // namespace rabbit::cgroups
