#pragma once
// Test helpers for the fit-tensor reader: write small HDF5 files with the C API directly (no
// dependence on the writer under test), and emit pickle byte streams opcode by opcode.
#include <hdf5.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "rabbit/io/hdf5_handle.hpp"

namespace rabbit::test {

inline void h5check(herr_t status, const char* what) {
  if (status < 0) throw std::runtime_error(std::string("HDF5 test helper failed: ") + what);
}
inline hid_t h5check_id(hid_t id, const char* what) {
  if (id < 0) throw std::runtime_error(std::string("HDF5 test helper failed: ") + what);
  return id;
}

struct ArrayOptions {
  std::optional<std::vector<int64_t>> original_shape;  // default: the logical shape
  bool write_original_shape = true;
  bool flat = true;   // 1-D storage + original_shape; false: N-D dataspace
  hsize_t chunk = 0;  // 0: contiguous
  int gzip = -1;      // deflate level, needs chunk
  bool float32 = false;
  hid_t int_type = H5T_STD_I64LE;
};

class H5Builder {
 public:
  explicit H5Builder(const std::filesystem::path& path)
      : file_(h5check_id(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), "create")) {}
  hid_t file() const { return file_.get(); }

  void group(const std::string& name) {
    h5::Handle g(h5check_id(H5Gcreate2(file_, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "group"));
  }

  void strings(const std::string& name, const std::vector<std::string>& values) {
    h5::Handle type(H5Tcopy(H5T_C_S1));
    H5Tset_size(type, H5T_VARIABLE);
    H5Tset_cset(type, H5T_CSET_UTF8);
    std::vector<const char*> ptrs;
    for (const auto& v : values) ptrs.push_back(v.c_str());
    h5::Handle d = create_chunked_1d(name, type, values.size());
    if (!values.empty())
      h5check(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()), "write strings");
  }

  void fixed_strings(const std::string& name, const std::vector<std::string>& values, size_t width,
                     H5T_str_t pad) {
    h5::Handle type(H5Tcopy(H5T_C_S1));
    H5Tset_size(type, width);
    H5Tset_strpad(type, pad);
    std::vector<char> raw(values.size() * width, pad == H5T_STR_SPACEPAD ? ' ' : '\0');
    for (size_t i = 0; i < values.size(); ++i)
      std::memcpy(raw.data() + i * width, values[i].data(), values[i].size());
    const hsize_t n = values.size();
    h5::Handle space(H5Screate_simple(1, &n, nullptr));
    h5::Handle d(h5check_id(
        H5Dcreate2(file_, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "fixed"));
    h5check(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data()), "write fixed strings");
  }

  void ragged(const std::string& name, const std::vector<std::vector<int32_t>>& values) {
    h5::Handle type(H5Tvlen_create(H5T_STD_I32LE));
    std::vector<hvl_t> seqs;
    for (const auto& v : values) seqs.push_back(hvl_t{v.size(), const_cast<int32_t*>(v.data())});
    h5::Handle mem(H5Tvlen_create(H5T_NATIVE_INT32));
    h5::Handle d = create_chunked_1d(name, type, values.size());
    if (!values.empty())
      h5check(H5Dwrite(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, seqs.data()), "write ragged");
  }

