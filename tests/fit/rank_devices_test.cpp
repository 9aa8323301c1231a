// The GPUs of one MPI rank's local shards (docs/mpi.md "GPUs per rank") as a pure function of the
// rank's place among the ranks sharing its node's GPUs, the visible count and --devices. No GPU needed.
#include "rabbit/fit/rank_devices.hpp"

#include <gtest/gtest.h>

#include <string>

#include "rabbit/core/error.hpp"
#include "support/exception_message.hpp"

namespace rabbit {
namespace {

using test::message_of;

RankGpuRequest request(int peer, int peers, int visible, int n, std::vector<int> devices = {}) {
  RankGpuRequest r;
  r.peer = peer;
  r.peers = peers;
  r.visible = visible;
  r.n_devices = n;
  r.devices = std::move(devices);
  return r;
}

TEST(RankDevices, RanksSharingANodesGpusTakeConsecutiveOnes) {
  // 4 GPUs seen by 2 ranks of a node (mpirun, no CUDA_VISIBLE_DEVICES): 2 each, never shared.
  EXPECT_EQ(rank_gpu_positions(request(0, 2, 4, 2)), (std::vector<int>{0, 1}));
  EXPECT_EQ(rank_gpu_positions(request(1, 2, 4, 2)), (std::vector<int>{2, 3}));
  // 8 GPUs, 4 ranks, one shard each; more GPUs than needed: the first peers·n.
  EXPECT_EQ(rank_gpu_positions(request(3, 4, 8, 1)), (std::vector<int>{3}));
  EXPECT_EQ(rank_gpu_positions(request(2, 3, 8, 2)), (std::vector<int>{4, 5}));
}

TEST(RankDevices, ARankWithItsOwnGpusUsesThemFromTheFirst) {
  // slurm --gpus-per-task=2: every task sees its own 2 GPUs (CUDA_VISIBLE_DEVICES differs), so it is
  // alone among its peers.
  EXPECT_EQ(rank_gpu_positions(request(0, 1, 2, 2)), (std::vector<int>{0, 1}));
  // Alone with fewer GPUs than shards: round-robin, as a single process places them.
  EXPECT_EQ(rank_gpu_positions(request(0, 1, 2, 3)), (std::vector<int>{0, 1, 0}));
}

TEST(RankDevices, ExplicitDevicesAreTheRanksOwnPositions) {
  EXPECT_EQ(rank_gpu_positions(request(1, 2, 2, 2, {1, 0})), (std::vector<int>{1, 0}));
  // --devices may put two ranks on one GPU: the user asked for it.
  EXPECT_EQ(rank_gpu_positions(request(1, 4, 1, 1, {0})), (std::vector<int>{0}));
}

TEST(RankDevices, ErrorsAreOneLine) {
  const std::string shared = message_of<ResourceError>([] { rank_gpu_positions(request(1, 3, 2, 1)); });
  EXPECT_NE(shared.find("3 ranks on this node see the same 2 GPU(s) and ask for 1 each"), std::string::npos)
      << shared;
  const std::string range = message_of<ResourceError>([] {
    rank_gpu_positions(request(0, 1, 2, 2, {0, 5}));
  });
  EXPECT_EQ(range, "--devices 0,5: index 5 out of range: 2 GPU(s) visible to this rank");
  const std::string none = message_of<ResourceError>([] { rank_gpu_positions(request(0, 1, 0, 1)); });
  EXPECT_EQ(none, "--backend cuda: no GPU is visible to this rank (docs/mpi.md)");
  const std::string count = message_of<OptionError>([] { rank_gpu_positions(request(0, 1, 4, 2, {0})); });
  EXPECT_NE(count.find("--devices lists 1 device(s) but --nDevices is 2"), std::string::npos) << count;
  for (const auto& m : {shared, range, none, count}) EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

}  // namespace
}  // namespace rabbit
