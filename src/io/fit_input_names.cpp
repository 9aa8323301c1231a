// read_fit_input, names and meta: the name and index lists (docs/input-reader.md "Name and index
// lists", checklist items 10-11), the meta pickle (docs/input-reader.md "The meta pickle", item 14)
// and the channels derived from it or from the defaults (docs/input-reader.md "Per file", item 15).
// Global information: a ranged read holds all of it.
#include <algorithm>
#include <unordered_set>

#include "fit_input_reader.hpp"
#include "rabbit/core/error.hpp"
#include "rabbit/core/logging.hpp"
#include "rabbit/io/meta_info.hpp"
#include "rabbit/io/pickle.hpp"

namespace rabbit::io {

using h5::DatasetInfo;

// ---------------------------------------------------------------- docs/input-reader.md "Name and index
// lists"
void FitInputReader::read_names() {
  d_.procs = r_.read_strings("hprocs");
  d_.signals = r_.read_strings("hsignals");
  d_.systs = r_.read_strings("hsysts");
  d_.systsnoconstraint = r_.read_strings("hsystsnoconstraint");
  d_.systgroups = r_.read_strings("hsystgroups");
  d_.systgroupidxs = r_.read_ragged_ints("hsystgroupidxs");
  d_.nproc = static_cast<int64_t>(d_.procs.size());
  d_.nsyst = static_cast<int64_t>(d_.systs.size());
  d_.nsignals = static_cast<int64_t>(d_.signals.size());
  d_.nsystnoconstraint = static_cast<int64_t>(d_.systsnoconstraint.size());
  if (d_.systgroupidxs.size() != d_.systgroups.size()) {
    fail("hsystgroupidxs", "has " + std::to_string(d_.systgroupidxs.size()) + " entries, 'hsystgroups' has " +
                               std::to_string(d_.systgroups.size()));
  }
  for (size_t g = 0; g < d_.systgroupidxs.size(); ++g) {
    for (int64_t i : d_.systgroupidxs[g]) {
      if (i < 0 || i >= d_.nsyst) {
        fail("hsystgroupidxs", "[" + std::to_string(g) + "] contains index " + std::to_string(i) +
                                   (i < 0 ? " < 0" : " >= nsyst=" + std::to_string(d_.nsyst)));
      }
    }
  }
  if (r_.exists("hnoiidxs")) {
    d_.noiidxs = r_.read_ints(int_info("hnoiidxs"));
  } else {
    // Legacy: concatenated member indices of the NOI groups; de-duplicate keeping order.
    log().debug("{}: 'hnoiidxs' absent, using legacy 'hnoigroupidxs'", d_.filename);
    std::vector<int64_t> raw;
    const DatasetInfo info = r_.info("hnoigroupidxs");
    if (info.type_class == h5::TypeClass::vlen) {
      for (auto& g : r_.read_ragged_ints("hnoigroupidxs")) raw.insert(raw.end(), g.begin(), g.end());
    } else {
      raw = r_.read_ints(int_info("hnoigroupidxs"));
    }
    std::unordered_set<int64_t> seen;
    for (int64_t i : raw) {
      if (seen.insert(i).second) d_.noiidxs.push_back(i);
    }
  }
  const std::string noi_name = r_.exists("hnoiidxs") ? "hnoiidxs" : "hnoigroupidxs";
  std::unordered_set<int64_t> seen;
  for (size_t k = 0; k < d_.noiidxs.size(); ++k) {
    const int64_t i = d_.noiidxs[k];
    if (i < 0 || i >= d_.nsyst) {
      fail(noi_name, "[" + std::to_string(k) + "] = " + std::to_string(i) +
                         " outside [0, nsyst=" + std::to_string(d_.nsyst) + ")");
    }
    if (!seen.insert(i).second) fail(noi_name, "index " + std::to_string(i) + " appears twice");
  }
  if (r_.exists("hpseudodatanames")) d_.pseudodatanames = r_.read_strings("hpseudodatanames");
}

// ---------------------------------------------------------------- docs/input-reader.md "The meta pickle"
void FitInputReader::read_meta() {
  if (!r_.exists("meta")) {
    log().debug("{}: no 'meta': using rabbit's defaults (one channel, asymmetric logk)", d_.filename);
    return;
  }
  if (!r_.is_group("meta")) {
    log().warn("{}: 'meta' is a dataset (legacy narf meta layout): ignored, using the defaults", d_.filename);
    return;
  }
  try {
    if (!r_.has_attribute("meta", "narf_h5py_pickle_protocol_version")) {
      throw pickle::DecodeError("meta: attribute 'narf_h5py_pickle_protocol_version' missing");
    }
    const auto version = r_.read_int_attribute("meta", "narf_h5py_pickle_protocol_version");
    if (version.size() != 1 || version[0] != 1) {
      throw pickle::DecodeError("meta: unsupported narf_h5py_pickle_protocol_version " +
                                (version.empty() ? std::string("(empty)") : std::to_string(version[0])) +
                                " (expected 1)");
    }
    if (!r_.is_dataset("meta/pickle_data")) throw pickle::DecodeError("meta: 'meta/pickle_data' missing");
    d_.meta_pickle = r_.read_bytes(r_.info("meta/pickle_data"));
    const pickle::ValuePtr root = pickle::parse(d_.meta_pickle);
    io::MetaInfo meta = io::interpret_meta(*root);
    d_.has_meta = true;
    d_.symmetric_tensor = meta.symmetric_tensor;
    d_.systematic_type = meta.systematic_type;
    meta_channels_ = std::move(meta.channels);
    have_meta_channels_ = true;
  } catch (const pickle::DecodeError& e) {
    // docs/input-reader.md "The meta pickle": a meta that cannot be decoded falls back to the no-meta
    // defaults.
    log().warn(
        "{}: {}; falling back to the defaults without meta (one channel, asymmetric logk, "
        "log_normal)",
        d_.filename, e.what());
    d_.has_meta = false;
    d_.symmetric_tensor = false;
    d_.systematic_type = SystematicType::log_normal;
    meta_channels_.clear();
    have_meta_channels_ = false;
  } catch (const InputError& e) {
    const std::string what = e.what();
    if (what.rfind(d_.filename + ":", 0) == 0) throw;
    throw InputError(d_.filename + ": " + what);
  }
}

// ---------------------------------------------------------------- docs/input-reader.md "Validation
// checklist" item 10
void FitInputReader::check_names() {
  if (d_.signals.size() > d_.procs.size()) {
    fail("hsignals", "has " + std::to_string(d_.signals.size()) + " names, 'hprocs' only " +
                         std::to_string(d_.procs.size()));
  }
  for (size_t i = 0; i < d_.signals.size(); ++i) {
    if (d_.signals[i] != d_.procs[i]) {
      fail_file("'hsignals'[" + std::to_string(i) + "]='" + d_.signals[i] + "' does not match 'hprocs'[" +
                std::to_string(i) + "]='" + d_.procs[i] + "'");
    }
  }
  auto check_unique = [&](const std::vector<std::string>& names, const std::string& path) {
    std::unordered_set<std::string> seen;
    for (const auto& n : names) {
      if (!seen.insert(n).second) fail(path, "name '" + n + "' appears twice");
    }
  };
  check_unique(d_.procs, "hprocs");
  check_unique(d_.systs, "hsysts");
  check_unique(d_.systgroups, "hsystgroups");
  std::unordered_set<std::string> systs(d_.systs.begin(), d_.systs.end());
  bool prefix = d_.systsnoconstraint.size() <= d_.systs.size();
  for (size_t i = 0; i < d_.systsnoconstraint.size(); ++i) {
    const std::string& n = d_.systsnoconstraint[i];
    if (!systs.count(n)) fail("hsystsnoconstraint", "name '" + n + "' is not in 'hsysts'");
    if (prefix && d_.systs[i] != n) prefix = false;
    const auto it = std::find(d_.systs.begin(), d_.systs.end(), n);
    const double w = d_.constraintweights[std::distance(d_.systs.begin(), it)];
    if (w != 0.0) {
      log().warn("{}: '{}' is listed in 'hsystsnoconstraint' but has constraint weight {}", d_.filename, n,
                 format_double(w));
    }
  }
  if (!prefix) log().warn("{}: 'hsystsnoconstraint' is not the prefix of 'hsysts'", d_.filename);
}

// ---------------------------------------------------------------- docs/input-reader.md "Per file",
// "Validation checklist" item 15
void FitInputReader::derive_channels() {
  if (!have_meta_channels_) {
    d_.channels = io::default_channels(d_.nbins, d_.nbinsmasked);
    return;
  }
  d_.channels = std::move(meta_channels_);
  io::assign_channel_ranges(d_.channels);
  int64_t total = 0, unmasked = 0;
  bool seen_masked = false;
  for (const ChannelInfo& ch : d_.channels) {
    if (ch.masked) {
      seen_masked = true;
    } else {
      if (seen_masked) fail_file("meta: non-masked channel '" + ch.name + "' after a masked channel");
      unmasked += ch.nbins();
      if (ch.flow) {
        log().warn(
            "{}: meta: channel '{}' has flow=True but is not masked (rabbit only allows flow on "
            "masked channels)",
            d_.filename, ch.name);
      }
    }
    total += ch.nbins();
  }
  if (total != d_.nbinsfull) {
    fail_file("meta: channels cover " + std::to_string(total) +
              " bins, tensors have nbinsfull=" + std::to_string(d_.nbinsfull));
  }
  if (unmasked != d_.nbins) {
    fail_file("meta: non-masked channels cover " + std::to_string(unmasked) +
              " bins, 'hdata_obs' has nbins=" + std::to_string(d_.nbins));
  }
}

}  // namespace rabbit::io