  void int32s(const std::string& name, const std::vector<int32_t>& values) {
    h5::Handle d = create_chunked_1d(name, H5T_STD_I32LE, values.size());
    if (!values.empty())
      h5check(H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), "write i32");
  }

  void doubles(const std::string& name, const std::vector<double>& values, const std::vector<int64_t>& shape,
               const ArrayOptions& o = {}) {
    h5::Handle d = create_array(name, o.float32 ? H5T_IEEE_F32LE : H5T_IEEE_F64LE, values.size(), shape, o);
    if (!values.empty())
      h5check(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), "write doubles");
  }

  void int64s(const std::string& name, const std::vector<int64_t>& values, const std::vector<int64_t>& shape,
              const ArrayOptions& o = {}) {
    h5::Handle d = create_array(name, o.int_type, values.size(), shape, o);
    if (!values.empty())
      h5check(H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), "write ints");
  }

  void bytes(const std::string& name, const std::vector<uint8_t>& values) {
    const hsize_t n = values.size();
    h5::Handle space(H5Screate_simple(1, &n, nullptr));
    h5::Handle d(h5check_id(
        H5Dcreate2(file_, name.c_str(), H5T_STD_U8LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
        "bytes"));
    if (n)
      h5check(H5Dwrite(d, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), "write bytes");
  }

  void attr_int64(const std::string& object, const std::string& name, const std::vector<int64_t>& values,
                  bool scalar = false) {
    h5::Handle obj(h5check_id(H5Oopen(file_, object.c_str(), H5P_DEFAULT), "open object"));
    const hsize_t n = values.size();
    h5::Handle space(scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &n, nullptr));
    h5::Handle a(
        h5check_id(H5Acreate2(obj, name.c_str(), H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT), "attr"));
    if (!values.empty()) h5check(H5Awrite(a, H5T_NATIVE_INT64, values.data()), "write attr");
  }

  /// A 1-D chunked dataset whose chunks are written pre-compressed (H5Dwrite_chunk), with the
  /// given filter id and cd_values in its pipeline, so that reading exercises the decoder only.
  void raw_chunks(const std::string& name, hid_t type, hsize_t nelements, hsize_t chunk_elements,
                  int filter_id, const std::vector<unsigned>& cd_values,
                  const std::vector<std::vector<uint8_t>>& chunks,
                  const std::vector<int64_t>& original_shape) {
    const hsize_t maxdim = nelements;
    h5::Handle space(H5Screate_simple(1, &nelements, &maxdim));
    h5::Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
    h5check(H5Pset_chunk(dcpl, 1, &chunk_elements), "chunk");
    h5check(H5Pset_filter(dcpl, static_cast<H5Z_filter_t>(filter_id), H5Z_FLAG_OPTIONAL, cd_values.size(),
                          cd_values.data()),
            "set filter");
    h5::Handle d(h5check_id(H5Dcreate2(file_, name.c_str(), type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT),
                            "raw dataset"));
    for (size_t i = 0; i < chunks.size(); ++i) {
      const hsize_t offset = i * chunk_elements;
      h5check(H5Dwrite_chunk(d, H5P_DEFAULT, 0, &offset, chunks[i].size(), chunks[i].data()), "write chunk");
    }
    d.reset();
    attr_int64(name, "original_shape", original_shape);
  }

 private:
  h5::Handle create_chunked_1d(const std::string& name, hid_t type, size_t n) {
    const hsize_t dims = n;
    const hsize_t maxdims = H5S_UNLIMITED;
    h5::Handle space(H5Screate_simple(1, &dims, &maxdims));
    h5::Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
    const hsize_t chunk = 1024;
    H5Pset_chunk(dcpl, 1, &chunk);
    H5Pset_deflate(dcpl, 4);
    return h5::Handle(h5check_id(H5Dcreate2(file_, name.c_str(), type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT),
                                 name.c_str()));
  }

  h5::Handle create_array(const std::string& name, hid_t type, size_t n, const std::vector<int64_t>& shape,
                          const ArrayOptions& o) {
    std::vector<hsize_t> dims;
    if (o.flat) {
      dims.push_back(n);
    } else {
      for (int64_t e : shape) dims.push_back(static_cast<hsize_t>(e));
    }
    h5::Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
    h5::Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
    if (o.chunk > 0 && n > 0) {
      std::vector<hsize_t> chunk(dims.size(), 1);
      chunk.back() = std::min<hsize_t>(o.chunk, dims.back());
      if (dims.size() == 1) chunk[0] = std::min<hsize_t>(o.chunk, n);
      H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data());
      if (o.gzip >= 0) H5Pset_deflate(dcpl, static_cast<unsigned>(o.gzip));
    }
    h5::Handle d(h5check_id(H5Dcreate2(file_, name.c_str(), type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT),
                            name.c_str()));
    if (o.flat && o.write_original_shape) {
      const std::vector<int64_t>& os = o.original_shape ? *o.original_shape : shape;
      const hsize_t rank = os.size();
      h5::Handle aspace(H5Screate_simple(1, &rank, nullptr));
      h5::Handle a(
          h5check_id(H5Acreate2(d, "original_shape", H5T_STD_I64LE, aspace, H5P_DEFAULT, H5P_DEFAULT), "os"));
      if (rank) h5check(H5Awrite(a, H5T_NATIVE_INT64, os.data()), "write original_shape");
    }
    return d;
  }

  h5::Handle file_;
};

/// Emits pickle opcodes (protocol 2-5), for hand-made meta streams.
class PickleBytes {
 public:
  std::vector<uint8_t> bytes;

