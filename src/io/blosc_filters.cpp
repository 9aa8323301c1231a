// Registration of the Blosc (32001) and Blosc2 (32026) HDF5 filters, with plugin precedence.
#include "rabbit/io/blosc_filters.hpp"

#include <hdf5.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>

#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/io/hdf5_reader.hpp"

namespace rabbit::io {
namespace {

thread_local std::string g_filter_error;

// set_local hook (used only when writing through our filters): fills the slots that depend on
// the dataset, as the reference filters do: [0] filter revision, [1] format version (Blosc) or
// block size (Blosc2), [2] type size, [3] chunk bytes; the caller's [4..] (clevel, shuffle,
// codec) are kept.
template <int FilterId, unsigned Revision, unsigned Slot1>
herr_t set_local(hid_t dcpl, hid_t type, hid_t /*space*/) {
  unsigned flags = 0;
  size_t nelements = 8;
  unsigned values[8] = {0};
  if (H5Pget_filter_by_id2(dcpl, FilterId, &flags, &nelements, values, 0, nullptr, nullptr) < 0) {
    return -1;
  }
  if (nelements < 4) nelements = 4;
  if (nelements > 7) nelements = 7;
  hsize_t chunk[32];
  const int rank = H5Pget_chunk(dcpl, 32, chunk);
  if (rank < 0) return -1;
  size_t typesize = H5Tget_size(type);
  if (typesize == 0) return -1;
  size_t basesize = typesize;
  if (H5Tget_class(type) == H5T_ARRAY) {
    h5::Handle super(H5Tget_super(type));
    basesize = H5Tget_size(super);
  }
  size_t chunk_bytes = typesize;
  for (int i = 0; i < rank; ++i) chunk_bytes *= chunk[i];
  values[0] = Revision;
  values[1] = Slot1;
  values[2] = static_cast<unsigned>(basesize);
  values[3] = static_cast<unsigned>(chunk_bytes);
  return H5Pmodify_filter(dcpl, FilterId, flags, nelements, values);
}

const H5Z_class2_t kBloscClass = {H5Z_CLASS_T_VERS,
                                  static_cast<H5Z_filter_t>(kBloscFilterId),
                                  1,
                                  1,
                                  "blosc (rabbit-cpp, c-blosc)",
                                  nullptr,
                                  set_local<kBloscFilterId, 2, 2>,
                                  detail::blosc1_filter};

const H5Z_class2_t kBlosc2Class = {H5Z_CLASS_T_VERS,
                                   static_cast<H5Z_filter_t>(kBlosc2FilterId),
                                   1,
                                   1,
                                   "blosc2 (rabbit-cpp, C-Blosc2)",
                                   nullptr,
                                   set_local<kBlosc2FilterId, 1, 0>,
                                   detail::blosc2_filter};

enum class Policy { automatic, builtin, plugin };

Policy policy_from_environment() {
  const char* env = std::getenv("RABBIT_BLOSC_FILTERS");
  if (env == nullptr) return Policy::automatic;
  const std::string value = env;
  if (value.empty() || value == "auto") return Policy::automatic;
  if (value == "builtin") return Policy::builtin;
  if (value == "plugin") return Policy::plugin;
  log().warn("RABBIT_BLOSC_FILTERS='{}' is not one of auto, builtin, plugin; using auto", value);
  return Policy::automatic;
}

FilterSource install(const H5Z_class2_t& cls, Policy policy) {
  const int id = static_cast<int>(cls.id);
  if (policy != Policy::builtin) {
    // H5Zfilter_avail also searches the dynamic plugin path (HDF5_PLUGIN_PATH or the library's
    // default directory) and loads a plugin it finds there.
    h5::ErrorSilencer quiet;
    if (H5Zfilter_avail(static_cast<H5Z_filter_t>(id)) > 0) {
      log().debug("HDF5 filter {} ({}) already available (plugin or earlier registration): using it", id,
                  h5::filter_name(id));
      return FilterSource::external;
    }
    if (policy == Policy::plugin) {
      log().debug("HDF5 filter {} not available and RABBIT_BLOSC_FILTERS=plugin", id);
      return FilterSource::unavailable;
    }
  }
  h5::ErrorSilencer quiet;
  if (H5Zregister(&cls) < 0) {
    log().warn("could not register the built-in HDF5 filter {} ({}): {}", id, h5::filter_name(id),
               h5::current_hdf5_error());
    return FilterSource::unavailable;
  }
  return FilterSource::builtin;
}

}  // namespace

std::string take_filter_error() {
  return std::exchange(g_filter_error, std::string());
}
void set_filter_error(std::string message) {
  g_filter_error = std::move(message);
}

std::string to_string(FilterSource source) {
  switch (source) {
    case FilterSource::builtin:
      return "built-in";
    case FilterSource::external:
      return "external";
    case FilterSource::unavailable:
      return "unavailable";
  }
  return "?";
}

const BloscFilterStatus& ensure_blosc_filters() {
  static BloscFilterStatus status;
  static std::once_flag once;
  std::call_once(once, [] {
    const Policy policy = policy_from_environment();
    status.blosc = install(kBloscClass, policy);
    status.blosc2 = install(kBlosc2Class, policy);
  });
  return status;
}

}  // namespace rabbit::io
