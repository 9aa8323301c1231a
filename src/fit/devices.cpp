#include "rabbit/fit/devices.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>

#include "rabbit/core/error.hpp"
#include "rabbit/fit/cuda_plugin_loader.hpp"

namespace rabbit {

std::string PciAddress::str() const {
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", domain, bus, device, function);
}

std::optional<PciAddress> parse_pci_bus_id(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() &&
         (text.back() == ' ' || text.back() == '\t' || text.back() == '\r' || text.back() == '\n'))
    text.remove_suffix(1);
  // domain:bus:device.function, every field plain hex digits (no "0x", no sign).
  uint64_t field[4] = {0, 0, 0, 0};
  const char separators[3] = {':', ':', '.'};
  int index = 0, digits = 0;
  for (char ch : text) {
    if (index < 3 && ch == separators[index]) {
      if (digits == 0) return std::nullopt;
      ++index;
      digits = 0;
      continue;
    }
    int value = -1;
    if (ch >= '0' && ch <= '9')
      value = ch - '0';
    else if (ch >= 'a' && ch <= 'f')
      value = ch - 'a' + 10;
    else if (ch >= 'A' && ch <= 'F')
      value = ch - 'A' + 10;
    if (value < 0 || ++digits > 8) return std::nullopt;
    field[index] = field[index] * 16 + static_cast<uint64_t>(value);
  }
  if (index != 3 || digits == 0) return std::nullopt;
  const uint64_t domain = field[0], bus = field[1], device = field[2], function = field[3];
  PciAddress a;
  a.domain = static_cast<uint32_t>(domain);
  a.bus = static_cast<uint32_t>(bus);
  a.device = static_cast<uint32_t>(device);
  a.function = static_cast<uint32_t>(function);
  return a;
}

void validate_device_options(int n_devices, const std::vector<int>& explicit_indices) {
  if (n_devices < 1) throw OptionError(fmt::format("--nDevices must be >= 1, got {}", n_devices));
  if (explicit_indices.empty()) return;
  if (static_cast<int>(explicit_indices.size()) != n_devices)
    throw OptionError(fmt::format("--devices lists {} device(s) but --nDevices is {}; they must match.",
                                  explicit_indices.size(), n_devices));
  for (int i : explicit_indices)
    if (i < 0)
      throw OptionError(
          fmt::format("--devices indices must be >= 0, got {}", fmt::join(explicit_indices, ",")));
  // An index may repeat: `--devices 0,0` puts two shards on one GPU (docs/sharding-and-gpu.md
  // "Device selection"), which exercises the multi-device code on a one-GPU machine.
}

GpuSelection choose_gpus(int n_devices, const std::vector<int>& explicit_indices,
                         const std::vector<GpuInfo>& visible,
                         const std::optional<std::vector<GpuOccupancy>>& occupancy,
                         const std::string& query_failure) {
  validate_device_options(n_devices, explicit_indices);
  GpuSelection sel;
  if (visible.empty()) {
    if (!explicit_indices.empty())
      throw ResourceError(fmt::format("--devices {} asks for GPU(s), but no GPU is visible{}",
                                      fmt::join(explicit_indices, ","),
                                      query_failure.empty() ? "" : " (" + query_failure + ")"));
    return sel;
  }
  // Positions follow PCI bus order, the order nvidia-smi and NVML number devices in.
  std::vector<GpuInfo> by_bus = visible;
  std::stable_sort(by_bus.begin(), by_bus.end(),
                   [](const GpuInfo& a, const GpuInfo& b) { return a.pci < b.pci; });
  auto finish = [&](std::vector<GpuInfo> chosen) {
    std::sort(chosen.begin(), chosen.end(), [](const GpuInfo& a, const GpuInfo& b) { return a.pci < b.pci; });
    sel.gpus = std::move(chosen);
    return sel;
  };
  if (!explicit_indices.empty()) {
    std::vector<GpuInfo> chosen;
    for (int i : explicit_indices) {
      if (i >= static_cast<int>(by_bus.size()))
        throw ResourceError(fmt::format("--devices {}: index {} out of range: {} GPU(s) visible",
                                        fmt::join(explicit_indices, ","), i, by_bus.size()));
      chosen.push_back(by_bus[i]);
    }
    return finish(std::move(chosen));
  }
  if (static_cast<int>(by_bus.size()) <= n_devices) return finish(by_bus);
  if (!occupancy) {
    sel.warnings.push_back(fmt::format("Could not query GPU occupancy ({}); using the first {} GPU(s).",
                                       query_failure.empty() ? "no NVML and no nvidia-smi" : query_failure,
                                       n_devices));
    return finish(std::vector<GpuInfo>(by_bus.begin(), by_bus.begin() + n_devices));
  }
  std::map<PciAddress, uint64_t> used;
  for (const auto& o : *occupancy) used[o.pci] = o.used_bytes;
  std::vector<GpuInfo> ordered = by_bus;
  // Missing entries count as 0; stable, so ties keep bus order.
  std::stable_sort(ordered.begin(), ordered.end(), [&](const GpuInfo& a, const GpuInfo& b) {
    auto ua = used.count(a.pci) ? used.at(a.pci) : 0, ub = used.count(b.pci) ? used.at(b.pci) : 0;
    return ua < ub;
  });
  ordered.resize(n_devices);
  std::vector<std::string> desc;
  for (const auto& g : ordered)
    desc.push_back(
        fmt::format("{} ({} MiB in use)", g.pci.str(), used.count(g.pci) ? used.at(g.pci) >> 20 : 0));
  sel.info.push_back(fmt::format("Chose the {} least-occupied of {} visible GPU(s): {}", n_devices,
                                 by_bus.size(), fmt::join(desc, ", ")));
  return finish(std::move(ordered));
}