  PickleBytes& op(uint8_t b) {
    bytes.push_back(b);
    return *this;
  }
  PickleBytes& raw(const std::string& s) {
    bytes.insert(bytes.end(), s.begin(), s.end());
    return *this;
  }
  PickleBytes& le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  PickleBytes& proto(int v) { return op(0x80).op(static_cast<uint8_t>(v)); }
  PickleBytes& frame(uint64_t n) { return op(0x95).le(n, 8); }
  PickleBytes& str(const std::string& s) {  // SHORT_BINUNICODE or BINUNICODE
    if (s.size() < 256) return op(0x8c).op(static_cast<uint8_t>(s.size())).raw(s);
    return op('X').le(s.size(), 4).raw(s);
  }
  PickleBytes& memoize() { return op(0x94); }
  PickleBytes& binput(uint8_t i) { return op('q').op(i); }
  PickleBytes& binget(uint8_t i) { return op('h').op(i); }
  PickleBytes& mark() { return op('('); }
  PickleBytes& empty_dict() { return op('}'); }
  PickleBytes& empty_list() { return op(']'); }
  PickleBytes& empty_tuple() { return op(')'); }
  PickleBytes& setitem() { return op('s'); }
  PickleBytes& setitems() { return op('u'); }
  PickleBytes& appends() { return op('e'); }
  PickleBytes& append() { return op('a'); }
  PickleBytes& tuple() { return op('t'); }
  PickleBytes& tuple1() { return op(0x85); }
  PickleBytes& tuple2() { return op(0x86); }
  PickleBytes& tuple3() { return op(0x87); }
  PickleBytes& boolean(bool b) { return op(b ? 0x88 : 0x89); }
  PickleBytes& none() { return op('N'); }
  PickleBytes& integer(int64_t v) {
    if (v >= 0 && v < 256) return op('K').op(static_cast<uint8_t>(v));
    if (v >= 0 && v < 65536) return op('M').le(static_cast<uint64_t>(v), 2);
    if (v >= INT32_MIN && v <= INT32_MAX) return op('J').le(static_cast<uint64_t>(v), 4);
    return op(0x8a).op(8).le(static_cast<uint64_t>(v), 8);
  }
  PickleBytes& binfloat(double d) {
    uint64_t u;
    std::memcpy(&u, &d, 8);
    op('G');
    for (int i = 7; i >= 0; --i) bytes.push_back(static_cast<uint8_t>(u >> (8 * i)));
    return *this;
  }
  PickleBytes& stack_global(const std::string& module, const std::string& name) {
    return str(module).str(name).op(0x93);
  }
  PickleBytes& global(const std::string& module, const std::string& name) {
    return op('c').raw(module + "\n" + name + "\n");
  }
  PickleBytes& newobj() { return op(0x81); }
  PickleBytes& reduce() { return op('R'); }
  PickleBytes& build() { return op('b'); }
  PickleBytes& bytearray8(const std::string& data) { return op(0x96).le(data.size(), 8).raw(data); }
  PickleBytes& short_binbytes(const std::string& data) {
    return op('C').op(static_cast<uint8_t>(data.size())).raw(data);
  }
  PickleBytes& stop() { return op('.'); }

  /// hist-style metadata dict {"name": name, "label": label}.
  PickleBytes& axis_meta(const std::string& name, const std::string& label = "") {
    return empty_dict().mark().str("name").str(name).str("label").str(label).setitems();
  }
  /// Opening of a wrapper axis up to the core state tuple's MARK: caller emits the state items,
  /// then close_axis().
  PickleBytes& open_axis(const std::string& wrapper, const std::string& core,
                         const std::string& module = "hist.axis") {
    stack_global(module, wrapper).empty_tuple().newobj();
    empty_dict().str("_ax");
    return stack_global("boost_histogram._core.axis", core).empty_tuple().newobj().mark();
  }
  PickleBytes& close_axis() { return tuple().build().setitem().build(); }

  /// numpy array via numpy(._)core.numeric._frombuffer (protocol 5 form).
  PickleBytes& ndarray_frombuffer(const std::string& data, const std::string& typestr, char byteorder,
                                  std::vector<int64_t> shape,
                                  const std::string& module = "numpy.core.numeric") {
    stack_global(module, "_frombuffer");
    mark();
    bytearray8(data);
    dtype(typestr, byteorder);
    mark();
    for (int64_t e : shape) integer(e);
    tuple();
    str("C");
    return tuple().reduce();  // (buffer, dtype, shape, "C") — uses an outer MARK
  }
  PickleBytes& dtype(const std::string& typestr, char byteorder) {
    stack_global("numpy", "dtype").str(typestr).boolean(false).boolean(true).tuple3().reduce();
    mark()
        .integer(3)
        .str(std::string(1, byteorder))
        .none()
        .none()
        .none()
        .integer(-1)
        .integer(-1)
        .integer(0)
        .tuple();
    return build();
  }
};

}  // namespace rabbit::test

