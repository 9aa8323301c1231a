#include "rabbit/postfit/result_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "rabbit/core/error.hpp"

namespace rabbit::result {
namespace {

// Transfer property list for every write: HDF5's default 1 MiB type-conversion buffer is calloc'ed
// on each H5Dwrite that converts (variable-length strings always do), which dominated writing the
// many small datasets of a toy loop (page faults of 1 MiB per string). 64 KiB strip-mines larger
// conversions instead.
hid_t write_plist() {
  static const hid_t plist = [] {
    hid_t p = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_buffer(p, 64 * 1024, nullptr, nullptr);
    return p;
  }();
  return plist;
}

// The temporary file of the writer that is open, for the signal handler (one at a time).
char g_tmp_path[4096] = {0};
std::atomic<bool> g_tmp_active{false};
struct sigaction g_old_int, g_old_term;

extern "C" void remove_temporary_on_signal(int sig) {
  if (g_tmp_active.load()) unlink(g_tmp_path);  // async-signal-safe
  struct sigaction* old = sig == SIGINT ? &g_old_int : &g_old_term;
  sigaction(sig, old, nullptr);
  raise(sig);
}

void check(herr_t status, const std::string& what) {
  if (status < 0) throw Error("HDF5 error while writing the result file: " + what);
}

h5::Handle check_id(hid_t id, const std::string& what) {
  if (id < 0) throw Error("HDF5 error while writing the result file: " + what);
  return h5::Handle(id);
}

h5::Handle utf8_string_type() {
  h5::Handle t(H5Tcopy(H5T_C_S1));
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  return t;
}

h5::Handle group_create_plist() {
  h5::Handle gcpl(H5Pcreate(H5P_GROUP_CREATE));
  H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  return gcpl;
}

// Dataset creation: chunked + shuffle + deflate(4) above 4096 elements (§3.7.1).
h5::Handle dataset_plist(const std::vector<hsize_t>& dims) {
  h5::Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
  hsize_t n = 1;
  for (auto d : dims) n *= d;
  if (n > 4096 && !dims.empty()) {
    std::vector<hsize_t> chunk(dims);
    // Aim for chunks of about 64k elements: shrink the leading dimensions first.
    hsize_t total = n;
    for (size_t k = 0; k < chunk.size() && total > 65536; ++k) {
      hsize_t rest = total / chunk[k];
      hsize_t want = std::max<hsize_t>(1, 65536 / std::max<hsize_t>(1, rest));
      if (want < chunk[k]) {
        chunk[k] = want;
      }
      total = rest * chunk[k];
    }
    H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data());
    H5Pset_shuffle(dcpl);
    H5Pset_deflate(dcpl, 4);
  }
  return dcpl;
}

void write_doubles(hid_t group, const std::string& name, const std::vector<hsize_t>& dims, const double* data) {
  h5::Handle space(dims.empty() ? H5Screate(H5S_SCALAR)
                                : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
  auto dcpl = dataset_plist(dims);
  auto ds = check_id(H5Dcreate2(group, name.c_str(), H5T_IEEE_F64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), name);
  check(H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, write_plist(), data), name);
}

}  // namespace

// ---------------------------------------------------------------------------- Axis

int64_t Axis::size() const {
  if (type == "strcategory") return static_cast<int64_t>(labels.size());
  if (type == "intcategory") return static_cast<int64_t>(int_values.size());
  if (type == "floatcategory") return static_cast<int64_t>(float_values.size());
  if (type == "variable") return static_cast<int64_t>(edges.size()) - 1;
  if (type == "integer") return static_cast<int64_t>(upper - lower);
  if (type == "boolean") return 2;
  return bins;
}

Axis Axis::strcat(std::string name, std::vector<std::string> labels, std::string shared_id) {
  Axis a;
  a.type = "strcategory";
  a.name = std::move(name);
  a.labels = std::move(labels);
  a.overflow = true;
  a.shared_id = std::move(shared_id);
  return a;
}

Axis Axis::integer(std::string name, int64_t lower, int64_t upper) {
  Axis a;
  a.type = "integer";
  a.name = std::move(name);
  a.lower = static_cast<double>(lower);
  a.upper = static_cast<double>(upper);
  return a;
}