std::vector<GpuOccupancy> parse_nvidia_smi_memory(std::string_view csv) {
  std::vector<GpuOccupancy> out;
  while (!csv.empty()) {
    const size_t eol = csv.find('\n');
    std::string_view line = csv.substr(0, eol);
    csv = eol == std::string_view::npos ? std::string_view() : csv.substr(eol + 1);
    const size_t comma = line.find(',');
    if (comma == std::string_view::npos) continue;
    auto pci = parse_pci_bus_id(line.substr(0, comma));
    const std::string used(line.substr(comma + 1));
    char* end = nullptr;
    const double mib = std::strtod(used.c_str(), &end);
    if (!pci || end == used.c_str() || mib < 0) continue;
    out.push_back({*pci, static_cast<uint64_t>(mib * 1048576.0)});
  }
  return out;
}

namespace {

// The few NVML declarations needed (there is no nvml.h on these machines); the C API and these
// struct layouts are stable across driver versions.
using NvmlReturn = int;
using NvmlDevice = void*;
struct NvmlMemory {
  unsigned long long total, free, used;
};
struct NvmlPciInfo {
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};

class NvmlLibrary {
 public:
  NvmlLibrary() {
    handle_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle_) return;
    init_ = reinterpret_cast<NvmlReturn (*)()>(dlsym(handle_, "nvmlInit_v2"));
    shutdown_ = reinterpret_cast<NvmlReturn (*)()>(dlsym(handle_, "nvmlShutdown"));
    count_ = reinterpret_cast<NvmlReturn (*)(unsigned*)>(dlsym(handle_, "nvmlDeviceGetCount_v2"));
    by_index_ = reinterpret_cast<NvmlReturn (*)(unsigned, NvmlDevice*)>(
        dlsym(handle_, "nvmlDeviceGetHandleByIndex_v2"));
    memory_ =
        reinterpret_cast<NvmlReturn (*)(NvmlDevice, NvmlMemory*)>(dlsym(handle_, "nvmlDeviceGetMemoryInfo"));
    pci_ =
        reinterpret_cast<NvmlReturn (*)(NvmlDevice, NvmlPciInfo*)>(dlsym(handle_, "nvmlDeviceGetPciInfo_v3"));
    if (!pci_)
      pci_ = reinterpret_cast<NvmlReturn (*)(NvmlDevice, NvmlPciInfo*)>(
          dlsym(handle_, "nvmlDeviceGetPciInfo_v2"));
  }
  ~NvmlLibrary() {
    if (initialised_ && shutdown_) shutdown_();
    if (handle_) dlclose(handle_);
  }
  std::optional<std::vector<GpuOccupancy>> query(std::string* failure) {
    if (!handle_) return fail(failure, "libnvidia-ml.so.1 not found");
    if (!init_ || !count_ || !by_index_ || !memory_ || !pci_)
      return fail(failure, "NVML lacks a needed function");
    if (NvmlReturn r = init_(); r != 0) return fail(failure, fmt::format("nvmlInit failed (code {})", r));
    initialised_ = true;
    unsigned n = 0;
    if (NvmlReturn r = count_(&n); r != 0)
      return fail(failure, fmt::format("nvmlDeviceGetCount failed (code {})", r));
    std::vector<GpuOccupancy> out;
    for (unsigned i = 0; i < n; ++i) {
      NvmlDevice dev = nullptr;
      NvmlMemory mem{};
      NvmlPciInfo pci{};
      if (by_index_(i, &dev) != 0 || memory_(dev, &mem) != 0 || pci_(dev, &pci) != 0)
        return fail(failure, fmt::format("NVML could not describe GPU {}", i));
      out.push_back({PciAddress{pci.domain, pci.bus, pci.device, 0}, mem.used});
    }
    return out;
  }

