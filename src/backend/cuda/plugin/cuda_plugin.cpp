// The entry point of rabbit_cuda_plugin.so: the table of backend/cuda/cuda_plugin.hpp over the
// CUDA backend's functions. Only this file is the plugin's own source; the rest of the backend is
// the rabbit_backend_cuda library linked into it (docs/sharding-and-gpu.md "The CUDA plugin").
#include "rabbit/backend/cuda/cuda_plugin.hpp"

#include "rabbit/backend/cuda/cusolver_linalg.hpp"
#include "rabbit/core/logging.hpp"

namespace {

const void* core_identity() {
  return &rabbit::log();
}

std::shared_ptr<const rabbit::DenseLinalg> make_dense_linalg(int ordinal) {
  return rabbit::make_cusolver_linalg(ordinal);
}

rabbit::CudaPluginV1 make_table() {
  rabbit::CudaPluginV1 t;
  t.core_identity = core_identity;
  t.visible_devices = rabbit::cuda_visible_devices;
  t.make_shard = rabbit::make_cuda_shard;
  t.shard_bytes = rabbit::cuda_shard_bytes;
  t.make_dense_linalg = make_dense_linalg;
  t.copy_bandwidth = rabbit::cuda_copy_bandwidth;
  t.blas_rate = rabbit::cuda_blas_rate;
  return t;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const rabbit::CudaPluginV1* rabbit_cuda_plugin_v1() {
  static const rabbit::CudaPluginV1 table = make_table();
  return &table;
}
