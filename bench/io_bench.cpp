// io_bench: read throughput and peak memory of the fit-tensor reader.
//
//   io_bench [--nbins N] [--nproc P] [--nsyst S] [--dir DIR]
//
// Writes (with the HDF5 C API directly) a dense, asymmetric fit tensor three times — gzip level 4
// float64, Blosc2/LZ4 float64 (filter 32026, as rabbit writes since 2026-04), gzip float32 — then
// reads each file in a fresh child process (so that peak RSS belongs to the read alone) with
// read_fit_input, and reports MB/s of uncompressed double output and peak RSS growth relative
// to the uncompressed size of all arrays read.
#include <hdf5.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "rabbit/core/logging.hpp"
#include "rabbit/io/blosc_filters.hpp"
#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/io/hdf5_handle.hpp"

extern char** environ;

namespace {

using rabbit::h5::Handle;

long status_kib(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const size_t klen = std::strlen(key);
  while (std::getline(in, line)) {
    if (line.compare(0, klen, key) == 0) return std::atol(line.c_str() + klen + 1);
  }
  return -1;
}

enum class Storage { gzip, blosc2, gzip_float32 };

const char* storage_name(Storage s) {
  switch (s) {
    case Storage::gzip:
      return "gzip4-f64";
    case Storage::blosc2:
      return "blosc2lz4-f64";
    case Storage::gzip_float32:
      return "gzip4-f32";
  }
  return "?";
}

void write_strings(hid_t file, const char* name, const std::vector<std::string>& values) {
  Handle type(H5Tcopy(H5T_C_S1));
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  const hsize_t n = values.size();
  Handle space(H5Screate_simple(1, &n, nullptr));
  Handle d(H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  std::vector<const char*> ptrs;
  for (const auto& v : values) ptrs.push_back(v.c_str());
  if (n) H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data());
}

// A flat array with original_shape, chunked like rabbit (4 MiB chunks), filled block-wise by
// `fill(offset, count, out)` so that the writer never holds the whole array.
template <typename Fill>
void write_array(hid_t file, const char* name, const std::vector<int64_t>& shape, Storage storage,
                 Fill&& fill) {
  hsize_t n = 1;
  for (int64_t e : shape) n *= static_cast<hsize_t>(e);
  const bool f32 = storage == Storage::gzip_float32;
  const size_t item = f32 ? 4 : 8;
  const hsize_t chunk = std::max<hsize_t>(1, std::min<hsize_t>(n, (4u << 20) / item));
  Handle space(H5Screate_simple(1, &n, nullptr));
  Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
  H5Pset_chunk(dcpl, 1, &chunk);
  if (storage == Storage::blosc2) {
    const unsigned cd[7] = {1, 0, 8, static_cast<unsigned>(chunk * 8), 5, 1, 1};
    H5Pset_filter(dcpl, rabbit::io::kBlosc2FilterId, H5Z_FLAG_OPTIONAL, 7, cd);
  } else {
    H5Pset_deflate(dcpl, 4);
  }
  Handle d(
      H5Dcreate2(file, name, f32 ? H5T_IEEE_F32LE : H5T_IEEE_F64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT));
  std::vector<double> block;
  for (hsize_t start = 0; start < n; start += chunk) {
    const hsize_t count = std::min(chunk, n - start);
    block.resize(count);
    fill(start, count, block.data());
    Handle fspace(H5Dget_space(d));
    H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, nullptr, &count, nullptr);
    Handle mspace(H5Screate_simple(1, &count, nullptr));
    if (H5Dwrite(d, H5T_NATIVE_DOUBLE, mspace, fspace, H5P_DEFAULT, block.data()) < 0) {
      std::fprintf(stderr, "io_bench: writing %s failed\n", name);
      std::exit(1);
    }
  }
  const hsize_t rank = shape.size();
  Handle aspace(H5Screate_simple(1, &rank, nullptr));
  Handle a(H5Acreate2(d, "original_shape", H5T_STD_I64LE, aspace, H5P_DEFAULT, H5P_DEFAULT));
  H5Awrite(a, H5T_NATIVE_INT64, shape.data());
}

double pseudo_random(uint64_t i) {
  uint64_t x = i * 0x9E3779B97F4A7C15ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<double>(x >> 11) * 0x1.0p-53;
}

