// ResultWriter (the temporary file, flush and commit) and ResultReader's choice of layout; the
// layouts themselves are result_plain_*.cpp and result_rabbit_*.cpp (docs/output-format.md).
#include "rabbit/postfit/result_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "rabbit/core/durable_file.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/core/termination.hpp"
#include "rabbit/io/blosc_filters.hpp"
#include "rabbit/io/hdf5_reader.hpp"
#include "result_layouts.hpp"

namespace rabbit::result {
namespace {

using detail::check;
using detail::check_id;

}  // namespace

// ---------------------------------------------------------------------------- ResultWriter

ResultWriter::ResultWriter(const std::string& final_path, Layout layout)
    : final_path_(final_path), layout_(layout) {
  namespace fs = std::filesystem;
  fs::path p(final_path);
  if (p.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(p.parent_path(), ec);
    if (ec)
      throw Error(
          fmt::format("cannot create output directory {}: {}", p.parent_path().string(), ec.message()));
  }
  // Created where it is renamed (one file system), removed by any termination signal
  // (rabbit/core/termination.hpp); those that dead runs left here are removed first.
  for (const auto& stale : durable::remove_stale_temporaries(final_path))
    log().info("removed {}, the unfinished result of a run that no longer exists", stale);
  tmp_path_ = durable::temporary_path(final_path);
  termination::install_handlers();
  tmp_guard_ = std::make_unique<termination::TemporaryFile>(tmp_path_);

  h5::Handle fcpl(H5Pcreate(H5P_FILE_CREATE));
  H5Pset_link_creation_order(fcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  hid_t f = H5Fcreate(tmp_path_.c_str(), H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
  if (f < 0) throw Error("cannot create the result file " + tmp_path_ + ": " + h5::current_hdf5_cause());
  file_ = h5::Handle(f);
  if (layout_ == Layout::plain) {
    detail::write_plain_root_attributes(file_);
    axes_ =
        check_id(H5Gcreate2(file_, "axes", H5P_DEFAULT, detail::group_create_plist(), H5P_DEFAULT), "/axes");
  }
}

ResultWriter::~ResultWriter() {
  if (!committed_) {
    axes_.reset();
    file_.reset();
    std::error_code ec;
    std::filesystem::remove(tmp_path_, ec);
  }
}

void ResultWriter::shared_axis(const std::string& id, const Axis& axis) {
  if (layout_ != Layout::plain) return;
  if (std::find(written_axes_.begin(), written_axes_.end(), id) != written_axes_.end()) return;
  Axis a = axis;
  a.shared_id.clear();
  detail::write_plain_axis(axes_, id, a);
  written_axes_.push_back(id);
}

void ResultWriter::flush() {
  for (; next_unwritten_ < root_.children.size(); ++next_unwritten_) {
    Node& group = *root_.children[next_unwritten_];
    if (layout_ == Layout::plain)
      detail::write_plain_group(file_, group);
    else
      detail::write_rabbit_group(file_, group);
    group.written = true;
    group.children.clear();
    group.children.shrink_to_fit();
    group.attributes.clear();
  }
}

void ResultWriter::commit() {
  flush();
  axes_.reset();
  check(H5Fflush(file_, H5F_SCOPE_GLOBAL), "flush");
  file_.reset();
  // fsync before and after the rename: a crashed node leaves the old result or the new one.
  durable::commit_by_rename(tmp_path_, final_path_);
  committed_ = true;
  tmp_guard_->release();
}

// ---------------------------------------------------------------------------- reading

ResultReader::ResultReader(const std::string& path) : path_(path) {
  io::ensure_blosc_filters();  // upstream's files compress with Blosc (filter 32001)
  h5::Handle file;
  H5E_BEGIN_TRY {
    file = h5::Handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  }
  H5E_END_TRY;
  if (!file.valid()) throw InputError("cannot open result file " + path);
  if (detail::read_string_attribute(file, "rabbit_plain_format") == "rabbit-fitresults-plain") {
    backend_ = detail::plain_reader(std::move(file), path);
  } else if (detail::has_rabbit_groups(file)) {
    backend_ = detail::rabbit_reader(std::move(file), path);
  } else {
    throw InputError(
        path +
        " is not a result file of rabbit_fit (neither rabbit's layout, groups with "
        "narf_h5py_pickle_protocol_version, nor the plain layout, attribute rabbit_plain_format)");
  }
}

ResultReader::~ResultReader() = default;
ResultReader::ResultReader(ResultReader&&) noexcept = default;
ResultReader& ResultReader::operator=(ResultReader&&) noexcept = default;

Layout ResultReader::layout() const {
  return backend_->layout();
}
std::vector<std::string> ResultReader::result_groups() const {
  return backend_->result_groups();
}

std::string ResultReader::pick_result(const std::optional<std::string>& key) const {
  auto groups = result_groups();
  auto has = [&](const std::string& g) { return std::find(groups.begin(), groups.end(), g) != groups.end(); };
  if (key) {
    std::string g = "results_" + *key;
    if (has(g)) return g;
  } else {
    if (has("results")) return "results";
    if (has("results_asimov")) return "results_asimov";
  }
  std::string list;
  for (const auto& g : groups) list += (list.empty() ? "" : ", ") + g;
  throw InputError(fmt::format("{}: no result group {} (available: {})", path_,
                               key ? "results_" + *key : std::string("results or results_asimov"), list));
}

bool ResultReader::exists(const std::string& path) const {
  return backend_->exists(path);
}
Hist ResultReader::hist(const std::string& path, bool flow_bins) const {
  return backend_->hist(path, flow_bins);
}
double ResultReader::scalar(const std::string& path) const {
  return backend_->scalar(path);
}
std::vector<std::string> ResultReader::strings(const std::string& path) const {
  return backend_->strings(path);
}
std::string ResultReader::attr_str(const std::string& path, const std::string& name) const {
  return backend_->attr_str(path, name);
}
std::vector<ResultReader::Entry> ResultReader::members(const std::string& path) const {
  return backend_->members(path);
}

}  // namespace rabbit::result
