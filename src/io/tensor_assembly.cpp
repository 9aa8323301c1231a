// TensorWriter::assemble: the booked channels as the arrays of a fit tensor (docs/input-reader.md
// "Datasets", conventions of docs/tensor-writer.md "Conventions"), without HDF5; and their sparse
// form. Written by tensor_file.cpp.
#include "tensor_assembly.hpp"

#include <Eigen/LU>
#include <algorithm>
#include <map>

#include "rabbit/core/error.hpp"
#include "rabbit/io/tensor_writer.hpp"

namespace rabbit {

io::TensorAssembly TensorWriter::assemble(const WriteOptions& options) const {
  for (const auto& s : signals_)
    if (backgrounds_.count(s))
      throw Error("TensorWriter: process '" + s + "' declared both as signal and as background");
  if (!options.write_meta && systematic_type_ == SystematicType::normal)
    throw OptionError(
        "TensorWriter: writing without meta would lose systematic_type 'normal' "
        "(readers default to log_normal); write the meta group");
  if (channels_.empty()) throw Error("TensorWriter: no channels");

  io::TensorAssembly a;
  a.layout = channels();
  const std::vector<ChannelInfo>& layout = a.layout;
  auto find_channel = [&](const std::string& name) -> const Channel& {
    for (const auto& ch : channels_)
      if (ch.info.name == name) return ch;
    throw Error("TensorWriter: internal error: channel " + name);
  };
  int64_t& nbins = a.nbins;
  int64_t& nbinsfull = a.nbinsfull;
  for (const auto& info : layout) {
    const Channel& ch = find_channel(info.name);
    nbinsfull += ch.nbins;
    if (info.masked) continue;
    nbins += ch.nbins;
    if (!ch.data_obs) throw Error("TensorWriter: channel '" + info.name + "' has no data (add_data)");
    for (const auto& p : pseudodata_names_)
      if (!ch.pseudodata.count(p))
        throw Error("TensorWriter: pseudodata '" + p + "' missing for channel '" + info.name + "'");
  }
  if (data_covariance_ && data_covariance_->rows() != nbins)
    throw Error("TensorWriter: data covariance is " + std::to_string(data_covariance_->rows()) + "x" +
                std::to_string(data_covariance_->cols()) + ", expected " + std::to_string(nbins) +
                " (all non-masked bins)");

  a.procs = procs();
  a.signals = signals();
  a.systs = systs();
  const std::vector<std::string>& procs_list = a.procs;
  const std::vector<std::string>& systs_list = a.systs;
  const int64_t nproc = a.nproc = static_cast<int64_t>(procs_list.size());
  const int64_t nsyst = a.nsyst = static_cast<int64_t>(systs_list.size());
  std::map<std::string, int64_t> proc_index, syst_index;
  for (int64_t i = 0; i < nproc; ++i) proc_index[procs_list[i]] = i;
  for (int64_t i = 0; i < nsyst; ++i) syst_index[systs_list[i]] = i;

  // Without meta, readers assume the asymmetric layout (docs/input-reader.md "Defaults without meta",
  // docs/tensor-writer.md "Without meta").
  a.symmetric_tensor = symmetric_tensor_;
  a.systematic_type = systematic_type_;
  const bool symmetric_layout = a.symmetric_layout = symmetric_tensor_ && options.write_meta;
  const int64_t width = a.width = symmetric_layout ? nsyst : 2 * nsyst;

  std::vector<double>& norm = a.norm;
  std::vector<double>& sumw2 = a.sumw2;
  std::vector<double>& logk = a.logk;
  norm.assign(static_cast<size_t>(nbinsfull * nproc), 0.0);
  sumw2.assign(norm.size(), 0.0);
  logk.assign(static_cast<size_t>(nbinsfull * nproc * width), 0.0);
  a.data_obs.resize(static_cast<size_t>(nbins));
  a.data_var.resize(static_cast<size_t>(nbins));
  // hbetavariations [nbinsfull, nbins, nproc]: row = destination bin, column = source (observed) bin
  bool has_beta_variations = false;
  for (const auto& ch : channels_) has_beta_variations = has_beta_variations || !ch.beta_variations.empty();
  if (has_beta_variations && options.sparse)
    throw OptionError("TensorWriter: beta variations are only supported for dense tensors");
  if (has_beta_variations) a.beta_variations.emplace(static_cast<size_t>(nbinsfull * nbins * nproc), 0.0);
  auto layout_of = [&](const std::string& name) -> const ChannelInfo& {
    for (const auto& info : layout)
      if (info.name == name) return info;
    throw Error("TensorWriter: internal error: channel " + name);
  };
  a.pseudodata_names = pseudodata_names_;
  const int64_t npseudo = a.npseudo = static_cast<int64_t>(pseudodata_names_.size());
  a.pseudodata.assign(static_cast<size_t>(nbins * npseudo), 0.0);
  for (const auto& info : layout) {
    const Channel& ch = find_channel(info.name);
    for (const auto& [proc, values] : ch.norm) {
      const int64_t p = proc_index.at(proc);
      const auto& w2 = ch.sumw2.at(proc);
      for (int64_t b = 0; b < ch.nbins; ++b) {
        norm[(info.start + b) * nproc + p] = values[b];
        sumw2[(info.start + b) * nproc + p] = w2[b];
      }
      auto fill = [&](const auto& store, int64_t column_offset) {
        auto it = store.find(proc);
        if (it == store.end()) return;
        for (const auto& [syst, values_logk] : it->second) {
          const int64_t column = column_offset + syst_index.at(syst);
          for (int64_t b = 0; b < ch.nbins; ++b)
            logk[((info.start + b) * nproc + p) * width + column] = values_logk[b];
        }
      };
      fill(ch.logkavg, 0);
      if (!symmetric_layout) fill(ch.logkhalfdiff, nsyst);
    }
    for (const auto& [source, per_process] : ch.beta_variations) {
      const ChannelInfo& src = layout_of(source);
      const int64_t nsrc = src.stop - src.start;
      for (const auto& [proc, values] : per_process) {
        const int64_t p = proc_index.at(proc);
        for (int64_t b = 0; b < ch.nbins; ++b)
          for (int64_t j = 0; j < nsrc; ++j)
            (*a.beta_variations)[((info.start + b) * nbins + src.start + j) * nproc + p] =
                values[b * nsrc + j];
      }
    }
    if (info.masked) continue;
    for (int64_t b = 0; b < ch.nbins; ++b) {
      a.data_obs[info.start + b] = (*ch.data_obs)[b];
      a.data_var[info.start + b] = (*ch.data_var)[b];
      for (int64_t j = 0; j < npseudo; ++j)
        a.pseudodata[(info.start + b) * npseudo + j] = ch.pseudodata.at(pseudodata_names_[j])[b];
    }
  }

  a.constraintweights.assign(static_cast<size_t>(nsyst), 1.0);
  for (const auto& s : systs_unconstrained_) a.constraintweights[syst_index.at(s)] = 0.0;
  a.systsnoconstraint = natural_sorted({systs_unconstrained_.begin(), systs_unconstrained_.end()});

  std::vector<std::string>& group_names = a.group_names;
  for (const auto& [g, members] : groups_) group_names.push_back(g);
  group_names = natural_sorted(group_names);
  for (const auto& g : group_names) {
    std::vector<int32_t> idx;
    for (const auto& m : groups_.at(g)) idx.push_back(static_cast<int32_t>(syst_index.at(m)));
    std::sort(idx.begin(), idx.end());
    a.group_idxs.push_back(std::move(idx));
  }
  for (const auto& s : natural_sorted({systs_noi_.begin(), systs_noi_.end()}))
    a.noiidxs.push_back(static_cast<int32_t>(syst_index.at(s)));

  if (data_covariance_) {
    Eigen::FullPivLU<Eigen::MatrixXd> lu(*data_covariance_);
    if (!lu.isInvertible()) throw Error("TensorWriter: the data covariance is singular");
    const Eigen::MatrixXd inv = lu.inverse();
    std::vector<double> flat(static_cast<size_t>(nbins * nbins));
    for (int64_t i = 0; i < nbins; ++i)
      for (int64_t j = 0; j < nbins; ++j) flat[i * nbins + j] = inv(i, j);
    a.data_cov_inv = std::move(flat);
  }
  a.external_terms = external_terms_;
  return a;
}

namespace io {

SparseTensors sparse_tensors(const TensorAssembly& a) {
  SparseTensors s;
  const int64_t nproc = a.nproc, width = a.width;
  for (int64_t flat = 0; flat < a.nbinsfull * nproc; ++flat) {
    if (a.norm[flat] == 0.0) continue;
    const auto k = static_cast<int64_t>(s.norm_values.size());
    s.norm_indices.push_back(flat / nproc);
    s.norm_indices.push_back(flat % nproc);
    s.norm_values.push_back(a.norm[flat]);
    for (int64_t c = 0; c < width; ++c) {
      const double v = a.logk[flat * width + c];
      if (v == 0.0) continue;
      s.logk_indices.push_back(k);
      s.logk_indices.push_back(c);
      s.logk_values.push_back(v);
    }
  }
  return s;
}

}  // namespace io
}  // namespace rabbit
