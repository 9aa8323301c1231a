#pragma once
// How many CPU threads this process should run (docs/architecture.md "Threads"): the CPUs it may
// run on (sched_getaffinity: taskset, a slurm job's cpuset) and the CPU bandwidth its cgroup and the
// cgroup's ancestors allow (v2 cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us: a container's or a
// slurm job's CPU quota), whichever is fewer. --nThreads overrides both.
#include <cstdint>
#include <string>

namespace rabbit::cpus {

struct Budget {
  int threads = 1;     // at least 1
  std::string source;  // why, as a phrase: "2 CPUs in the affinity mask", "the CPU quota 1.5 of cgroup /x"
};

/// The CPU quota in CPUs (quota / period) of the cgroup named in `proc_self_cgroup` (the text of
/// /proc/self/cgroup) and its ancestors, under the mounts `v2_root` (cgroup2) and `v1_cpu_root` (the
/// v1 cpu controller); the least one found, 0 when none is set. A path not found under the mount
/// (a container's own cgroup namespace) is looked up from the root. `where` gets the limiting file.
double cgroup_cpu_quota(const std::string& proc_self_cgroup, const std::string& v2_root,
                        const std::string& v1_cpu_root, std::string* where = nullptr);

/// CPUs in this process's affinity mask; 0 when it cannot be read.
int affinity_cpus();

/// The thread count from the affinity mask and the cgroup quota (rounded up: a quota of 1.5 CPUs
/// runs 2 threads), at least 1; the online CPU count when neither is known.
Budget detect();

/// `requested` threads (`--nThreads`) when positive, else detect()'s count.
inline int threads_or_detected(int64_t requested) {
  return requested > 0 ? static_cast<int>(requested) : detect().threads;
}

}  // namespace rabbit::cpus
