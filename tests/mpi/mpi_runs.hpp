#pragma once
// Launching our programs under mpiexec in tests/mpi, and what those tests check of a run.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "support/command.hpp"
#include "support/test_paths.hpp"

namespace rabbit::test::mpi_runs {

/// The built program `name` (rabbit_fit, rabbit_limit), quoted for the shell.
inline std::string program(const std::string& name) {
  return shell_quote((binary_dir() / name).string());
}

#if RABBIT_MPI_BUILT
/// mpiexec -n N, oversubscribed (more ranks than cores here), as root where the tests run as root.
inline std::string mpiexec(int ranks) {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  std::ostringstream command;
  command << RABBIT_MPIEXEC << " --oversubscribe -n " << ranks << " ";
  return command.str();
}
#endif

/// Every quantity of both files identical (rabbit_compare with every tolerance 0).
inline void expect_identical(const std::filesystem::path& a, const std::filesystem::path& b) {
  const CommandResult r = run_command(program("rabbit_compare") + " --tol-scale 0 " +
                                      shell_quote(a.string()) + " " + shell_quote(b.string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

inline int count_lines_with(const std::string& text, const std::string& what) {
  std::istringstream in(text);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(what) != std::string::npos;
  return n;
}

}  // namespace rabbit::test::mpi_runs
