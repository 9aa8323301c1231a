// TensorWriter -> read_fit_input round trips over dense/sparse × symmetric/asymmetric ×
// log_normal/normal × float32/float64 × with/without a masked channel × with/without meta.
// Expected values are computed here from the definitions (docs/input-reader.md "Dense model tensors"), not
// taken from the writer.
#include <gtest/gtest.h>

#include <Eigen/LU>
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "rabbit/core/error.hpp"
#include "rabbit/io/fit_input_data.hpp"
#include "rabbit/io/tensor_writer.hpp"
#include "support/test_paths.hpp"

namespace rabbit {
namespace {

struct Variant {
  bool sparse, symmetric, normal, float32, masked, meta;
};

std::string variant_name(const Variant& v) {
  return std::string(v.sparse ? "sparse" : "dense") + (v.symmetric ? "_sym" : "_asym") +
         (v.normal ? "_normal" : "_lognormal") + (v.float32 ? "_f32" : "_f64") +
         (v.masked ? "_masked" : "_nomasked") + (v.meta ? "_meta" : "_nometa");
}

// ---- the model -------------------------------------------------------------------------------
// Channels as added: obs_b, [fid (masked, flow)], obs_a, obs_c. Layout: obs_b, obs_a, obs_c, fid.
struct ChannelSpec {
  std::string name;
  std::vector<AxisInfo> axes;
  bool masked = false, flow = false;
  int64_t nbins = 0;
};

std::vector<ChannelSpec> channel_specs(bool masked) {
  std::vector<ChannelSpec> c;
  c.push_back(
      {"obs_b",
       {axis::regular(3, 0, 3, "x", true, true, "x label"), axis::str_category({"e", "mu"}, "flavour")},
       false,
       false,
       6});
  if (masked) c.push_back({"fid", {axis::regular(4, -1, 1, "y")}, true, true, 6});
  c.push_back({"obs_a",
               {axis::variable({0, 1, 2.5, 4}, "pt", true, false), axis::integer(0, 2, "n", false, false),
                axis::boolean("pass")},
               false,
               false,
               12});
  c.push_back({"obs_c", {axis::int_category({11, 13, 15}, "pdg", false)}, false, false, 3});
  return c;
}

const std::vector<std::string> kProcsInput = {"sig_2", "sig_10", "zz", "bkg"};
bool is_signal(const std::string& p) {
  return p.rfind("sig", 0) == 0;
}
// File order: sorted signals, then sorted backgrounds.
const std::vector<std::string> kProcsFile = {"sig_10", "sig_2", "bkg", "zz"};

bool has_process(const std::string& ch, const std::string& p) {
  return !(ch == "obs_c" && p == "bkg") && !(ch == "fid" && p != "sig_2");
}

std::vector<double> nominal_raw(const std::string& ch, const std::string& p) {
  const int pi = static_cast<int>(std::find(kProcsInput.begin(), kProcsInput.end(), p) - kProcsInput.begin());
  const int ci = static_cast<int>(ch.size());
  const auto specs = channel_specs(true);
  int64_t n = 0;
  for (const auto& s : specs)
    if (s.name == ch) n = s.nbins;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = 10.0 + 3.0 * i + 7.0 * pi + 0.25 * ci;
  if (ch == "obs_a" && p == "zz") v[0] = -2.0;  // clipped to 0
  if (ch == "obs_a" && p == "zz") v[5] = 0.0;   // empty bin
  if (ch == "obs_b" && p == "bkg") v[2] = 0.0;
  return v;
}
std::vector<double> clipped(std::vector<double> v) {
  for (auto& x : v) x = std::max(x, 0.0);
  return v;
}
std::vector<double> variances_for(const std::string& ch, const std::string& p) {
  auto v = nominal_raw(ch, p);
  if (is_signal(p) || (ch == "obs_a" && p == "zz"))
    for (auto& x : v) x = 0.5 * std::abs(x) + 0.125;
  return v;
}
std::vector<double> scaled(const std::vector<double>& v, const std::vector<double>& f) {
  std::vector<double> o(v.size());
  for (size_t i = 0; i < v.size(); ++i) o[i] = v[i] * f[i];
  return o;
}
std::vector<double> ramp(size_t n, double a, double b) {
  std::vector<double> f(n);
  for (size_t i = 0; i < n; ++i) f[i] = a + b * static_cast<double>(i);
  return f;
}

// The definitions: logk of a variation, and the two symmetric parts of an up/down pair.
double logk_def(double var, double nom, double k, bool normal) {
  if (normal) return k * (var - nom);
  return nom * var > 0 ? k * std::log(var / nom) : std::log(1e-3);
}

struct Expected {
  std::vector<std::string> systs_unconstrained, systs_constrained, nois;
  std::map<std::string, std::set<std::string>> groups;
  // [channel][process][syst] -> {avg, halfdiff} per bin
  std::map<std::string,
           std::map<std::string, std::map<std::string, std::pair<std::vector<double>, std::vector<double>>>>>
      logk;
  bool symmetric = true;
};

/// Builds the model in `writer` and records what the file must contain.
Expected build_model(TensorWriter& writer, const Variant& v) {
  Expected e;
  for (const auto& c : channel_specs(v.masked)) writer.add_channel(c.name, c.axes, c.masked, c.flow);
  for (const auto& c : channel_specs(v.masked))
    for (const auto& p : kProcsInput) {
      if (!has_process(c.name, p)) continue;
      const bool explicit_var = is_signal(p) || (c.name == "obs_a" && p == "zz");
      writer.add_process(c.name, p, nominal_raw(c.name, p), is_signal(p),
                         explicit_var ? std::optional(variances_for(c.name, p)) : std::nullopt);
    }
  for (const auto& c : channel_specs(v.masked)) {
    if (c.masked) continue;
    auto data = ramp(static_cast<size_t>(c.nbins), 50.0, 2.0);
    std::optional<std::vector<double>> var;
    if (v.masked && c.name == "obs_a") var = ramp(static_cast<size_t>(c.nbins), 60.0, 1.0);
    writer.add_data(c.name, data, var);
    writer.add_pseudodata("asimov", c.name, ramp(static_cast<size_t>(c.nbins), 40.0, 1.5));
    writer.add_pseudodata("alt", c.name, ramp(static_cast<size_t>(c.nbins), 30.0, 0.5));
  }
  const bool nt = v.normal;
  auto book = [&](const std::string& ch, const std::string& p, const std::string& s, std::vector<double> avg,
                  std::vector<double> half) {
    const auto nom = clipped(nominal_raw(ch, p));
    for (size_t i = 0; i < nom.size(); ++i)
      if (nom[i] == 0.0) avg[i] = half.empty() ? 0.0 : (half[i] = 0.0, 0.0);
    e.logk[ch][p][s] = {avg, half};
  };
  auto mirrored = [&](const std::string& ch, const std::string& p, const std::vector<double>& var, double k) {
    const auto nom = clipped(nominal_raw(ch, p));
    std::vector<double> l(nom.size());
    for (size_t i = 0; i < nom.size(); ++i) l[i] = logk_def(var[i], nom[i], k, nt);
    return l;
  };
  auto updown = [&](const std::string& ch, const std::string& p, const std::vector<double>& up,
                    const std::vector<double>& dn, double k) {
    const auto nom = clipped(nominal_raw(ch, p));
    std::vector<double> lu(nom.size()), ld(nom.size());
    for (size_t i = 0; i < nom.size(); ++i) {
      lu[i] = logk_def(up[i], nom[i], k, nt);
      ld[i] = -logk_def(dn[i], nom[i], k, nt);
    }
    return std::pair(lu, ld);
  };
  auto group = [&](const std::string& s, std::vector<std::string> gs = {}) {
    if (gs.empty()) gs = {s};
    for (const auto& g : gs) e.groups[g].insert(s);
  };

  // shape10: mirrored, sig_2 in obs_b
  {
    const auto nom = clipped(nominal_raw("obs_b", "sig_2"));
    const auto var = scaled(nom, ramp(nom.size(), 1.0, 0.02));
    writer.add_systematic("shape10", "sig_2", "obs_b", var);
    book("obs_b", "sig_2", "shape10", mirrored("obs_b", "sig_2", var, 1.0), {});
    e.systs_constrained.push_back("shape10");
    group("shape10");  // own group here; the second booking below adds it to "shapes"
  }
  SystematicOptions shapes_group;
  shapes_group.groups = std::vector<std::string>{"shapes"};
  // shape9: up/down on bkg in obs_a; asymmetric unless symmetric variant
  {
    const auto nom = clipped(nominal_raw("obs_a", "bkg"));
    const auto up = scaled(nom, std::vector<double>(nom.size(), 1.1));
    const auto dn = scaled(nom, ramp(nom.size(), 0.95, -0.01));
    SystematicOptions o = shapes_group;
    o.symmetrize = v.symmetric ? Symmetrization::average : Symmetrization::none;
    writer.add_systematic("shape9", "bkg", "obs_a", up, dn, o);
    auto [lu, ld] = updown("obs_a", "bkg", up, dn, 1.0);
    std::vector<double> avg(lu.size()), half(lu.size());
    for (size_t i = 0; i < lu.size(); ++i) {
      avg[i] = 0.5 * (lu[i] + ld[i]);
      half[i] = 0.5 * (lu[i] - ld[i]);
    }
    book("obs_a", "bkg", "shape9", avg, v.symmetric ? std::vector<double>{} : half);
    if (!v.symmetric) e.symmetric = false;
    e.systs_constrained.push_back("shape9");
    group("shape9", {"shapes"});
  }
  // cons: conservative, sig_10 in obs_a; "shape10" again in obs_a on sig_10 (same nuisance, 2nd channel)
  {
    const auto nom = clipped(nominal_raw("obs_a", "sig_10"));
    const auto up = scaled(nom, std::vector<double>(nom.size(), 1.05));
    const auto dn = scaled(nom, std::vector<double>(nom.size(), 0.8));
    SystematicOptions o;
    o.symmetrize = Symmetrization::conservative;
    writer.add_systematic("cons", "sig_10", "obs_a", up, dn, o);
    auto [lu, ld] = updown("obs_a", "sig_10", up, dn, 1.0);
    std::vector<double> avg(lu.size());
    for (size_t i = 0; i < lu.size(); ++i) avg[i] = std::abs(lu[i]) > std::abs(ld[i]) ? lu[i] : ld[i];
    book("obs_a", "sig_10", "cons", avg, {});
    e.systs_constrained.push_back("cons");
    group("cons");
    const auto var = scaled(nom, ramp(nom.size(), 0.97, 0.005));
    writer.add_systematic("shape10", "sig_10", "obs_a", var, shapes_group);
    book("obs_a", "sig_10", "shape10", mirrored("obs_a", "sig_10", var, 1.0), {});
    group("shape10", {"shapes"});
  }
  // lin / quad: linear and quadratic symmetrisation on zz in obs_c
  for (const auto& [name, factor] :
       std::vector<std::pair<std::string, double>>{{"lin", 1.0}, {"quad", std::sqrt(3.0)}}) {
    const auto nom = clipped(nominal_raw("obs_c", "zz"));
    const auto up = scaled(nom, ramp(nom.size(), 1.2, 0.1));
    const auto dn = scaled(nom, ramp(nom.size(), 0.9, 0.0));
    SystematicOptions o;
    o.symmetrize = name == "lin" ? Symmetrization::linear : Symmetrization::quadratic;
    o.groups = std::vector<std::string>{"sym_" + name};
    writer.add_systematic(name, "zz", "obs_c", up, dn, o);
    auto [lu, ld] = updown("obs_c", "zz", up, dn, 1.0);
    std::vector<double> avg(lu.size()), diff(lu.size());
    for (size_t i = 0; i < lu.size(); ++i) {
      avg[i] = 0.5 * (lu[i] + ld[i]);
      diff[i] = 0.5 * factor * (lu[i] - ld[i]);
    }
    book("obs_c", "zz", name + "SymAvg", avg, {});
    book("obs_c", "zz", name + "SymDiff", diff, {});
    e.systs_constrained.push_back(name + "SymAvg");
    e.systs_constrained.push_back(name + "SymDiff");
    group(name + "SymAvg", {"sym_" + name});
    group(name + "SymDiff", {"sym_" + name});
  }
  // lumi: lnN on every process everywhere; per-process kappas in obs_c
  for (const auto& c : channel_specs(v.masked)) {
    std::vector<std::string> procs;
    for (const auto& p : kProcsInput)
      if (has_process(c.name, p)) procs.push_back(p);
    std::vector<double> kappas = {1.025};
    if (c.name == "obs_c") kappas = {1.01, 1.02, 1.03};
    SystematicOptions o;
    o.groups = std::vector<std::string>{"lumi_grp"};
    writer.add_norm_systematic("lumi", procs, c.name, kappas, o);
    for (size_t i = 0; i < procs.size(); ++i) {
      const auto nom = clipped(nominal_raw(c.name, procs[i]));
      const double kappa = kappas.size() == 1 ? kappas[0] : kappas[i];
      book(c.name, procs[i], "lumi",
           mirrored(c.name, procs[i], scaled(nom, std::vector<double>(nom.size(), kappa)), 1.0), {});
    }
  }
  e.systs_constrained.push_back("lumi");
  group("lumi", {"lumi_grp"});
  // asymN: asymmetric lnN on bkg in obs_b (quadratic when symmetric)
  {
    SystematicOptions o;
    o.symmetrize = v.symmetric ? Symmetrization::quadratic : Symmetrization::none;
    writer.add_norm_systematic("asymN", {"bkg"}, "obs_b", 1.1, 0.9, o);
    const auto nom = clipped(nominal_raw("obs_b", "bkg"));
    auto [lu, ld] = updown("obs_b", "bkg", scaled(nom, std::vector<double>(nom.size(), 1.1)),
                           scaled(nom, std::vector<double>(nom.size(), 0.9)), 1.0);
    std::vector<double> avg(lu.size()), other(lu.size());
    for (size_t i = 0; i < lu.size(); ++i) {
      avg[i] = 0.5 * (lu[i] + ld[i]);
      other[i] = (v.symmetric ? 0.5 * std::sqrt(3.0) : 0.5) * (lu[i] - ld[i]);
    }
    if (v.symmetric) {
      book("obs_b", "bkg", "asymNSymAvg", avg, {});
      book("obs_b", "bkg", "asymNSymDiff", other, {});
      e.systs_constrained.push_back("asymNSymAvg");
      e.systs_constrained.push_back("asymNSymDiff");
      group("asymNSymAvg");
      group("asymNSymDiff");
    } else {
      book("obs_b", "bkg", "asymN", avg, other);
      e.systs_constrained.push_back("asymN");
      group("asymN");
    }
  }
  // free_norm: unconstrained lnN NOI; Free_2: unconstrained mirrored shape (natural sort, case)
  {
    SystematicOptions o;
    o.constrained = false;
    o.noi = true;
    writer.add_norm_systematic("free_norm", {"sig_10"}, "obs_b", {1.5}, o);
    const auto nom = clipped(nominal_raw("obs_b", "sig_10"));
    book("obs_b", "sig_10", "free_norm",
         mirrored("obs_b", "sig_10", scaled(nom, std::vector<double>(nom.size(), 1.5)), 1.0), {});
    SystematicOptions f;
    f.constrained = false;
    const auto nz = clipped(nominal_raw("obs_a", "zz"));
    const auto var = scaled(nz, ramp(nz.size(), 1.01, 0.003));
    writer.add_systematic("Zfree", "zz", "obs_a", var, f);
    book("obs_a", "zz", "Zfree", mirrored("obs_a", "zz", var, 1.0), {});
    e.systs_unconstrained = {"Zfree", "free_norm"};
    e.nois.push_back("free_norm");
    group("free_norm");
    group("Zfree");
  }
  // noi_c: constrained NOI with kfactor 2 (as difference), in the masked channel when present
  {
    const std::string ch = v.masked ? "fid" : "obs_c";
    const std::string p = "sig_2";
    const auto nom = clipped(nominal_raw(ch, p));
    const auto diff = ramp(nom.size(), 0.5, 0.25);
    SystematicOptions o;
    o.noi = true;
    o.kfactor = 2.0;
    o.as_difference = true;
    writer.add_systematic("noi_c", p, ch, diff, o);
    std::vector<double> var(nom.size());
    for (size_t i = 0; i < nom.size(); ++i) var[i] = nom[i] + diff[i];
    book(ch, p, "noi_c", mirrored(ch, p, var, 2.0), {});
    e.systs_constrained.push_back("noi_c");
    e.nois.push_back("noi_c");
    group("noi_c");
  }
  // natural order: digits as numbers, text lower-cased
  std::sort(e.systs_unconstrained.begin(), e.systs_unconstrained.end(), natural_less);
  std::sort(e.systs_constrained.begin(), e.systs_constrained.end(), natural_less);
  Eigen::MatrixXd cov = Eigen::MatrixXd::Identity(21, 21) * 4.0;
  for (int i = 0; i + 1 < 21; ++i) cov(i, i + 1) = cov(i + 1, i) = 0.5;
  writer.add_data_covariance(cov);
  Eigen::VectorXd g(2);
  g << 0.5, -1.5;
  Eigen::MatrixXd h(2, 2);
  h << 2.0, 0.25, 0.25, 3.0;
  writer.add_external_term("ext_b", {"lumi", "sig_10"}, g, h);
  writer.add_external_term("ext_a", {"free_norm"}, std::nullopt, Eigen::MatrixXd::Constant(1, 1, 5.0));
  return e;
}

double stored(double x, bool f32) {
  return f32 ? static_cast<double>(static_cast<float>(x)) : x;
}

class WriterRoundTrip : public ::testing::TestWithParam<Variant> {};

TEST_P(WriterRoundTrip, EveryFieldAsWritten) {
  const Variant v = GetParam();
  TensorWriter writer(v.normal ? SystematicType::normal : SystematicType::log_normal);
  const Expected e = build_model(writer, v);
  WriteOptions opt;
  opt.sparse = v.sparse;
  opt.float32 = v.float32;
  opt.write_meta = v.meta;
  opt.meta_info = {{"purpose", "round trip"}};
  const auto path = (test::scratch_dir("writer_roundtrip") / (variant_name(v) + ".hdf5")).string();
  if (!v.meta && v.normal) {
    EXPECT_THROW(writer.write(path, opt), OptionError);
    return;
  }
  writer.write(path, opt);
  const FitInputData d = read_fit_input(path);

  // names
  EXPECT_EQ(d.procs, kProcsFile);
  EXPECT_EQ(d.signals, (std::vector<std::string>{"sig_10", "sig_2"}));
  std::vector<std::string> systs = e.systs_unconstrained;
  systs.insert(systs.end(), e.systs_constrained.begin(), e.systs_constrained.end());
  ASSERT_EQ(d.systs, systs);
  EXPECT_EQ(d.systs.front(), "free_norm") << "natural sort lower-cases (byte order would put 'Zfree' first)";
  EXPECT_LT(std::find(systs.begin(), systs.end(), "shape9"), std::find(systs.begin(), systs.end(), "shape10"))
      << "natural sort compares digit runs as numbers";
  EXPECT_EQ(d.systsnoconstraint, e.systs_unconstrained);
  const auto nsyst = static_cast<int64_t>(systs.size());
  auto index_of = [&](const std::string& s) {
    return static_cast<int64_t>(std::find(systs.begin(), systs.end(), s) - systs.begin());
  };
  ASSERT_EQ(d.constraintweights.size(), nsyst);
  for (int64_t i = 0; i < nsyst; ++i)
    EXPECT_EQ(d.constraintweights[i], i < static_cast<int64_t>(e.systs_unconstrained.size()) ? 0.0 : 1.0);
  std::vector<std::string> group_names;
  for (const auto& [g, m] : e.groups) group_names.push_back(g);
  std::sort(group_names.begin(), group_names.end(), natural_less);
  ASSERT_EQ(d.systgroups, group_names);
  for (size_t g = 0; g < group_names.size(); ++g) {
    std::set<int64_t> expect;
    for (const auto& m : e.groups.at(group_names[g])) expect.insert(index_of(m));
    EXPECT_EQ(std::set<int64_t>(d.systgroupidxs[g].begin(), d.systgroupidxs[g].end()), expect)
        << group_names[g];
  }
  std::vector<std::string> nois = e.nois;
  std::sort(nois.begin(), nois.end(), natural_less);
  std::vector<int64_t> noiidxs;
  for (const auto& n : nois) noiidxs.push_back(index_of(n));
  EXPECT_EQ(d.noiidxs, noiidxs);

  // layout
  const auto specs = channel_specs(v.masked);
  std::vector<ChannelSpec> layout;
  for (int pass = 0; pass < 2; ++pass)
    for (const auto& c : specs)
      if (c.masked == (pass == 1)) layout.push_back(c);
  std::map<std::string, int64_t> start;
  int64_t nbins = 0, nbinsfull = 0;
  for (const auto& c : layout) {
    start[c.name] = nbinsfull;
    nbinsfull += c.nbins;
    if (!c.masked) nbins += c.nbins;
  }
  EXPECT_EQ(d.nbins, nbins);
  EXPECT_EQ(d.nbinsfull, nbinsfull);
  EXPECT_EQ(d.nbinsmasked, nbinsfull - nbins);
  EXPECT_EQ(d.nproc, 4);
  EXPECT_EQ(d.nsyst, nsyst);
  EXPECT_EQ(d.nsignals, 2);
  EXPECT_EQ(d.nsystnoconstraint, static_cast<int64_t>(e.systs_unconstrained.size()));
  EXPECT_EQ(d.sparse, v.sparse);
  EXPECT_EQ(d.has_meta, v.meta);
  EXPECT_EQ(d.symmetric_tensor, v.meta && e.symmetric);
  EXPECT_EQ(e.symmetric, v.symmetric);
  EXPECT_EQ(d.systematic_type, v.normal ? SystematicType::normal : SystematicType::log_normal);

  if (v.meta) {
    ASSERT_EQ(d.channels.size(), layout.size());
    for (size_t c = 0; c < layout.size(); ++c) {
      const auto& got = d.channels[c];
      const auto& want = layout[c];
      EXPECT_EQ(got.name, want.name);
      EXPECT_EQ(got.masked, want.masked);
      EXPECT_EQ(got.flow, want.flow);
      EXPECT_EQ(got.start, start[want.name]);
      EXPECT_EQ(got.stop, start[want.name] + want.nbins);
      ASSERT_EQ(got.axes.size(), want.axes.size());
      for (size_t a = 0; a < want.axes.size(); ++a) {
        const auto& ga = got.axes[a];
        const auto& wa = want.axes[a];
        SCOPED_TRACE(want.name + " axis " + wa.name);
        EXPECT_EQ(ga.kind, wa.kind);
        EXPECT_EQ(ga.core_class, wa.core_class);
        EXPECT_EQ(ga.name, wa.name);
        EXPECT_EQ(ga.label, wa.label.empty() ? wa.name : wa.label);
        EXPECT_EQ(ga.size, wa.size);
        EXPECT_EQ(ga.underflow, wa.underflow);
        EXPECT_EQ(ga.overflow, wa.overflow);
        EXPECT_EQ(ga.growth, wa.growth);
        EXPECT_EQ(ga.circular, wa.circular);
        EXPECT_EQ(ga.edges, wa.edges);
        EXPECT_EQ(ga.categories_str, wa.categories_str);
        EXPECT_EQ(ga.categories_int, wa.categories_int);
      }
    }
  } else {
    ASSERT_EQ(d.channels.size(),
              v.masked ? 2u : 1u);  // rabbit's defaults (docs/input-reader.md "Defaults without meta")
    EXPECT_EQ(d.channels[0].name, "ch0");
    EXPECT_EQ(d.channels[0].nbins(), nbins);
    if (v.masked) {
      EXPECT_EQ(d.channels[1].name, "ch1_masked");
      EXPECT_EQ(d.channels[1].nbins(), nbinsfull - nbins);
    }
  }

  // observations
  ASSERT_EQ(d.data_obs.size(), nbins);
  ASSERT_EQ(d.pseudodatanames, (std::vector<std::string>{"asimov", "alt"}));
  ASSERT_EQ(d.pseudodata.rows(), nbins);
  ASSERT_EQ(d.pseudodata.cols(), 2);
  std::vector<double> want_var(static_cast<size_t>(nbins));
  bool var_differs = false;
  for (const auto& c : layout) {
    if (c.masked) continue;
    for (int64_t i = 0; i < c.nbins; ++i) {
      const int64_t b = start[c.name] + i;
      EXPECT_EQ(d.data_obs[b], 50.0 + 2.0 * i);
      EXPECT_EQ(d.pseudodata(b, 0), 40.0 + 1.5 * i);
      EXPECT_EQ(d.pseudodata(b, 1), 30.0 + 0.5 * i);
      want_var[b] = (v.masked && c.name == "obs_a") ? 60.0 + i : 50.0 + 2.0 * i;
      var_differs |= want_var[b] != d.data_obs[b];
    }
  }
  ASSERT_EQ(d.data_var.has_value(), var_differs);
  if (var_differs) {
    for (int64_t b = 0; b < nbins; ++b) EXPECT_EQ((*d.data_var)[b], want_var[b]);
  }
  ASSERT_TRUE(d.data_cov_inv.has_value());
  Eigen::MatrixXd cov = Eigen::MatrixXd::Identity(21, 21) * 4.0;
  for (int i = 0; i + 1 < 21; ++i) cov(i, i + 1) = cov(i + 1, i) = 0.5;
  EXPECT_LT(((*d.data_cov_inv) * cov - Eigen::MatrixXd::Identity(21, 21)).cwiseAbs().maxCoeff(), 1e-12);

  // model tensors: rebuild the dense expectation [bin, proc, 2, syst]
  const int64_t nproc = 4;
  std::vector<double> norm(static_cast<size_t>(nbinsfull * nproc), 0.0), sumw2(norm.size(), 0.0);
  std::vector<double> logk(static_cast<size_t>(nbinsfull * nproc * 2 * nsyst), 0.0);
  for (const auto& c : layout)
    for (size_t p = 0; p < kProcsFile.size(); ++p) {
      const auto& proc = kProcsFile[p];
      if (!has_process(c.name, proc)) continue;
      const auto nom = clipped(nominal_raw(c.name, proc));
      const auto w2 = variances_for(c.name, proc);
      for (int64_t i = 0; i < c.nbins; ++i) {
        norm[(start[c.name] + i) * nproc + p] = nom[i];
        sumw2[(start[c.name] + i) * nproc + p] = w2[i];
      }
      auto it = e.logk.find(c.name);
      if (it == e.logk.end() || !it->second.count(proc)) continue;
      for (const auto& [s, parts] : it->second.at(proc))
        for (int64_t i = 0; i < c.nbins; ++i) {
          const int64_t base = ((start[c.name] + i) * nproc + p) * 2 * nsyst;
          logk[base + index_of(s)] = parts.first[i];
          if (!parts.second.empty()) logk[base + nsyst + index_of(s)] = parts.second[i];
        }
    }
  ASSERT_EQ(d.sumw.size(), norm.size());
  ASSERT_EQ(d.sumw2.size(), norm.size());
  for (size_t i = 0; i < norm.size(); ++i) {
    EXPECT_EQ(d.sumw[i], stored(norm[i], v.float32)) << i;
    EXPECT_EQ(d.sumw2[i], stored(sumw2[i], v.float32)) << i;
  }
  const bool sym_layout = d.symmetric_tensor;
  const int64_t width = sym_layout ? nsyst : 2 * nsyst;
  // the dense tensor as the reader must present it
  std::vector<double> logk_file(static_cast<size_t>(nbinsfull * nproc * width), 0.0);
  for (int64_t bp = 0; bp < nbinsfull * nproc; ++bp)
    for (int64_t c = 0; c < width; ++c)
      logk_file[bp * width + c] = stored(logk[bp * 2 * nsyst + c], v.float32);
  if (!v.sparse) {
    ASSERT_EQ(d.norm.size(), norm.size());
    for (size_t i = 0; i < norm.size(); ++i) EXPECT_EQ(d.norm[i], stored(norm[i], v.float32)) << i;
    ASSERT_EQ(d.logk.size(), logk_file.size());
    for (size_t i = 0; i < logk_file.size(); ++i) EXPECT_NEAR(d.logk[i], logk_file[i], 1e-15) << i;
  } else {
    std::vector<int64_t> want_index;
    for (int64_t i = 0; i < nbinsfull * nproc; ++i)
      if (norm[i] != 0.0) want_index.push_back(i);
    ASSERT_EQ(d.norm_index, want_index);
    ASSERT_EQ(d.norm.size(), want_index.size());
    ASSERT_EQ(d.logk_sparse.rowptr.size(), want_index.size() + 1);
    for (size_t k = 0; k < want_index.size(); ++k) {
      EXPECT_EQ(d.norm[k], stored(norm[want_index[k]], v.float32));
      std::vector<double> row(static_cast<size_t>(width), 0.0);
      for (int64_t m = d.logk_sparse.rowptr[k]; m < d.logk_sparse.rowptr[k + 1]; ++m) {
        EXPECT_NE(d.logk_sparse.values[m], 0.0) << "explicit zero stored";
        row[d.logk_sparse.cols[m]] = d.logk_sparse.values[m];
      }
      for (int64_t c = 0; c < width; ++c)
        EXPECT_NEAR(row[c], logk_file[want_index[k] * width + c], 1e-15) << "entry " << k << " col " << c;
    }
  }

  // external terms, in HDF5 name order
  ASSERT_EQ(d.external_terms.size(), 2u);
  EXPECT_EQ(d.external_terms[0].name, "ext_a");
  EXPECT_EQ(d.external_terms[0].params, (std::vector<std::string>{"free_norm"}));
  EXPECT_FALSE(d.external_terms[0].grad_values.has_value());
  ASSERT_TRUE(d.external_terms[0].hess.has_value());
  EXPECT_EQ((*d.external_terms[0].hess)(0, 0), 5.0);
  EXPECT_EQ(d.external_terms[1].name, "ext_b");
  EXPECT_EQ(d.external_terms[1].params, (std::vector<std::string>{"lumi", "sig_10"}));
  ASSERT_TRUE(d.external_terms[1].grad_values.has_value());
  EXPECT_EQ((*d.external_terms[1].grad_values)[1], -1.5);
  EXPECT_EQ((*d.external_terms[1].hess)(0, 1), 0.25);
  EXPECT_EQ((*d.external_terms[1].hess)(1, 1), 3.0);
}

std::vector<Variant> all_variants() {
  std::vector<Variant> out;
  for (int i = 0; i < 64; ++i)
    out.push_back({bool(i & 1), bool(i & 2), bool(i & 4), bool(i & 8), bool(i & 16), bool(i & 32)});
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllLayouts, WriterRoundTrip, ::testing::ValuesIn(all_variants()),
                         [](const auto& info) { return variant_name(info.param); });

// The compression filters round-trip through the reader as well (Blosc2 through whichever
// 32026 filter is registered, gzip through HDF5's deflate, none).
TEST(WriterRoundTrip, CompressionVariantsReadBackEqual) {
  std::vector<FitInputData> read;
  for (Compression c : {Compression::none, Compression::gzip, Compression::blosc2}) {
    for (bool sparse : {false, true}) {
      TensorWriter w;
      build_model(w, {sparse, false, false, false, true, true});
      WriteOptions o;
      o.compression = c;
      o.sparse = sparse;
      const auto path = (test::scratch_dir("writer_compression") /
                         ("c" + std::to_string(static_cast<int>(c)) + (sparse ? "s" : "d") + ".hdf5"))
                            .string();
      w.write(path, o);
      read.push_back(read_fit_input(path));
    }
  }
  for (size_t i = 2; i < read.size(); ++i) {
    const auto& ref = read[i % 2];
    EXPECT_EQ(read[i].norm, ref.norm);
    EXPECT_EQ(read[i].logk, ref.logk);
    EXPECT_EQ(read[i].logk_sparse.values, ref.logk_sparse.values);
    EXPECT_EQ(read[i].logk_sparse.cols, ref.logk_sparse.cols);
    EXPECT_EQ(read[i].sumw2, ref.sumw2);
    EXPECT_EQ(read[i].data_obs, ref.data_obs);
    EXPECT_EQ(read[i].systs, ref.systs);
  }
}

// Beta variations: [nbinsfull, nbins, nproc], destination rows in the masked channel, source columns
// in the observed channel's bins, zero elsewhere; refused for unmasked destinations and sparse files.
TEST(WriterRoundTrip, BetaVariationsLayout) {
  auto make = [] {
    TensorWriter w;
    w.add_channel("obs1", {axis::regular(2, 0, 2, "x")});
    w.add_channel("fid", {axis::regular(3, 0, 3, "y")}, true);
    w.add_channel("obs2", {axis::regular(3, 0, 3, "z")});
    w.add_data("obs1", {5, 6});
    w.add_data("obs2", {7, 8, 9});
    for (const char* ch : {"obs1", "obs2", "fid"}) {
      const int64_t nb = std::string(ch) == "obs1" ? 2 : 3;
      w.add_process(ch, "sig", std::vector<double>(nb, 4.0), true);
      w.add_process(ch, "bkg", std::vector<double>(nb, 2.0));
    }
    return w;
  };
  TensorWriter w = make();
  std::vector<double> var(3 * 3);
  for (int i = 0; i < 9; ++i) var[i] = 0.5 + i;  // dest bin i / 3, source bin i % 3
  w.add_beta_variations("sig", "obs2", "fid", var);
  EXPECT_THROW(w.add_beta_variations("sig", "obs2", "obs1", std::vector<double>(6, 1.0)), Error);
  EXPECT_THROW(w.add_beta_variations("sig", "obs2", "fid", std::vector<double>(8, 1.0)), Error);
  EXPECT_THROW(w.add_beta_variations("other", "obs2", "fid", var), Error);
  const auto path = (test::scratch_dir("writer_betavar") / "bv.hdf5").string();
  w.write(path);
  const FitInputData d = read_fit_input(path);
  ASSERT_TRUE(d.betavariations);
  ASSERT_EQ(d.nbins, 5);
  ASSERT_EQ(d.nbinsfull, 8);
  const auto& bv = *d.betavariations;
  ASSERT_EQ(static_cast<int64_t>(bv.size()), d.nbinsfull * d.nbins * d.nproc);
  const int64_t psig = std::find(d.procs.begin(), d.procs.end(), "sig") - d.procs.begin();
  for (int64_t b = 0; b < d.nbinsfull; ++b)
    for (int64_t j = 0; j < d.nbins; ++j)
      for (int64_t p = 0; p < d.nproc; ++p) {
        double expected = 0.0;
        // layout: obs1 [0, 2), obs2 [2, 5), fid [5, 8)
        if (b >= 5 && j >= 2 && p == psig) expected = var[(b - 5) * 3 + (j - 2)];
        EXPECT_EQ(bv[(b * d.nbins + j) * d.nproc + p], expected) << b << " " << j << " " << p;
      }
  TensorWriter ws = make();
  ws.add_beta_variations("bkg", "obs1", "fid", std::vector<double>(6, 1.0));
  WriteOptions o;
  o.sparse = true;
  EXPECT_THROW(ws.write((test::scratch_dir("writer_betavar") / "bv_sparse.hdf5").string(), o), OptionError);
}

}  // namespace
}  // namespace rabbit
