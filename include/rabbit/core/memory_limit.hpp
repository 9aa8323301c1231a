#pragma once
// How much memory this process may still allocate, and the one-line refusal when an allocation
// would exceed it (docs/architecture.md "Termination, temporary files and memory"). The limit is
// the least of: the address-space limit (RLIMIT_AS, `ulimit -v`) less the address space in use;
// the memory limit of the process's cgroup and its ancestors (v2 memory.max, v1
// memory.limit_in_bytes: a slurm job's --mem) less what the cgroup uses beyond reclaimable page
// cache; the system's MemAvailable.
#include <string>

namespace rabbit::memory {

struct Headroom {
  double bytes = 0.0;  // 0 when nothing is known
  std::string source;  // which limit, as a phrase: "the address-space limit (ulimit -v, 2.00 GiB)"
};

/// The headroom of the cgroup named in `proc_self_cgroup` (the text of /proc/self/cgroup) under
/// the cgroup mounts `v2_root` (cgroup2) and `v1_memory_root` (v1 memory controller); a path that
/// does not exist there (a container's own namespace) is looked up from the root instead.
Headroom cgroup_headroom(const std::string& proc_self_cgroup, const std::string& v2_root,
                         const std::string& v1_memory_root);

/// The least of the three limits above for this process.
Headroom available();

/// `bytes` in GiB with two decimals ("1.50 GiB").
std::string gib(double bytes);

/// Throws ResourceError "<what> needs about X GiB but only Y GiB are available under SOURCE" when
/// `bytes` exceed available().
void require(double bytes, const std::string& what);

/// Names what the run is allocating while alive, for the message of a std::bad_alloc. Scopes
/// nest; the innermost names the allocation. Main catches the exception after the scopes have
/// been unwound, so the innermost scope that an exception leaves records its text for
/// what_is_allocated(); a new scope forgets that record.
class AllocationScope {
 public:
  explicit AllocationScope(std::string what);
  ~AllocationScope();
  AllocationScope(const AllocationScope&) = delete;
  AllocationScope& operator=(const AllocationScope&) = delete;

 private:
  std::string previous_;
  int uncaught_at_start_;
};

/// The innermost live AllocationScope's text; outside any, the text of the innermost scope the
/// last exception left; "" if neither.
std::string what_is_allocated();

/// The one-line message for a std::bad_alloc: what was allocated and the headroom left.
std::string out_of_memory_message();

}  // namespace rabbit::memory
