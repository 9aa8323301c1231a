// The child-process walk of hdf5_structure_probe.hpp.
#include "hdf5_structure_probe.hpp"

#include <hdf5.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "hdf5_vlen_heap_check.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/io/hdf5_handle.hpp"

namespace rabbit::h5 {
namespace {

constexpr int kDefaultProbeSeconds = 60;
constexpr uint64_t kMaxProbedBytes = uint64_t{64} << 20;

// ---- the child: visits every object, announcing it on the pipe first

struct Walk {
  int fd;
  std::string filename;
  hid_t file;
};

void announce(int fd, const std::string& what) {
  const std::string line = what + "\n";
  ssize_t ignored = write(fd, line.data(), line.size());
  (void)ignored;
}

herr_t probe_attribute(hid_t loc, const char* name, const H5A_info_t* /*info*/, void* /*data*/) {
  Handle attr(H5Aopen(loc, name, H5P_DEFAULT));
  if (!attr.valid()) return 0;
  Handle type(H5Aget_type(attr));
  Handle space(H5Aget_space(attr));
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  const H5T_class_t cls = H5Tget_class(type);
  if (n <= 0 || n > (1 << 20) || (cls != H5T_INTEGER && cls != H5T_FLOAT)) return 0;
  std::vector<int64_t> values(static_cast<size_t>(n));
  H5Aread(attr, cls == H5T_INTEGER ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE, values.data());
  return 0;
}

void probe_dataset(const Walk& w, const char* name) {
  Handle d(H5Dopen2(w.file, name, H5P_DEFAULT));
  if (!d.valid()) return;
  Handle type(H5Dget_type(d));
  Handle space(H5Dget_space(d));
  Handle dcpl(H5Dget_create_plist(d));
  if (!type.valid() || !space.valid() || !dcpl.valid()) return;
  H5Sget_simple_extent_npoints(space);
  if (H5Pget_layout(dcpl) == H5D_CHUNKED) {
    hsize_t nchunks = 0;
    H5Dget_num_chunks(d, space, &nchunks);  // walks the whole chunk index
  }
  const H5T_class_t cls = H5Tget_class(type);
  const bool variable_string = cls == H5T_STRING && H5Tis_variable_str(type) > 0;
  const bool vlen = cls == H5T_VLEN;
  if (!variable_string && !vlen) {
    // The data themselves, up to kMaxProbedBytes a dataset: HDF5 crashes on some corrupt layouts
    // only when it reads (docs/reliability.md "Corrupt files and the HDF5 library").
    const hssize_t n = H5Sget_simple_extent_npoints(space);
    const size_t width = cls == H5T_STRING ? H5Tget_size(type) : 8;
    if (n <= 0 || (cls != H5T_INTEGER && cls != H5T_FLOAT && cls != H5T_STRING) ||
        static_cast<uint64_t>(n) > kMaxProbedBytes / width)
      return;
    std::vector<uint8_t> buffer(static_cast<size_t>(n) * width);
    const hid_t mem = cls == H5T_INTEGER ? H5T_NATIVE_INT64
                      : cls == H5T_FLOAT ? H5T_NATIVE_DOUBLE
                                         : type.get();
    H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data());
    return;
  }
  if (H5Sget_simple_extent_ndims(space) > 1) return;
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  if (n <= 0 || n > (1 << 24)) return;
  Handle base(vlen ? H5Tget_super(type) : -1);
  if (vlen && (!base.valid() || H5Tget_class(base) != H5T_INTEGER)) return;
  try {
    check_vlen_heap(w.filename, w.file, d, name, vlen ? H5Tget_size(base) : 1);
  } catch (const Error&) {
    return;  // the parent's reader refuses it with this message
  }
  if (variable_string) {
    Handle mem(H5Tcopy(H5T_C_S1));
    H5Tset_size(mem, H5T_VARIABLE);
    std::vector<char*> ptrs(static_cast<size_t>(n), nullptr);
    if (H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()) >= 0)
      H5Dvlen_reclaim(mem, space, H5P_DEFAULT, ptrs.data());
  } else {
    Handle mem(H5Tvlen_create(H5T_NATIVE_INT64));
    std::vector<hvl_t> seqs(static_cast<size_t>(n));
    if (H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, seqs.data()) >= 0)
      H5Dvlen_reclaim(mem, space, H5P_DEFAULT, seqs.data());
  }
}

