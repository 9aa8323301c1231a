#pragma once
// The state that the parts of one rabbit_fit run share (docs/architecture.md, "The rabbit_fit
// run"): the options, the input, the model, the fitter and the reported-parameter layout. It is
// filled once by load_fit_context and read by the fit session, the toy generator, the impacts and
// the result writers; only the toy generator and the run sequence change the fitter's data.
#include <Eigen/Core>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rabbit/cli/options.hpp"
#include "rabbit/fit/fitter.hpp"
#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/model/model.hpp"
#include "rabbit/model/yield_model.hpp"
#include "rabbit/postfit/uncertainties.hpp"

namespace rabbit::cli {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// Python's str() of a float: shortest round-trip representation (rabbit's log lines).
std::string py_float(double v);

struct FitContext {
  explicit FitContext(const FitOptions& o) : options(o) {}

  const FitOptions& options;
  std::shared_ptr<FitInputData> input;
  std::shared_ptr<Model> model;
  std::unique_ptr<Fitter> fitter;
  /// Reported parameters (POIs, NOIs), systematic groups, the stat set, floating indices.
  postfit::ImpactLayout layout;
  std::vector<std::string> reported_names;
  std::vector<std::string> trad_groups;  // columns of impacts_grouped
  std::vector<std::string> glob_groups;  // columns of (gaussian_)global_impacts_grouped
  bool bb_on = false;
  bool bb_full = false;

  /// The yields for postfit work: the first shard of a CPU fit, a host yield model over all bins
  /// for CUDA fits (Fitter::yield_model keeps its data and BB state in step with the fit).
  YieldModel& yield_model() const { return fitter->yield_model(); }
  /// ξ(x), the model's internal coordinates; d1 (optional) gets dξ/dx.
  Eigen::VectorXd xi(const Eigen::VectorXd& x, Eigen::VectorXd* d1 = nullptr) const;
};

// ---- the load steps, in the order the run takes them ----
/// Reads the input, checks the run at its front door (rabbit/cli/validate_run.hpp) and prints the input's
/// channels as rabbit does.
void read_input(FitContext& ctx);
/// Builds the model (blinding active when a fit of observed data is asked for).
void build_run_model(FitContext& ctx);
/// The model options of the run (the command line's, with blinding active when a fit of observed
/// data is asked for).
ModelOptions run_model_options(const FitOptions& o);
/// Builds the fitter on the requested backend and devices, or with the run's fitter factory when one
/// is set and builds one.
void make_run_fitter(FitContext& ctx);
/// A replacement of make_fitter for the fitters of this process's run (the MPI coordinator's,
/// cli/mpi_run.hpp); returning null declines and make_fitter builds the fitter.
using RunFitterFactory = std::function<std::unique_ptr<Fitter>(FitContext&)>;
RunFitterFactory& run_fitter_factory();
/// A replacement of read_fit_input for this process's run input (the MPI coordinator reads the logk
/// of its own bins only, cli/mpi_run.cpp); unset: the whole file.
using RunInputReader = std::function<FitInputData(const FitOptions&)>;
RunInputReader& run_input_reader();
/// The reported parameters and groups (docs/output-format.md "Traditional impacts", "Global impacts") and the
/// BB flags.
void describe_layout(FitContext& ctx);
/// Arms the regularisers at the start of a fit (rabbit's defaultassign, docs/model.md "The regularisation
/// term"): the full expected yields at x with the stored β (β⁰ after the reset) and no blinding offsets.
void arm_regularizers(FitContext& ctx, const Eigen::VectorXd& x);
/// Refuses a run whose dense prefit and postfit matrices do not fit in the memory this process may
/// still allocate (rabbit/core/memory_limit.hpp), naming the steps, the need and the limit.
void check_memory(const FitContext& ctx);

}  // namespace rabbit::cli