Axis Axis::floatcat(std::string name, std::vector<double> values) {
  Axis a;
  a.type = "floatcategory";
  a.name = std::move(name);
  a.float_values = std::move(values);
  a.overflow = true;
  return a;
}

Axis Axis::down_up() {
  Axis a;
  a.type = "regular";
  a.name = "downUpVar";
  a.bins = 2;
  a.lower = -2;
  a.upper = 2;
  a.shared_id = "downUpVar";
  return a;
}

std::string escape_key(const std::string& key) {
  if (key == ".") return "%2E";
  std::string out;
  for (char c : key) {
    if (c == '%') out += "%25";
    else if (c == '/') out += "%2F";
    else out += c;
  }
  return out;
}

// ---------------------------------------------------------------------------- writers

void set_attr(hid_t obj, const std::string& name, const std::string& value) {
  auto type = utf8_string_type();
  h5::Handle space(H5Screate(H5S_SCALAR));
  auto attr = check_id(H5Acreate2(obj, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), "attribute " + name);
  const char* p = value.c_str();
  check(H5Awrite(attr, type, &p), "attribute " + name);
}

void set_attr(hid_t obj, const std::string& name, int64_t value) {
  h5::Handle space(H5Screate(H5S_SCALAR));
  auto attr = check_id(H5Acreate2(obj, name.c_str(), H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT), name);
  check(H5Awrite(attr, H5T_NATIVE_INT64, &value), name);
}

void set_attr(hid_t obj, const std::string& name, double value) {
  h5::Handle space(H5Screate(H5S_SCALAR));
  auto attr = check_id(H5Acreate2(obj, name.c_str(), H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT), name);
  check(H5Awrite(attr, H5T_NATIVE_DOUBLE, &value), name);
}

void set_attr_u8(hid_t obj, const std::string& name, bool value) {
  h5::Handle space(H5Screate(H5S_SCALAR));
  auto attr = check_id(H5Acreate2(obj, name.c_str(), H5T_STD_U8LE, space, H5P_DEFAULT, H5P_DEFAULT), name);
  uint8_t v = value ? 1 : 0;
  check(H5Awrite(attr, H5T_NATIVE_UINT8, &v), name);
}

h5::Handle create_group(hid_t parent, const std::string& key, const std::string& rabbit_type) {
  auto gcpl = group_create_plist();
  auto g = check_id(H5Gcreate2(parent, escape_key(key).c_str(), H5P_DEFAULT, gcpl, H5P_DEFAULT), "group " + key);
  set_attr(g, "key", key);
  if (!rabbit_type.empty()) set_attr(g, "rabbit_type", rabbit_type);
  return g;
}

void write_strings(hid_t group, const std::string& name, const std::vector<std::string>& values) {
  auto type = utf8_string_type();
  hsize_t n = values.size();
  h5::Handle space(H5Screate_simple(1, &n, nullptr));
  auto ds = check_id(H5Dcreate2(group, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), name);
  std::vector<const char*> ptrs;
  for (const auto& v : values) ptrs.push_back(v.c_str());
  if (n > 0) check(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, write_plist(), ptrs.data()), name);
}

void write_int64s(hid_t group, const std::string& name, const std::vector<int64_t>& values) {
  hsize_t n = values.size();
  h5::Handle space(H5Screate_simple(1, &n, nullptr));
  auto ds = check_id(H5Dcreate2(group, name.c_str(), H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), name);
  if (n > 0) check(H5Dwrite(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, write_plist(), values.data()), name);
}

void write_scalar(hid_t group, const std::string& key, double value) {
  write_doubles(group, escape_key(key), {}, &value);
  h5::Handle ds(H5Dopen2(group, escape_key(key).c_str(), H5P_DEFAULT));
  set_attr(ds, "rabbit_type", std::string("float"));
  set_attr(ds, "key", key);
}

void write_scalar(hid_t group, const std::string& key, int64_t value) {
  h5::Handle space(H5Screate(H5S_SCALAR));
  auto ds = check_id(
      H5Dcreate2(group, escape_key(key).c_str(), H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), key);
  check(H5Dwrite(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, write_plist(), &value), key);
  set_attr(ds, "rabbit_type", std::string("int"));
  set_attr(ds, "key", key);
}