#include <functional>

namespace rabbit::test {

/// A channel of a hand-made meta with hist.axis.Regular axes.
struct RegularAxisSpec {
  int64_t n;
  double lo, hi;
  std::string name;
  std::string core = "regular_uoflow";
};
struct ChannelSpec {
  std::string name;
  std::vector<RegularAxisSpec> axes;
  bool masked = false;
  bool flow = false;
};

/// Meta pickle (protocol 4 with a memo and a FRAME, as CPython writes) for the given channels.
inline std::vector<uint8_t> make_meta_pickle(const std::vector<ChannelSpec>& channels, bool symmetric,
                                             const std::string& systematic_type = "log_normal") {
  PickleBytes p;
  p.proto(4).frame(0);  // a zero-length FRAME hint: legal, and exercises the opcode
  p.empty_dict().memoize().mark();
  p.str("channel_info").empty_dict().mark();
  for (const auto& ch : channels) {
    p.str(ch.name).empty_dict().mark().str("axes").empty_list().mark();
    for (const auto& a : ch.axes) {
      p.open_axis("Regular", a.core)
          .integer(0)
          .integer(0)
          .integer(a.n)
          .axis_meta(a.name)
          .binfloat(a.lo)
          .binfloat(a.hi - a.lo)
          .close_axis();
    }
    p.appends().str("masked").boolean(ch.masked).str("flow").boolean(ch.flow).setitems();
  }
  p.setitems();
  p.str("symmetric_tensor").boolean(symmetric);
  p.str("systematic_type").str(systematic_type);
  p.str("meta_info").empty_dict();
  p.setitems().stop();
  return p.bytes;
}

/// Content of a small, valid fit tensor; tests mutate it to break one thing at a time.
struct TensorSpec {
  std::vector<std::string> procs{"sig", "bkg"};
  std::vector<std::string> signals{"sig"};
  std::vector<std::string> systs{"free", "a", "b"};
  std::vector<std::string> systsnoconstraint{"free"};
  std::vector<std::string> systgroups{"a", "b", "free"};
  std::vector<std::vector<int32_t>> systgroupidxs{{1}, {2}, {0}};
  std::vector<int32_t> noiidxs{0};
  std::vector<double> constraintweights{0.0, 1.0, 1.0};
  std::vector<std::string> pseudodatanames{"toy"};
  int64_t nbins = 3, nbinsfull = 4;
  std::vector<double> data_obs{10, 21, 32};
  std::vector<double> pseudodata{11, 22, 33};  // [nbins, 1]
  bool symmetric = false;
  bool sparse = false;
  std::vector<double> norm;  // [nbinsfull, nproc]
  std::vector<double> logk;  // [nbinsfull, nproc, (2,) nsyst]
  std::vector<double> sumw, sumw2;
  std::optional<std::vector<uint8_t>> meta;                    // pickle bytes
  std::set<std::string> skip;                                  // datasets not to write
  std::map<std::string, std::vector<int64_t>> original_shape;  // overrides
  ArrayOptions numeric;                                        // storage of numeric arrays
  std::function<void(H5Builder&)> extra;                       // adds more objects

