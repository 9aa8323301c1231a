#include "external_postfit.hpp"

#include <fmt/format.h>

#include <map>

#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/io/hdf5_reader.hpp"
#include "rabbit/postfit/result_file.hpp"

namespace rabbit::cli {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

ExternalPostfit::ExternalPostfit(const FitOptions& o, const std::vector<std::string>& names) {
  const std::string& path = *o.external_postfit;
  const std::optional<std::string>& key = o.external_postfit_result;
  bool plain = false;
  {
    h5::Reader reader(path);
    plain = reader.is_dataset("x") && reader.is_dataset("parms");
    if (plain) {
      names_ = reader.read_strings("parms");
      const auto xs = reader.read_doubles(reader.info("x"));
      x_ = Eigen::Map<const VectorXd>(xs.data(), static_cast<Eigen::Index>(xs.size()));
      if (reader.is_dataset("cov")) {
        const auto info = reader.info("cov");
        const auto n = static_cast<int64_t>(xs.size());
        if (info.rank() != 2 || info.shape[0] != n || info.shape[1] != n)
          reader.fail("cov", fmt::format("shape {} does not match x [{}]", info.shape_string(), n));
        const auto cs = reader.read_doubles(info);
        cov_ = Eigen::Map<const RowMajorMatrix>(cs.data(), n, n);
      }
      if (key) log().warn("--externalPostfitResult is ignored for the plain file {}", path);
    }
  }
  if (!plain) {
    result::ResultReader reader(path);
    const std::string group = reader.pick_result(key);
    const auto parms = reader.hist(group + "/parms");
    if (parms.axis_labels.empty())
      throw InputError(fmt::format("{}: {}/parms has no parameter names", path, group));
    names_ = parms.axis_labels[0];
    x_ = Eigen::Map<const VectorXd>(parms.values.data(), static_cast<Eigen::Index>(parms.values.size()));
    if (reader.exists(group + "/cov")) {
      const auto c = reader.hist(group + "/cov");
      const auto n = x_.size();
      if (static_cast<Eigen::Index>(c.values.size()) != n * n)
        throw InputError(
            fmt::format("{}: {}/cov has {} values for {} parameters", path, group, c.values.size(), n));
      cov_ = Eigen::Map<const RowMajorMatrix>(c.values.data(), n, n);
    }
  }
  if (static_cast<Eigen::Index>(names_.size()) != x_.size())
    throw InputError(fmt::format("{}: {} parameter names for {} values", path, names_.size(), x_.size()));

  index_.assign(names.size(), -1);
  std::map<std::string, int64_t> in_file;
  for (size_t j = 0; j < names_.size(); ++j) in_file.emplace(names_[j], static_cast<int64_t>(j));
  int64_t common = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    auto it = in_file.find(names[i]);
    if (it != in_file.end()) {
      index_[i] = it->second;
      ++common;
    }
  }
  if (common == 0)
    throw InputError(fmt::format("{}: --externalPostfit shares no parameter name with this fit", path));
  bool unfitted = o.no_fit;  // the Asimov fit is never minimised either
  for (auto t : o.toys) unfitted = unfitted || t == -1;
  if (has_covariance() && unfitted && (o.do_impacts || o.global_impacts || o.gaussian_global_impacts))
    throw OptionError(
        "--externalPostfit with a covariance replaces the Hessian of unfitted results (--noFit, "
        "-t -1), which impacts need: drop the impact options or fit");
  log().info("External postfit {}: {} of {} parameters loaded{}", path, common, names.size(),
             has_covariance() ? " with their covariance" : "");
}

void ExternalPostfit::apply(VectorXd& x, VectorXd& x_start, MatrixXd& cov) const {
  const int64_t n = static_cast<int64_t>(index_.size());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t j = index_[i];
    if (j < 0) continue;
    x(i) = x_start(i) = x_(j);
    if (!has_covariance()) continue;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t l = index_[k];
      if (l >= 0)
        cov(i, k) = cov_(j, l);
      else if (k != i)
        cov(i, k) = cov(k, i) = 0.0;
    }
  }
}

}  // namespace rabbit::cli