void write_scalar_bool(hid_t group, const std::string& key, bool value) {
  h5::Handle space(H5Screate(H5S_SCALAR));
  auto ds = check_id(
      H5Dcreate2(group, escape_key(key).c_str(), H5T_STD_U8LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), key);
  uint8_t v = value ? 1 : 0;
  check(H5Dwrite(ds, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, write_plist(), &v), key);
  set_attr(ds, "rabbit_type", std::string("bool"));
  set_attr(ds, "key", key);
}

void write_scalar_str(hid_t group, const std::string& key, const std::string& value) {
  auto type = utf8_string_type();
  h5::Handle space(H5Screate(H5S_SCALAR));
  auto ds = check_id(H5Dcreate2(group, escape_key(key).c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), key);
  const char* p = value.c_str();
  check(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, write_plist(), &p), key);
  set_attr(ds, "rabbit_type", std::string("str"));
  set_attr(ds, "key", key);
}

void write_axis(hid_t parent, const std::string& link_name, const Axis& a) {
  auto gcpl = group_create_plist();
  auto g = check_id(H5Gcreate2(parent, link_name.c_str(), H5P_DEFAULT, gcpl, H5P_DEFAULT), "axis " + a.name);
  set_attr(g, "rabbit_type", std::string("axis"));
  set_attr(g, "name", a.name);
  if (!a.label.empty()) set_attr(g, "label", a.label);
  set_attr(g, "axis_type", a.type);
  if (a.type == "regular" || a.type == "variable" || a.type == "integer") {
    set_attr_u8(g, "underflow", a.underflow);
    set_attr_u8(g, "overflow", a.overflow);
  }
  if (a.type == "strcategory" || a.type == "intcategory") set_attr_u8(g, "overflow", a.overflow);
  if (a.type == "regular") {
    set_attr_u8(g, "circular", a.circular);
    set_attr(g, "bins", a.bins);
    set_attr(g, "lower", a.lower);
    set_attr(g, "upper", a.upper);
  }
  if (a.type == "integer") {
    set_attr(g, "lower", static_cast<int64_t>(a.lower));
    set_attr(g, "upper", static_cast<int64_t>(a.upper));
  }
  if (a.type == "variable") {
    hsize_t n = a.edges.size();
    write_doubles(g, "edges", {n}, a.edges.data());
  }
  if (a.type == "strcategory") write_strings(g, "labels", a.labels);
  if (a.type == "intcategory") write_int64s(g, "values", a.int_values);
  if (a.type == "floatcategory") {
    hsize_t n = a.float_values.size();
    write_doubles(g, "values", {n}, a.float_values.data());
  }
}

void write_hist(hid_t group, const std::string& key, const std::vector<Axis>& axes, const double* values,
                const double* variances, const std::string& label, bool flow) {
  auto g = create_group(group, key, "hist");
  set_attr(g, "storage", std::string(variances ? "weight" : "double"));
  if (!label.empty()) set_attr(g, "label", label);
  set_attr_u8(g, "flow", flow);
  std::vector<hsize_t> dims;
  for (size_t k = 0; k < axes.size(); ++k) {
    const Axis& a = axes[k];
    std::string link = "axis" + std::to_string(k);
    if (!a.shared_id.empty()) {
      check(H5Lcreate_soft(("/axes/" + a.shared_id).c_str(), g, link.c_str(), H5P_DEFAULT, H5P_DEFAULT), link);
    } else {
      write_axis(g, link, a);
    }
    int64_t extent = a.size();
    if (flow && a.type != "strcategory") extent += (a.underflow ? 1 : 0) + (a.overflow ? 1 : 0);
    dims.push_back(static_cast<hsize_t>(extent));
  }
  write_doubles(g, "values", dims, values);
  if (variances) write_doubles(g, "variances", dims, variances);
}

// ---------------------------------------------------------------------------- ResultWriter

