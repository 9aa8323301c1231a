#pragma once
// What the members of the ABCD family of param models share (docs/model.md "Bin-dependent param models"):
// the regions as the command line names them, their bins in the input, the monomial that predicts the
// signal region D and the MC correction of yieldCorrection:1. Used by abcd_param_models.cpp,
// smooth_abcd_param_models.cpp and abcd_isomt_param_models.cpp.
#include <Eigen/Core>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "rabbit/core/error.hpp"

namespace rabbit {

struct FitInputData;

namespace abcd {

/// One region as the command line names it: a channel and fixed axis indices ("ax:val").
struct RegionSpec {
  std::string channel;
  std::vector<std::pair<std::string, int64_t>> fixed;
};

/// A factor s_k^{power} of the monomial of D; `param` indexes the free regions.
struct Factor {
  int param;
  int power;
};

/// What distinguishes the members of the family: the free regions in parameter order, the order in which
/// the command line gives them (D last) and the monomial of D.
struct FamilyShape {
  const char* name;
  std::vector<const char*> free_regions;  // parameter order, e.g. A, B, C
  std::vector<int> cli_order;             // indices into free_regions in command-line order
  std::vector<Factor> numerator, denominator;
  size_t nregions() const { return free_regions.size() + 1; }
};

/// D = a·c/b; the command line gives A B C D.
const FamilyShape& abcd_shape();
/// D = c·ax·b²/(bx·a²); parameters A B C Ax Bx; the command line gives Ax Bx A B C D.
const FamilyShape& extended_abcd_shape();

/// What a family member is built from once its arguments are read: the process, the regions in parameter
/// order (the free ones, then D) and whether D carries the MC correction.
struct Regions {
  std::string process;
  std::vector<RegionSpec> regions;
  bool yield_correction = false;
};

[[noreturn]] void fail(const std::string& model, const std::string& what);
int64_t parse_int(const std::string& model, const std::string& token, const std::string& value);

/// If args[t] is "<key>:<integer>", consumes it and returns the integer.
bool take_integer_option(const std::string& model, const std::vector<std::string>& args, size_t& t,
                         const std::string& key, int64_t& value);

/// Reads "params:FILE" (rabbit's --dumpSmoothingParams output, HDF5): the starting values (dataset "params")
/// and the polynomial order (dataset "order") of a smooth model.
void read_starting_values(const std::string& model, const std::string& token, std::vector<double>& values,
                          int64_t& order);

/// Reads PROCESS and the regions (CHANNEL [AXIS:INDEX ...] each, in command-line order) from args[t...]
/// to the end, for a model of that shape, named `model` in errors; an unknown process is refused first.
Regions parse_process_and_regions(const std::string& model, const FamilyShape& shape, const FitInputData& in,
                                  const std::vector<std::string>& args, size_t t, bool yield_correction);

/// Index of the process, or a one-line error listing the processes.
int64_t process_index(const std::string& model, const FitInputData& in, const std::string& process);

/// The channel of a region (an error if unknown or storing flow bins) and, per axis, the fixed index or
/// −1 for a free axis.
struct ResolvedRegion {
  int64_t channel;
  std::vector<int64_t> fixed;
};
ResolvedRegion resolve_region(const std::string& model, const FitInputData& in, const RegionSpec& r);

/// Global bin of the channel at per-axis indices idx.
int64_t global_bin(const FitInputData& in, int64_t channel, const std::vector<int64_t>& idx);

/// Region slot of each global bin of the full axis: region k's bin i is k·n + i, −1 for a bin in no
/// region; a bin in two regions is refused (rabbit's scatter would be ill-defined).
std::vector<int64_t> region_slots(const std::string& model, int64_t nbinsfull,
                                  const std::vector<std::vector<int64_t>>& bins);

/// f_i = Π N^{e} / N_D of the process' MC templates over the regions' bins (free ones, then D; rabbit's
/// mc_factor_D), a zero template in a denominator replaced by 1.
Eigen::VectorXd mc_correction(const FitInputData& in, int64_t proc, const FamilyShape& shape,
                              const std::vector<std::vector<int64_t>>& bins);

}  // namespace abcd
}  // namespace rabbit