  TensorSpec() {
    norm = {5, 1, 0, 3, 7, 2, 0.5, 4};
    const int64_t width = symmetric ? 3 : 6;
    logk.resize(static_cast<size_t>(nbinsfull * 2 * width));
    for (size_t i = 0; i < logk.size(); ++i)
      logk[i] = (i % 5 == 0) ? 0.0 : 0.01 * static_cast<double>(i % 7) - 0.02;
    for (int64_t e = 0; e < nbinsfull * 2; ++e) {
      if (norm[static_cast<size_t>(e)] == 0) {
        for (int64_t c = 0; c < width; ++c) logk[static_cast<size_t>(e * width + c)] = 0;
      }
    }
    sumw = norm;
    for (double v : norm) sumw2.push_back(0.1 * v);
    meta = make_meta_pickle(
        {{"ch0", {{3, 0.0, 3.0, "x"}}, false, false}, {"ch1", {{1, 0.0, 1.0, "y"}}, true, false}}, false);
  }
  int64_t nproc() const { return static_cast<int64_t>(procs.size()); }
  int64_t nsyst() const { return static_cast<int64_t>(systs.size()); }
  /// Re-derives logk for the symmetric layout (drops the half-differences).
  void make_symmetric() {
    std::vector<double> sym;
    const int64_t ns = nsyst();
    for (int64_t e = 0; e < nbinsfull * nproc(); ++e) {
      for (int64_t s = 0; s < ns; ++s) sym.push_back(logk[static_cast<size_t>(e * 2 * ns + s)]);
    }
    logk = sym;
    symmetric = true;
  }
};

inline void write_tensor(const std::filesystem::path& path, const TensorSpec& t) {
  H5Builder b(path);
  auto want = [&](const std::string& name) { return t.skip.count(name) == 0; };
  auto shape_of = [&](const std::string& name, std::vector<int64_t> shape) {
    auto it = t.original_shape.find(name);
    return it == t.original_shape.end() ? shape : it->second;
  };
  auto arr = [&](const std::string& name, const std::vector<double>& v, std::vector<int64_t> shape) {
    if (!want(name)) return;
    ArrayOptions o = t.numeric;
    o.original_shape = shape_of(name, shape);
    b.doubles(name, v, shape, o);
  };
  if (want("hprocs")) b.strings("hprocs", t.procs);
  if (want("hsignals")) b.strings("hsignals", t.signals);
  if (want("hsysts")) b.strings("hsysts", t.systs);
  if (want("hsystsnoconstraint")) b.strings("hsystsnoconstraint", t.systsnoconstraint);
  if (want("hsystgroups")) b.strings("hsystgroups", t.systgroups);
  if (want("hsystgroupidxs")) b.ragged("hsystgroupidxs", t.systgroupidxs);
  if (want("hnoiidxs")) b.int32s("hnoiidxs", t.noiidxs);
  if (want("hpseudodatanames")) b.strings("hpseudodatanames", t.pseudodatanames);
  const int64_t np = t.nproc(), ns = t.nsyst();
  arr("hconstraintweights", t.constraintweights, {ns});
  arr("hdata_obs", t.data_obs, {t.nbins});
  arr("hpseudodata", t.pseudodata, {t.nbins, static_cast<int64_t>(t.pseudodatanames.size())});
  const int64_t width = t.symmetric ? ns : 2 * ns;
  if (!t.sparse) {
    arr("hnorm", t.norm, {t.nbinsfull, np});
    arr("hlogk", t.logk,
        t.symmetric ? std::vector<int64_t>{t.nbinsfull, np, ns}
                    : std::vector<int64_t>{t.nbinsfull, np, 2, ns});
  } else {
    std::vector<int64_t> nidx, lidx;
    std::vector<double> nval, lval;
    int64_t k = 0;
    for (int64_t e = 0; e < t.nbinsfull * np; ++e) {
      if (t.norm[static_cast<size_t>(e)] == 0) continue;
      nidx.push_back(e / np);
      nidx.push_back(e % np);
      nval.push_back(t.norm[static_cast<size_t>(e)]);
      for (int64_t c = 0; c < width; ++c) {
        const double v = t.logk[static_cast<size_t>(e * width + c)];
        if (v == 0) continue;
        lidx.push_back(k);
        lidx.push_back(c);
        lval.push_back(v);
      }
      ++k;
    }
    b.group("hnorm_sparse");
    b.attr_int64("hnorm_sparse", "dense_shape", shape_of("hnorm_sparse", {t.nbinsfull, np}));
    b.int64s("hnorm_sparse/indices", nidx, {static_cast<int64_t>(nval.size()), 2}, t.numeric);
    b.doubles("hnorm_sparse/values", nval, {static_cast<int64_t>(nval.size())}, t.numeric);
    b.group("hlogk_sparse");
    b.attr_int64("hlogk_sparse", "dense_shape", shape_of("hlogk_sparse", {k, width}));
    b.int64s("hlogk_sparse/indices", lidx, {static_cast<int64_t>(lval.size()), 2}, t.numeric);
    b.doubles("hlogk_sparse/values", lval, {static_cast<int64_t>(lval.size())}, t.numeric);
  }
  arr("hsumw", t.sumw, {t.nbinsfull, np});
  arr("hsumw2", t.sumw2, {t.nbinsfull, np});
  if (t.meta && want("meta")) {
    b.group("meta");
    b.attr_int64("meta", "narf_h5py_pickle_protocol_version", {1}, true);
    b.bytes("meta/pickle_data", *t.meta);
  }
  if (t.extra) t.extra(b);
}

}  // namespace rabbit::test
