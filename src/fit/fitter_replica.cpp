#include "rabbit/fit/fitter_replica.hpp"

#include <algorithm>
#include <typeinfo>

#include "rabbit/core/error.hpp"
#include "rabbit/fit/multi_device_fitter.hpp"
#include "rabbit/fit/shard_registry.hpp"
#include "rabbit/model/global_terms.hpp"

namespace rabbit {

bool replicable_on_cpu(const Fitter& fitter) {
  // Only the two fitter classes make_fitter builds; a subclass (the MPI coordinator's) has state of its own.
  const auto& type = typeid(fitter);
  if (type != typeid(Fitter) && type != typeid(MultiDeviceFitter)) return false;
  if (fitter.dense_linalg_ptr()) return false;  // cuSOLVER: a GPU fit
  for (const auto& s : fitter.shards())
    if (s->device() != "cpu" || !s->yield_model()) return false;
  return true;
}

std::unique_ptr<Fitter> replicate_on_cpu(const Fitter& fitter, int threads) {
  if (!replicable_on_cpu(fitter))
    throw Error("replicate_on_cpu: the fitter has shards that are not CPU shards");
  // The model's state is copied; its global terms read the model by reference, so the copy needs its own
  // (rabbit/model/global_terms.hpp).
  auto model = std::make_shared<Model>(fitter.model());
  model->global_terms = make_global_terms(*model);

  const auto& originals = fitter.shards();
  const int per_shard = std::max(1, threads / static_cast<int>(originals.size()));
  const ShardKind& kind = shard_kind("cpu");
  std::vector<std::unique_ptr<ShardEvaluator>> shards;
  for (const auto& s : originals) {
    ShardSpec spec;
    spec.model = model;
    spec.bin_begin = s->bin_begin();
    spec.bin_end = s->bin_end();
    spec.threads = per_shard;
    shards.push_back(kind.create(spec));
  }
  std::unique_ptr<Fitter> out;
  if (shards.size() == 1)
    out = std::make_unique<Fitter>(model, std::move(shards));
  else
    out = std::make_unique<MultiDeviceFitter>(model, std::move(shards));
  out->set_hvp_batch(fitter.hvp_batch());
  out->set_postfit_threads(threads);
  out->set_observed(fitter.observed(), fitter.observed_variances());
  if (fitter.beta_centres().size()) out->set_beta_centres(fitter.beta_centres());
  if (fitter.stored_beta().size()) out->set_stored_beta(fitter.stored_beta());
  return out;
}

}  // namespace rabbit
