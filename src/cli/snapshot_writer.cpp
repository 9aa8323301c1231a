#include "snapshot_writer.hpp"

#include <fmt/format.h>
#include <hdf5.h>

#include <filesystem>

#include "rabbit/core/durable_file.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/core/termination.hpp"
#include "rabbit/io/hdf5_handle.hpp"

namespace rabbit::cli {

SnapshotWriter::SnapshotWriter(std::string path, double interval_hours, std::vector<std::string> names)
    : path_(std::move(path)),
      interval_s_(interval_hours * 3600.0),
      names_(std::move(names)),
      last_write_(std::chrono::steady_clock::now()) {
  const std::filesystem::path dir = std::filesystem::path(path_).parent_path();
  std::error_code ec;
  if (!dir.empty() && !std::filesystem::is_directory(dir, ec))
    throw OptionError(fmt::format("--snapshotFile {}: the directory {} does not exist", path_, dir.string()));
  for (const auto& stale : durable::remove_stale_temporaries(path_))
    log().info("removed {}, the unfinished snapshot of a run that no longer exists", stale);
}

void SnapshotWriter::on_iteration(const Eigen::VectorXd& x) {
  const bool due =
      interval_s_ > 0.0 &&
      std::chrono::duration<double>(std::chrono::steady_clock::now() - last_write_).count() >= interval_s_;
  if (termination::pending_signal() != 0) {
    write(x);
    termination::terminate_after_snapshot(path_);
  }
  if (due) write(x);
}

void SnapshotWriter::on_minimum(const Eigen::VectorXd& x) {
  write(x);
  if (termination::pending_signal() != 0) termination::terminate_after_snapshot(path_);
}

void SnapshotWriter::write(const Eigen::VectorXd& x) {
  auto fail = [&](const char* what) {
    throw ResourceError(fmt::format("--snapshotFile {}: cannot write {}", path_, what));
  };
  const std::string tmp = durable::temporary_path(path_);
  termination::TemporaryFile guard(tmp);
  {
    h5::Handle file;
    H5E_BEGIN_TRY {
      file = h5::Handle(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    }
    H5E_END_TRY;
    if (!file.valid()) fail("the file");
    const hsize_t n = static_cast<hsize_t>(x.size());
    h5::Handle space(H5Screate_simple(1, &n, nullptr));
    h5::Handle xs(H5Dcreate2(file, "x", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    if (!xs.valid() || H5Dwrite(xs, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, x.data()) < 0)
      fail("x");
    h5::Handle str(H5Tcopy(H5T_C_S1));
    H5Tset_size(str, H5T_VARIABLE);
    H5Tset_cset(str, H5T_CSET_UTF8);
    std::vector<const char*> ptrs;
    for (const auto& s : names_) ptrs.push_back(s.c_str());
    h5::Handle ps(H5Dcreate2(file, "parms", str, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    if (!ps.valid() || H5Dwrite(ps, str, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()) < 0) fail("parms");
  }
  try {
    durable::commit_by_rename(tmp, path_);
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw;
  }
  guard.release();
  last_write_ = std::chrono::steady_clock::now();
  log().debug("snapshot of {} parameters written to {}", x.size(), path_);
}

}  // namespace rabbit::cli