ResultWriter::ResultWriter(const std::string& final_path) : final_path_(final_path) {
  namespace fs = std::filesystem;
  fs::path p(final_path);
  if (p.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(p.parent_path(), ec);
    if (ec) throw Error(fmt::format("cannot create output directory {}: {}", p.parent_path().string(), ec.message()));
  }
  tmp_path_ = (p.parent_path() / ("." + p.filename().string() + fmt::format(".tmp{}", getpid()))).string();
  if (tmp_path_.size() >= sizeof(g_tmp_path)) throw Error("output path too long: " + final_path);
  std::strncpy(g_tmp_path, tmp_path_.c_str(), sizeof(g_tmp_path) - 1);
  g_tmp_active = true;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = remove_temporary_on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);

  h5::Handle fcpl(H5Pcreate(H5P_FILE_CREATE));
  H5Pset_link_creation_order(fcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  hid_t f = H5Fcreate(tmp_path_.c_str(), H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
  if (f < 0) {
    g_tmp_active = false;
    throw Error("cannot create the result file " + tmp_path_);
  }
  file_ = h5::Handle(f);
  set_attr(file_, "rabbit_plain_format", std::string("rabbit-fitresults-plain"));
  set_attr(file_, "rabbit_plain_version", int64_t{1});
  set_attr(file_, "producer", std::string("rabbit-cpp 0.1.0"));
  set_attr(file_, "rabbit_reference", std::string("WMass/rabbit@948a94a"));
  auto gcpl = group_create_plist();
  axes_ = check_id(H5Gcreate2(file_, "axes", H5P_DEFAULT, gcpl, H5P_DEFAULT), "/axes");
}

ResultWriter::~ResultWriter() {
  if (!committed_) {
    axes_.reset();
    file_.reset();
    std::error_code ec;
    std::filesystem::remove(tmp_path_, ec);
    g_tmp_active = false;
    sigaction(SIGINT, &g_old_int, nullptr);
    sigaction(SIGTERM, &g_old_term, nullptr);
  }
}

void ResultWriter::shared_axis(const std::string& id, const Axis& axis) {
  if (std::find(written_axes_.begin(), written_axes_.end(), id) != written_axes_.end()) return;
  Axis a = axis;
  a.shared_id.clear();
  write_axis(axes_, id, a);
  written_axes_.push_back(id);
}

void ResultWriter::commit() {
  axes_.reset();
  check(H5Fflush(file_, H5F_SCOPE_GLOBAL), "flush");
  file_.reset();
  std::error_code ec;
  std::filesystem::rename(tmp_path_, final_path_, ec);
  if (ec) throw Error(fmt::format("cannot rename {} to {}: {}", tmp_path_, final_path_, ec.message()));
  committed_ = true;
  g_tmp_active = false;
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

// ---------------------------------------------------------------------------- reading

namespace {

std::string read_str_attr(hid_t obj, const char* name) {
  if (H5Aexists(obj, name) <= 0) return "";
  h5::Handle attr(H5Aopen(obj, name, H5P_DEFAULT));
  h5::Handle ftype(H5Aget_type(attr));
  if (H5Tis_variable_str(ftype) > 0) {
    auto type = utf8_string_type();
    char* p = nullptr;
    H5Aread(attr, type, &p);
    std::string s = p ? p : "";
    H5free_memory(p);
    return s;
  }
  size_t n = H5Tget_size(ftype);
  std::string s(n, '\0');
  h5::Handle mt(H5Tcopy(ftype));
  H5Aread(attr, mt, s.data());
  return s.substr(0, s.find('\0'));
}

std::vector<std::string> read_strings(hid_t ds) {
  h5::Handle space(H5Dget_space(ds));
  hssize_t n = H5Sget_simple_extent_npoints(space);
  std::vector<char*> ptrs(static_cast<size_t>(n), nullptr);
  auto type = utf8_string_type();
  std::vector<std::string> out;
  if (n > 0 && H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()) >= 0) {
    for (auto* p : ptrs) out.emplace_back(p ? p : "");
    H5Dvlen_reclaim(type, space, H5P_DEFAULT, ptrs.data());
  }
  return out;
}

std::vector<double> read_doubles(hid_t ds, std::vector<int64_t>* shape) {
  h5::Handle space(H5Dget_space(ds));
  int rank = H5Sget_simple_extent_ndims(space);
  std::vector<hsize_t> dims(static_cast<size_t>(std::max(rank, 0)));
  if (rank > 0) H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  hsize_t n = 1;
  for (auto d : dims) n *= d;
  std::vector<double> out(n);
  if (n > 0) H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data());
  if (shape) shape->assign(dims.begin(), dims.end());
  return out;
}

}  // namespace