herr_t probe_object(hid_t /*root*/, const char* name, const H5O_info_t* info, void* data) {
  const Walk& w = *static_cast<const Walk*>(data);
  announce(w.fd, name);
  Handle obj(H5Oopen(w.file, name, H5P_DEFAULT));
  if (obj.valid()) H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_NATIVE, nullptr, probe_attribute, nullptr);
  if (info->type == H5O_TYPE_DATASET) probe_dataset(w, name);
  if (info->type == H5O_TYPE_GROUP) {
    Handle g(H5Gopen2(w.file, name, H5P_DEFAULT));
    H5G_info_t ginfo;
    if (g.valid()) H5Gget_info(g, &ginfo);
  }
  return 0;
}

[[noreturn]] void walk_in_child(const std::string& filename, int fd) {
  // A crash must end the child with its signal, whatever handlers the parent installed.
  alarm(0);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGALRM}) signal(sig, SIG_DFL);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  announce(fd, ".");
  const hid_t file = H5Fopen(filename.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file >= 0) {
    Walk w{fd, filename, file};
    H5Ovisit2(file, H5_INDEX_NAME, H5_ITER_NATIVE, probe_object, &w, H5O_INFO_BASIC);
  }
  announce(fd, "\x01done");
  _exit(0);  // no exit handlers, no flush of the parent's HDF5 files or streams
}

// ---- the parent

int probe_seconds() {
  const char* v = std::getenv("RABBIT_HDF5_PROBE_SECONDS");
  const int s = v && *v ? std::atoi(v) : kDefaultProbeSeconds;
  return s > 0 ? s : kDefaultProbeSeconds;
}

std::string file_identity(const std::string& filename) {
  struct stat st;
  if (stat(filename.c_str(), &st) != 0) return "";
  return filename + "|" + std::to_string(st.st_size) + "|" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec) + "|" + std::to_string(st.st_ino);
}

std::string last_object(const std::string& transcript) {
  std::string last;
  size_t start = 0;
  while (start < transcript.size()) {
    const size_t end = transcript.find('\n', start);
    if (end == std::string::npos) break;
    last = transcript.substr(start, end - start);
    start = end + 1;
  }
  return last;
}

}  // namespace

void probe_hdf5_structure(const std::string& filename) {
  static std::mutex mutex;
  static std::set<std::string> passed;
  const std::lock_guard<std::mutex> lock(mutex);
  const std::string identity = file_identity(filename);
  if (identity.empty() || passed.count(identity)) return;

  int fds[2];
  if (pipe(fds) != 0) return;  // no probe possible: the reader runs unprotected, as before
  const pid_t child = fork();
  if (child < 0) {
    close(fds[0]);
    close(fds[1]);
    return;
  }
  if (child == 0) {
    close(fds[0]);
    walk_in_child(filename, fds[1]);
  }
  close(fds[1]);
  const int seconds = probe_seconds();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  std::string transcript;
  bool timed_out = false;
  char buf[4096];
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
            .count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    const ssize_t got = read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // the child closed the pipe: finished or died
    transcript.append(buf, static_cast<size_t>(got));
  }
  close(fds[0]);
  if (timed_out) kill(child, SIGKILL);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  const bool finished = !timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
                        transcript.find("\x01done\n") != std::string::npos;
  if (finished) {
    passed.insert(identity);
    return;
  }
  const std::string object = last_object(transcript);
  const std::string where = object.empty() || object == "." ? "" : "object '" + object + "': ";
  const std::string why =
      timed_out ? "HDF5 did not finish reading it within " + std::to_string(seconds) + " s"
      : WIFSIGNALED(status)
          ? std::string("the HDF5 library crashed reading it: ") + strsignal(WTERMSIG(status))
          : "the structure walk ended early";
  throw InputError(filename + ": " + where + "corrupt HDF5 structure (" + why + ")");
}

}  // namespace rabbit::h5
