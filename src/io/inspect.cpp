// rabbit_inspect's summary and diagnostics; see inspect.hpp.
#include "rabbit/io/inspect.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <utility>

namespace rabbit::inspect {
namespace {

// Dense [nbinsfull * nproc] nominal yields for either layout.
std::vector<double> dense_norm(const FitInputData& d) {
  if (!d.sparse) return d.norm;
  std::vector<double> out(static_cast<size_t>(d.nbinsfull * d.nproc), 0.0);
  for (size_t k = 0; k < d.norm_index.size(); ++k) out[static_cast<size_t>(d.norm_index[k])] = d.norm[k];
  return out;
}

/// Calls fn(bin, proc, avg, halfdiff, syst) for every (bin, process, nuisance) with a nonzero logk.
template <typename Fn>
void for_each_effect(const FitInputData& d, Fn&& fn) {
  const int64_t nsyst = d.nsyst, width = d.logk_width();
  if (nsyst == 0) return;
  auto row = [&](int64_t bin, int64_t proc, const std::map<int64_t, std::pair<double, double>>& effects) {
    for (const auto& [s, v] : effects) fn(bin, proc, v.first, v.second, s);
  };
  std::map<int64_t, std::pair<double, double>> effects;
  auto add = [&](int64_t col, double value) {
    if (value == 0.0) return;
    if (col < nsyst)
      effects[col].first = value;
    else
      effects[col - nsyst].second = value;
  };
  if (!d.sparse) {
    for (int64_t bp = 0; bp < d.nbinsfull * d.nproc; ++bp) {
      effects.clear();
      for (int64_t c = 0; c < width; ++c) add(c, d.logk[static_cast<size_t>(bp * width + c)]);
      if (!effects.empty()) row(bp / d.nproc, bp % d.nproc, effects);
    }
  } else {
    for (size_t k = 0; k + 1 < d.logk_sparse.rowptr.size(); ++k) {
      effects.clear();
      for (int64_t m = d.logk_sparse.rowptr[k]; m < d.logk_sparse.rowptr[k + 1]; ++m)
        add(d.logk_sparse.cols[static_cast<size_t>(m)], d.logk_sparse.values[static_cast<size_t>(m)]);
      if (!effects.empty()) row(d.norm_index[k] / d.nproc, d.norm_index[k] % d.nproc, effects);
    }
  }
}

const ChannelInfo* channel_of(const FitInputData& d, int64_t bin) {
  for (const auto& ch : d.channels)
    if (bin >= ch.start && bin < ch.stop) return &ch;
  return nullptr;
}

// A diagnostic that has found nothing yet.
Diagnostic titled(std::string title) {
  Diagnostic diag;
  diag.title = std::move(title);
  return diag;
}

void note(Diagnostic& diag, size_t max_listed, const std::string& line) {
  diag.ok = false;
  ++diag.count;
  if (diag.details.size() < max_listed) diag.details.push_back(line);
}

std::string g(double v) {
  return fmt::format("{:.6g}", v);
}

}  // namespace

std::string bin_label(const FitInputData& d, int64_t bin) {
  const ChannelInfo* ch = channel_of(d, bin);
  if (ch == nullptr) return fmt::format("bin {}", bin);
  int64_t local = bin - ch->start;
  std::vector<std::string> parts(ch->axes.size());
  for (size_t i = ch->axes.size(); i-- > 0;) {
    const auto& a = ch->axes[i];
    const int64_t n = ch->flow ? a.extent() : a.size;
    int64_t idx = n > 0 ? local % n : 0;
    local = n > 0 ? local / n : 0;
    if (ch->flow && a.underflow) --idx;  // -1 = underflow
    std::string value;
    if (idx >= 0 && idx < static_cast<int64_t>(a.categories_str.size()))
      value = a.categories_str[idx];
    else if (idx >= 0 && idx < static_cast<int64_t>(a.categories_int.size()))
      value = std::to_string(a.categories_int[idx]);
    else if (idx < 0)
      value = "underflow";
    else if (idx >= a.size)
      value = "overflow";
    else
      value = std::to_string(idx);
    parts[i] = (a.name.empty() ? "axis" + std::to_string(i) : a.name) + "=" + value;
  }
  std::string joined;
  for (const auto& p : parts) joined += (joined.empty() ? "" : ", ") + p;
  return ch->name + " (" + joined + ")";
}

std::vector<Diagnostic> diagnose(const FitInputData& d, const DiagnoseOptions& o) {
  std::vector<Diagnostic> out;
  const std::vector<double> norm = dense_norm(d);
  auto total = [&](int64_t bin) {
    double s = 0;
    for (int64_t p = 0; p < d.nproc; ++p) s += norm[static_cast<size_t>(bin * d.nproc + p)];
    return s;
  };

  Diagnostic empty_data = titled("channels with empty data");
  Diagnostic low_data =
      titled(fmt::format("bins with fewer than {} observed events", g(o.low_data_threshold)));
  Diagnostic data_no_pred =
      titled("bins with observed events but zero total prediction (Poisson NLL is infinite)");
  Diagnostic zero_data_pred = titled("observed bins with zero data but a positive prediction");
  Diagnostic low_pred = titled(fmt::format("bins with total prediction below {}", g(o.low_yield_threshold)));
  Diagnostic negative = titled("negative nominal yields");
  Diagnostic rel_stat = titled(
      fmt::format("bins with relative MC statistical uncertainty above {}%", g(100 * o.rel_stat_threshold)));
  for (const auto& ch : d.channels) {
    if (!ch.masked) {
      double sum = 0;
      for (int64_t b = ch.start; b < ch.stop && b < d.nbins; ++b) sum += d.data_obs[b];
      if (sum == 0) note(empty_data, o.max_listed, ch.name);
    }
    for (int64_t b = ch.start; b < ch.stop; ++b) {
      const double pred = total(b);
      if (!ch.masked && b < d.nbins) {
        const double obs = d.data_obs[b];
        if (obs < o.low_data_threshold)
          note(low_data, o.max_listed, fmt::format("{}: {} events", bin_label(d, b), g(obs)));
        if (obs > 0 && pred <= 0)
          note(data_no_pred, o.max_listed,
               fmt::format("{}: {} events, prediction {}", bin_label(d, b), g(obs), g(pred)));
        if (obs == 0 && pred > 0)
          note(zero_data_pred, o.max_listed, fmt::format("{}: prediction {}", bin_label(d, b), g(pred)));
      }
      if (pred < o.low_yield_threshold)
        note(low_pred, o.max_listed, fmt::format("{}: {}", bin_label(d, b), g(pred)));
      for (int64_t p = 0; p < d.nproc; ++p) {
        const double v = norm[static_cast<size_t>(b * d.nproc + p)];
        if (v < 0)
          note(negative, o.max_listed, fmt::format("{} process {}: {}", bin_label(d, b), d.procs[p], g(v)));
      }
      double sumw = 0, sumw2 = 0;
      if (d.sumw_per_bin) {
        sumw = d.sumw[static_cast<size_t>(b)];
        sumw2 = d.sumw2[static_cast<size_t>(b)];
      } else {
        for (int64_t p = 0; p < d.nproc; ++p) {
          sumw += d.sumw[static_cast<size_t>(b * d.nproc + p)];
          sumw2 += d.sumw2[static_cast<size_t>(b * d.nproc + p)];
        }
      }
      if (sumw > 0 && std::sqrt(sumw2) / sumw > o.rel_stat_threshold)
        note(rel_stat, o.max_listed, fmt::format("{}: {}", bin_label(d, b), g(std::sqrt(sumw2) / sumw)));
    }
  }
  Diagnostic zero_norm = titled("processes with zero total yield in a channel");
  for (const auto& ch : d.channels)
    for (int64_t p = 0; p < d.nproc; ++p) {
      double s = 0;
      for (int64_t b = ch.start; b < ch.stop; ++b) s += norm[static_cast<size_t>(b * d.nproc + p)];
      if (s == 0) note(zero_norm, o.max_listed, fmt::format("channel {}: {}", ch.name, d.procs[p]));
    }

  std::vector<bool> syst_used(static_cast<size_t>(d.nsyst), false),
      proc_used(static_cast<size_t>(d.nproc), false);
  // worst variation ratio per (channel, process, nuisance)
  std::map<std::tuple<std::string, int64_t, int64_t>, std::pair<double, double>> extremes;
  const bool normal = d.systematic_type == SystematicType::normal;
  for_each_effect(d, [&](int64_t bin, int64_t proc, double avg, double half, int64_t syst) {
    syst_used[static_cast<size_t>(syst)] = true;
    proc_used[static_cast<size_t>(proc)] = true;
    const double nom = norm[static_cast<size_t>(bin * d.nproc + proc)];
    if (!(nom > 0)) return;
    const double up = normal ? (nom + avg + half) / nom : std::exp(avg + half);
    const double down = normal ? (nom - avg + half) / nom : std::exp(-avg + half);
    const ChannelInfo* ch = channel_of(d, bin);
    auto key = std::make_tuple(ch ? ch->name : std::string("?"), proc, syst);
    auto [it, inserted] = extremes.try_emplace(key, std::min(up, down), std::max(up, down));
    if (!inserted) {
      it->second.first = std::min({it->second.first, up, down});
      it->second.second = std::max({it->second.second, up, down});
    }
  });
  Diagnostic zero_systs = titled("nuisances without any effect");
  for (int64_t s = 0; s < d.nsyst; ++s)
    if (!syst_used[static_cast<size_t>(s)]) note(zero_systs, o.max_listed, d.systs[s]);
  Diagnostic no_syst_procs = titled("processes without any systematic variation");
  for (int64_t p = 0; p < d.nproc; ++p)
    if (!proc_used[static_cast<size_t>(p)]) note(no_syst_procs, o.max_listed, d.procs[p]);
  Diagnostic extreme = titled(fmt::format(
      "extreme systematic variations (ratio to nominal outside [1/{0}, {0}])", g(o.extreme_ratio)));
  for (const auto& [key, range] : extremes) {
    const auto& [ch, p, s] = key;
    if (range.first < 1.0 / o.extreme_ratio || range.second > o.extreme_ratio)
      note(extreme, o.max_listed,
           fmt::format("channel {}, process {}, nuisance {}: {}x .. {}x", ch, d.procs[p], d.systs[s],
                       g(range.first), g(range.second)));
  }
  for (auto* diag : {&empty_data, &low_data, &data_no_pred, &zero_data_pred, &low_pred, &negative, &rel_stat,
                     &zero_norm, &zero_systs, &no_syst_procs, &extreme})
    out.push_back(std::move(*diag));
  return out;
}

void print_summary(std::ostream& out, const FitInputData& d) {
  out << fmt::format("file: {}\n", d.filename);
  out << fmt::format("layout: {}, logk {}, systematic type {}, meta {}\n", d.sparse ? "sparse" : "dense",
                     d.symmetric_tensor ? "symmetric" : "asymmetric",
                     d.systematic_type == SystematicType::normal ? "normal" : "log_normal",
                     d.has_meta ? "present" : "absent (rabbit defaults)");
  out << fmt::format(
      "bins: {} observed, {} total ({} masked); processes {}; nuisances {} ({} unconstrained)\n", d.nbins,
      d.nbinsfull, d.nbinsmasked, d.nproc, d.nsyst, d.nsystnoconstraint);
  out << "\nchannels:\n";
  for (const auto& ch : d.channels) {
    out << fmt::format("  {}{}{}: bins [{}, {}) = {}\n", ch.name, ch.masked ? " (masked)" : "",
                       ch.flow ? " (with flow bins)" : "", ch.start, ch.stop, ch.nbins());
    for (const auto& a : ch.axes) {
      std::string range;
      if (!a.categories_str.empty()) {
        for (const auto& c : a.categories_str) range += (range.empty() ? "" : ", ") + c;
        range = "{" + range + "}";
      } else if (!a.categories_int.empty()) {
        for (auto c : a.categories_int) range += (range.empty() ? "" : ", ") + std::to_string(c);
        range = "{" + range + "}";
      } else if (!a.edges.empty()) {
        range = fmt::format("[{}, {}]", g(a.edges.front()), g(a.edges.back()));
      }
      std::string flags;
      if (a.underflow) flags += " underflow";
      if (a.overflow) flags += " overflow";
      if (a.growth) flags += " growth";
      if (a.circular) flags += " circular";
      out << fmt::format("    axis {} ({}, {}): {} bins {}{}\n", a.name, a.kind, a.core_class, a.size, range,
                         flags.empty() ? "" : " +" + flags.substr(1));
    }
  }
  const std::vector<double> norm = dense_norm(d);
  out << "\nprocesses (yield per channel):\n";
  for (int64_t p = 0; p < d.nproc; ++p) {
    std::string yields;
    for (const auto& ch : d.channels) {
      double s = 0;
      for (int64_t b = ch.start; b < ch.stop; ++b) s += norm[static_cast<size_t>(b * d.nproc + p)];
      yields += fmt::format("  {}={}", ch.name, g(s));
    }
    out << fmt::format("  {:<3} {}{}\n", p, d.procs[p], (p < d.nsignals ? " [signal]" : "") + yields);
  }
  std::set<int64_t> nois(d.noiidxs.begin(), d.noiidxs.end());
  std::map<int64_t, std::vector<std::string>> groups_of;
  for (size_t g = 0; g < d.systgroups.size(); ++g)
    for (auto s : d.systgroupidxs[g]) groups_of[s].push_back(d.systgroups[g]);
  out << "\nnuisances (constraint weight, NOI, groups):\n";
  for (int64_t s = 0; s < d.nsyst; ++s) {
    std::string groups;
    for (const auto& g : groups_of[s]) groups += (groups.empty() ? "" : ", ") + g;
    const double w = d.constraintweights[s];
    out << fmt::format("  {:<4} {:<40} {:<14} {:<4} {}\n", s, d.systs[s],
                       w == 0 ? "unconstrained" : fmt::format("w={}", g(w)), nois.count(s) ? "NOI" : "",
                       groups);
  }
  out << "\ngroups:\n";
  for (size_t gi = 0; gi < d.systgroups.size(); ++gi) {
    std::vector<int64_t> members = d.systgroupidxs[gi];
    std::sort(members.begin(), members.end());
    std::string names;
    for (auto s : members) names += (names.empty() ? "" : ", ") + d.systs[s];
    out << fmt::format("  {}: {}\n", d.systgroups[gi], names);
  }
  std::string noi_names;
  for (auto s : d.noiidxs) noi_names += (noi_names.empty() ? "" : ", ") + d.systs[s];
  out << fmt::format("\nNOIs: {}\n", noi_names.empty() ? "none" : noi_names);
  std::string pseudo;
  for (const auto& n : d.pseudodatanames) pseudo += (pseudo.empty() ? "" : ", ") + n;
  out << fmt::format("pseudodata: {}\n", pseudo.empty() ? "none" : pseudo);
  out << fmt::format("data variances: {}; data covariance: {}; bin-by-bin beta variations: {}\n",
                     d.data_var ? "stored" : "= data (Poisson)", d.data_cov_inv ? "present" : "absent",
                     d.betavariations ? "present" : "absent");
  out << fmt::format("external terms: {}\n", d.external_terms.size());
  for (const auto& t : d.external_terms) {
    std::string params;
    for (const auto& p : t.params) params += (params.empty() ? "" : ", ") + p;
    std::string scalars;  // rabbit PR #147's stored Gaussian scalars (docs/model.md "External terms")
    if (t.const_value) scalars += fmt::format(" const={}", *t.const_value);
    if (t.lognorm) scalars += fmt::format(" lognorm={}", *t.lognorm);
    out << fmt::format("  {}: [{}]{}{}{}\n", t.name, params, t.grad_values ? " gradient" : "",
                       t.hess ? " hessian" : "", scalars);
  }
}

void print_diagnostics(std::ostream& out, const std::vector<Diagnostic>& diagnostics) {
  out << "\ndiagnostics:\n";
  size_t issues = 0;
  for (const auto& diag : diagnostics) {
    if (diag.ok) {
      out << fmt::format("  [ok] no {}\n", diag.title);
      continue;
    }
    ++issues;
    out << fmt::format("  [!!] {} {}\n", diag.count, diag.title);
    for (const auto& line : diag.details) out << "       - " << line << "\n";
    if (diag.count > diag.details.size())
      out << fmt::format("       ... and {} more\n", diag.count - diag.details.size());
  }
  out << (issues == 0 ? std::string("\nno issues found\n")
                      : fmt::format("\n{} potential issue(s) found\n", issues));
}

}  // namespace rabbit::inspect