 private:
  static std::optional<std::vector<GpuOccupancy>> fail(std::string* failure, std::string why) {
    if (failure) *failure = std::move(why);
    return std::nullopt;
  }
  void* handle_ = nullptr;
  bool initialised_ = false;
  NvmlReturn (*init_)() = nullptr;
  NvmlReturn (*shutdown_)() = nullptr;
  NvmlReturn (*count_)(unsigned*) = nullptr;
  NvmlReturn (*by_index_)(unsigned, NvmlDevice*) = nullptr;
  NvmlReturn (*memory_)(NvmlDevice, NvmlMemory*) = nullptr;
  NvmlReturn (*pci_)(NvmlDevice, NvmlPciInfo*) = nullptr;
};

std::optional<std::vector<GpuOccupancy>> query_nvidia_smi(std::string* failure) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(
      popen("nvidia-smi --query-gpu=pci.bus_id,memory.used --format=csv,noheader,nounits 2>/dev/null", "r"),
      pclose);
  if (!pipe) {
    if (failure) *failure = "nvidia-smi could not be started";
    return std::nullopt;
  }
  std::string text;
  std::array<char, 4096> buf{};
  size_t got = 0;
  while ((got = std::fread(buf.data(), 1, buf.size(), pipe.get())) > 0) text.append(buf.data(), got);
  const int status = pclose(pipe.release());
  auto parsed = parse_nvidia_smi_memory(text);
  if (status != 0 || parsed.empty()) {
    if (failure)
      *failure = status != 0 ? "nvidia-smi failed or is not installed" : "nvidia-smi printed no GPU";
    return std::nullopt;
  }
  return parsed;
}

}  // namespace

std::optional<std::vector<GpuOccupancy>> query_gpu_occupancy(std::string* failure) {
  std::string nvml_failure, smi_failure;
  NvmlLibrary nvml;
  if (auto r = nvml.query(&nvml_failure)) return r;
  if (auto r = query_nvidia_smi(&smi_failure)) return r;
  if (failure) *failure = nvml_failure + "; " + smi_failure;
  return std::nullopt;
}

std::optional<std::vector<GpuOccupancy>> query_nvml_occupancy(std::string* failure) {
  NvmlLibrary nvml;
  return nvml.query(failure);
}

std::optional<std::vector<GpuOccupancy>> query_nvidia_smi_occupancy(std::string* failure) {
  return query_nvidia_smi(failure);
}

// RABBIT_CUDA_PLUGIN_BUILT (0 or 1) is set by CMake on this library: whether the build made
// rabbit_cuda_plugin.so. It only chooses messages; the plugin itself is found at run time.
bool built_with_cuda() {
  return RABBIT_CUDA_PLUGIN_BUILT != 0;
}

std::vector<GpuInfo> visible_gpus(std::string* failure) {
  std::vector<GpuInfo> out;
  if (!built_with_cuda()) {
    if (failure) *failure = "this build has no CUDA backend";
    return out;
  }
  const CudaPluginV1* plugin = cuda_plugin(failure);
  if (!plugin) return out;
  for (const auto& d : plugin->visible_devices(failure)) {
    auto pci = parse_pci_bus_id(d.pci_bus_id);
    out.push_back({d.ordinal, pci.value_or(PciAddress{0, 0, static_cast<uint32_t>(d.ordinal), 0}), d.name,
                   d.total_bytes});
  }
  return out;
}

GpuSelection select_gpus(int n_devices, const std::vector<int>& explicit_indices) {
  validate_device_options(n_devices, explicit_indices);
  std::string failure;
  const std::vector<GpuInfo> visible = visible_gpus(&failure);
  if (visible.empty()) {
    GpuSelection none = choose_gpus(n_devices, explicit_indices, visible, std::nullopt, failure);
    none.unavailable = failure;
    return none;
  }
  std::optional<std::vector<GpuOccupancy>> occupancy;
  std::string query_failure;
  if (explicit_indices.empty() && static_cast<int>(visible.size()) > n_devices)
    occupancy = query_gpu_occupancy(&query_failure);
  return choose_gpus(n_devices, explicit_indices, visible, occupancy, query_failure);
}

}  // namespace rabbit