void write_tensor(const std::string& path, int64_t nbins, int64_t nproc, int64_t nsyst, Storage storage) {
  Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  std::vector<std::string> procs, systs;
  for (int64_t p = 0; p < nproc; ++p) procs.push_back("proc" + std::to_string(p));
  for (int64_t s = 0; s < nsyst; ++s) systs.push_back("syst" + std::to_string(s));
  write_strings(file, "hprocs", procs);
  write_strings(file, "hsignals", {procs[0]});
  write_strings(file, "hsysts", systs);
  write_strings(file, "hsystsnoconstraint", {});
  write_strings(file, "hsystgroups", {});
  {
    Handle type(H5Tvlen_create(H5T_STD_I32LE));
    const hsize_t zero = 0;
    Handle space(H5Screate_simple(1, &zero, nullptr));
    Handle d(H5Dcreate2(file, "hsystgroupidxs", type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    Handle noi(H5Dcreate2(file, "hnoiidxs", H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  }
  auto norm = [](uint64_t i) { return 1.0 + 100.0 * pseudo_random(i); };
  write_array(file, "hconstraintweights", {nsyst}, storage,
              [](hsize_t, hsize_t c, double* o) { std::fill(o, o + c, 1.0); });
  write_array(file, "hdata_obs", {nbins}, storage, [&](hsize_t s, hsize_t c, double* o) {
    for (hsize_t k = 0; k < c; ++k) o[k] = std::floor(norm(s + k) * 3);
  });
  write_array(file, "hnorm", {nbins, nproc}, storage, [&](hsize_t s, hsize_t c, double* o) {
    for (hsize_t k = 0; k < c; ++k) o[k] = norm(s + k);
  });
  write_array(file, "hlogk", {nbins, nproc, 2, nsyst}, storage, [&](hsize_t s, hsize_t c, double* o) {
    for (hsize_t k = 0; k < c; ++k) {
      const double u = pseudo_random(s + k + 12345);
      o[k] = u < 0.3 ? 0.0 : 0.1 * (u - 0.65);  // 30% exact zeros, the rest full-precision noise
    }
  });
  write_array(file, "hsumw", {nbins, nproc}, storage, [&](hsize_t s, hsize_t c, double* o) {
    for (hsize_t k = 0; k < c; ++k) o[k] = norm(s + k);
  });
  write_array(file, "hsumw2", {nbins, nproc}, storage, [&](hsize_t s, hsize_t c, double* o) {
    for (hsize_t k = 0; k < c; ++k) o[k] = 0.1 * norm(s + k);
  });
}

// Child: read the file, print "seconds baseline_kib peak_kib uncompressed_bytes".
int read_child(const std::string& path) {
  rabbit::set_verbosity(1);
  rabbit::io::ensure_blosc_filters();
  const long baseline = status_kib("VmRSS:");
  const auto t0 = std::chrono::steady_clock::now();
  const rabbit::FitInputData d = rabbit::read_fit_input(path);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const long peak = status_kib("VmHWM:");
  const double bytes =
      8.0 * static_cast<double>(d.norm.size() + d.logk.size() + d.sumw.size() + d.sumw2.size() +
                                d.data_obs.size() + d.constraintweights.size());
  std::printf("%.6f %ld %ld %.0f\n", seconds, baseline, peak, bytes);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--read-child") return read_child(argv[2]);
  int64_t nbins = 2000, nproc = 10, nsyst = 300;
  std::string dir = "io_bench_files";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--nbins")
      nbins = std::atoll(argv[i + 1]);
    else if (a == "--nproc")
      nproc = std::atoll(argv[i + 1]);
    else if (a == "--nsyst")
      nsyst = std::atoll(argv[i + 1]);
    else if (a == "--dir")
      dir = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: io_bench [--nbins N] [--nproc P] [--nsyst S] [--dir DIR]\n");
      return 2;
    }
  }
  rabbit::set_verbosity(1);
  rabbit::io::ensure_blosc_filters();
  std::filesystem::create_directories(dir);
  const double logk_mb = 8.0 * static_cast<double>(nbins * nproc * 2 * nsyst) / 1e6;
  std::printf("dense asymmetric tensor: nbins=%lld nproc=%lld nsyst=%lld (hlogk %.1f MB as float64)\n",
              static_cast<long long>(nbins), static_cast<long long>(nproc), static_cast<long long>(nsyst),
              logk_mb);
  std::printf("%-14s %10s %10s %10s %12s %14s\n", "storage", "file MB", "write s", "read s", "read MB/s",
              "peak RSS/out");
  for (Storage storage : {Storage::gzip, Storage::blosc2, Storage::gzip_float32}) {
    const std::string path = dir + "/tensor_" + storage_name(storage) + ".hdf5";
    const auto t0 = std::chrono::steady_clock::now();
    write_tensor(path, nbins, nproc, nsyst, storage);
    const double write_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double file_mb = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
    // Fresh process per read: VmHWM then measures this read only.
    int pipefd[2];
    if (pipe(pipefd) != 0) return 1;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipefd[1], 1);
    posix_spawn_file_actions_addclose(&actions, pipefd[0]);
    std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    std::string flag = "--read-child";
    char* child_argv[] = {self.data(), flag.data(), const_cast<char*>(path.c_str()), nullptr};
    pid_t pid = 0;
    if (posix_spawn(&pid, self.c_str(), &actions, nullptr, child_argv, environ) != 0) return 1;
    close(pipefd[1]);
    std::string out;
    char buf[256];
    ssize_t got;
    while ((got = read(pipefd[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(got));
    close(pipefd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    posix_spawn_file_actions_destroy(&actions);
    double seconds = 0, bytes = 0;
    long baseline = 0, peak = 0;
    if (std::sscanf(out.c_str(), "%lf %ld %ld %lf", &seconds, &baseline, &peak, &bytes) != 4) {
      std::fprintf(stderr, "io_bench: read child failed: %s\n", out.c_str());
      return 1;
    }
    const double peak_ratio = static_cast<double>(peak - baseline) * 1024.0 / bytes;
    std::printf("%-14s %10.1f %10.2f %10.3f %12.1f %13.3fx\n", storage_name(storage), file_mb, write_s,
                seconds, bytes / 1e6 / seconds, peak_ratio);
    std::fflush(stdout);
    std::filesystem::remove(path);
  }
  return 0;
}
