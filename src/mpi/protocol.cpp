#include "protocol.hpp"

#include <fmt/format.h>

#include <climits>
#include <cstring>
#include <fstream>

#include "rabbit/core/error.hpp"

namespace rabbit::mpi::detail {

void broadcast(Request& request) {
  int64_t header[5] = {static_cast<int64_t>(request.op), request.n, request.k, request.flag,
                       static_cast<int64_t>(request.payload.size())};
  MPI_Bcast(header, 5, MPI_INT64_T, 0, MPI_COMM_WORLD);
  request.op = static_cast<Op>(header[0]);
  request.n = header[1];
  request.k = header[2];
  request.flag = header[3];
  request.payload.resize(static_cast<size_t>(header[4]));
  // In pieces below INT_MAX elements: MPI counts are int.
  constexpr size_t piece = size_t{1} << 30;
  for (size_t at = 0; at < request.payload.size(); at += piece) {
    const size_t len = std::min(piece, request.payload.size() - at);
    MPI_Bcast(request.payload.data() + at, static_cast<int>(len), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  }
}

std::vector<std::vector<double>> gather(const std::vector<double>& mine) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (mine.size() > static_cast<size_t>(INT_MAX))
    throw Error(fmt::format("rank {}: a reply of {} values exceeds MPI's count limit ({})", rank, mine.size(),
                            INT_MAX));
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(rank == 0 ? size : 0), displs(rank == 0 ? size : 0);
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<double> all;
  if (rank == 0) {
    int64_t total = 0;
    for (int r = 0; r < size; ++r) {
      displs[r] = static_cast<int>(total);
      total += counts[r];
    }
    if (total > INT_MAX)
      throw Error(
          fmt::format("the ranks' replies hold {} values, more than MPI's count limit ({}); use fewer "
                      "ranks or fewer parameters",
                      total, INT_MAX));
    all.resize(static_cast<size_t>(total));
  }
  MPI_Gatherv(mine.data(), count, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE, 0,
              MPI_COMM_WORLD);
  std::vector<std::vector<double>> out;
  if (rank != 0) return out;
  out.resize(size);
  for (int r = 0; r < size; ++r) out[r].assign(all.begin() + displs[r], all.begin() + displs[r] + counts[r]);
  return out;
}

std::vector<double> ok_reply() {
  return {0.0};
}

std::vector<double> failure_reply(int exit_code, const std::string& message) {
  std::vector<double> reply(2 + (message.size() + sizeof(double) - 1) / sizeof(double), 0.0);
  reply[0] = exit_code == 0 ? 1.0 : static_cast<double>(exit_code);
  reply[1] = static_cast<double>(message.size());
  std::memcpy(reply.data() + 2, message.data(), message.size());
  return reply;
}

void check_reply(int rank, const std::vector<double>& reply, size_t expected) {
  if (reply.empty()) throw Error(fmt::format("rank {}: empty reply", rank));
  if (reply[0] != 0.0) {
    const size_t len = reply.size() > 1 ? static_cast<size_t>(reply[1]) : 0;
    std::string message(len, ' ');
    if (len <= (reply.size() - 2) * sizeof(double)) std::memcpy(message.data(), reply.data() + 2, len);
    throw Error(fmt::format("rank {}: {}", rank, message), static_cast<ExitCode>(static_cast<int>(reply[0])));
  }
  if (reply.size() - 1 < expected)
    throw Error(fmt::format("rank {}: reply of {} values, expected {}", rank, reply.size() - 1, expected));
}

bool& released() {
  static bool value = false;
  return value;
}

int64_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;  // "VmHWM:  1234 kB"
  return 0;
}

}  // namespace rabbit::mpi::detail
