// The thread count of a run (docs/architecture.md "Threads"): the CPU quota of the process's cgroup
// and its ancestors, read from sample /proc/self/cgroup texts and cgroup trees (v2 cpu.max, v1
// cpu.cfs_quota_us / cpu.cfs_period_us, a container's namespace whose path is not visible), and
// the affinity mask.
#include "rabbit/core/cpu_budget.hpp"

#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using rabbit::cpus::cgroup_cpu_quota;

namespace {

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

struct TempTree {
  fs::path root =
      fs::temp_directory_path() / ("rabbit_cpu_budget_" + std::to_string(::getpid()) + "_" +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
  TempTree() { fs::remove_all(root); }
  ~TempTree() { fs::remove_all(root); }
};

}  // namespace

TEST(CpuBudget, CgroupV2QuotaIsTheLeastOverTheJobAndItsAncestors) {
  TempTree t;
  const fs::path v2 = t.root / "v2";
  write(v2 / "cpu.max", "max 100000\n");                        // the root: no quota
  write(v2 / "slurm/job_7/cpu.max", "300000 100000\n");         // the job: 3 CPUs
  write(v2 / "slurm/job_7/step_0/cpu.max", "150000 100000\n");  // the step: 1.5 CPUs
  std::string where;
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("0::/slurm/job_7/step_0\n", v2, t.root / "v1", &where), 1.5);
  EXPECT_EQ(where, (v2 / "slurm/job_7/step_0/cpu.max").string());
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("0::/slurm/job_7\n", v2, t.root / "v1"), 3.0);
  // a step with a larger quota than its job is limited by the job
  write(v2 / "slurm/job_7/step_1/cpu.max", "800000 100000\n");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("0::/slurm/job_7/step_1\n", v2, t.root / "v1"), 3.0);
}

TEST(CpuBudget, NoQuotaAnywhereIsZero) {
  TempTree t;
  const fs::path v2 = t.root / "v2";
  write(v2 / "cpu.max", "max 100000\n");
  write(v2 / "user/cpu.max", "max 100000\n");
  EXPECT_EQ(cgroup_cpu_quota("0::/user\n", v2, t.root / "v1"), 0.0);
  EXPECT_EQ(cgroup_cpu_quota("", v2, t.root / "v1"), 0.0);
  EXPECT_EQ(cgroup_cpu_quota("garbage\n0::\n", t.root / "absent", t.root / "v1"), 0.0);
  write(v2 / "bad/cpu.max", "lots 100000\n");
  EXPECT_EQ(cgroup_cpu_quota("0::/bad\n", v2, t.root / "v1"), 0.0);
}

TEST(CpuBudget, ContainerNamespacePathNotVisibleReadsTheMountRoot) {
  TempTree t;
  const fs::path v2 = t.root / "v2";
  write(v2 / "cpu.max", "200000 100000\n");  // inside a container the job's cgroup is the root
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("0::/../../host/path\n", v2, t.root / "v1"), 2.0);
}

TEST(CpuBudget, CgroupV1QuotaAndPeriod) {
  TempTree t;
  const fs::path v1 = t.root / "v1cpu";
  write(v1 / "cpu.cfs_quota_us", "-1\n");
  write(v1 / "cpu.cfs_period_us", "100000\n");
  write(v1 / "slurm/uid_1/job_9/cpu.cfs_quota_us", "250000\n");
  write(v1 / "slurm/uid_1/job_9/cpu.cfs_period_us", "100000\n");
  const std::string cg = "12:memory:/slurm/uid_1/job_9\n4:cpu,cpuacct:/slurm/uid_1/job_9\n0::/\n";
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota(cg, t.root / "v2", v1), 2.5);
  // -1: no quota
  write(v1 / "slurm/uid_1/job_9/cpu.cfs_quota_us", "-1\n");
  EXPECT_EQ(cgroup_cpu_quota(cg, t.root / "v2", v1), 0.0);
  // a v1 line of another controller is not read as the cpu controller's
  EXPECT_EQ(cgroup_cpu_quota("3:cpuset:/slurm/uid_1/job_9\n", t.root / "v2", v1), 0.0);
}

TEST(CpuBudget, DetectIsWithinTheAffinityMask) {
  const int affinity = rabbit::cpus::affinity_cpus();
  ASSERT_GT(affinity, 0);
  const auto b = rabbit::cpus::detect();
  EXPECT_GE(b.threads, 1);
  EXPECT_LE(b.threads, affinity);
  EXPECT_FALSE(b.source.empty());
  // one CPU in the mask: one thread
  cpu_set_t all, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &all)) {
      CPU_SET(c, &one);
      break;
    }
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  const auto single = rabbit::cpus::detect();
  sched_setaffinity(0, sizeof(all), &all);
  EXPECT_EQ(single.threads, 1);
  EXPECT_EQ(rabbit::cpus::affinity_cpus(), affinity);
}