ResultReader::ResultReader(const std::string& path) : path_(path) {
  H5E_BEGIN_TRY { file_ = h5::Handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT)); }
  H5E_END_TRY;
  if (!file_.valid()) throw InputError("cannot open result file " + path);
  if (read_str_attr(file_, "rabbit_plain_format") != "rabbit-fitresults-plain")
    throw InputError(path + " is not a rabbit-cpp result file (attribute rabbit_plain_format missing)");
}

std::vector<std::string> ResultReader::result_groups() const {
  std::vector<std::string> out;
  H5G_info_t info;
  H5Gget_info(file_, &info);
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    ssize_t len = H5Lget_name_by_idx(file_, ".", H5_INDEX_CRT_ORDER, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    std::string name(static_cast<size_t>(len), '\0');
    H5Lget_name_by_idx(file_, ".", H5_INDEX_CRT_ORDER, H5_ITER_INC, i, name.data(), len + 1, H5P_DEFAULT);
    h5::Handle g(H5Oopen(file_, name.c_str(), H5P_DEFAULT));
    if (read_str_attr(g, "rabbit_type") == "result") out.push_back(read_str_attr(g, "key"));
  }
  return out;
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
  // Check every component so that a missing parent does not raise an HDF5 error.
  std::string partial;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    partial = path.substr(0, slash == std::string::npos ? path.size() : slash);
    if (!partial.empty() && H5Lexists(file_, partial.c_str(), H5P_DEFAULT) <= 0) return false;
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return true;
}

Hist ResultReader::hist(const std::string& path) const {
  if (!exists(path)) throw InputError(fmt::format("{}: histogram {} not found", path_, path));
  h5::Handle g(H5Gopen2(file_, path.c_str(), H5P_DEFAULT));
  Hist h;
  h.label = read_str_attr(g, "label");
  for (int k = 0;; ++k) {
    std::string link = "axis" + std::to_string(k);
    if (H5Lexists(g, link.c_str(), H5P_DEFAULT) <= 0) break;
    h5::Handle a(H5Gopen2(g, link.c_str(), H5P_DEFAULT));
    h.axis_names.push_back(read_str_attr(a, "name"));
    std::vector<std::string> labels;
    if (H5Lexists(a, "labels", H5P_DEFAULT) > 0) {
      h5::Handle ds(H5Dopen2(a, "labels", H5P_DEFAULT));
      labels = read_strings(ds);
    }
    h.axis_labels.push_back(labels);
    std::vector<double> values;
    if (read_str_attr(a, "axis_type") == "floatcategory" && H5Lexists(a, "values", H5P_DEFAULT) > 0) {
      h5::Handle ds(H5Dopen2(a, "values", H5P_DEFAULT));
      values = read_doubles(ds, nullptr);
    }
    h.axis_values.push_back(values);
  }
  {
    h5::Handle ds(H5Dopen2(g, "values", H5P_DEFAULT));
    h.values = read_doubles(ds, &h.shape);
  }
  if (H5Lexists(g, "variances", H5P_DEFAULT) > 0) {
    h5::Handle ds(H5Dopen2(g, "variances", H5P_DEFAULT));
    h.variances = read_doubles(ds, nullptr);
  }
  return h;
}

double ResultReader::scalar(const std::string& path) const {
  if (!exists(path)) throw InputError(fmt::format("{}: dataset {} not found", path_, path));
  h5::Handle ds(H5Dopen2(file_, path.c_str(), H5P_DEFAULT));
  double v = 0;
  H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v);
  return v;
}

std::vector<std::string> ResultReader::strings(const std::string& path) const {
  if (!exists(path)) throw InputError(fmt::format("{}: dataset {} not found", path_, path));
  h5::Handle ds(H5Dopen2(file_, path.c_str(), H5P_DEFAULT));
  return read_strings(ds);
}

std::string ResultReader::attr_str(const std::string& path, const std::string& name) const {
  h5::Handle o(H5Oopen(file_, path.c_str(), H5P_DEFAULT));
  std::string s = read_str_attr(o, name.c_str());
  return s;
}

}  // namespace rabbit::result
