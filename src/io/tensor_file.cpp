// TensorWriter::write: the assembled tensor (tensor_assembly.cpp) emitted through the HDF5 write
// layer (hdf5_writer.hpp) in the object order and storage conventions of docs/tensor-writer.md
// "Conventions": written to FILE.tmp, then renamed.
#include <filesystem>

#include "hdf5_writer.hpp"
#include "rabbit/io/pickle_writer.hpp"
#include "rabbit/io/tensor_writer.hpp"
#include "tensor_assembly.hpp"

namespace rabbit {
namespace {

void write_tensor_objects(hid_t file, const io::H5Out& out, const io::TensorAssembly& a,
                          const WriteOptions& options) {
  const int64_t nbins = a.nbins, nbinsfull = a.nbinsfull, nproc = a.nproc, nsyst = a.nsyst;
  const size_t max_chunk_bytes = std::max<size_t>(
      {size_t{4} * 1024 * 1024, static_cast<size_t>(nproc) * 8, static_cast<size_t>(2 * nsyst) * 8});
  if (options.write_meta) {
    out.write_meta(
        file, pickle::make_meta_pickle(a.layout, a.symmetric_tensor, a.systematic_type, options.meta_info));
  }
  out.write_strings(file, "hprocs", a.procs);
  out.write_strings(file, "hsignals", a.signals);
  out.write_strings(file, "hsysts", a.systs);
  out.write_strings(file, "hsystsnoconstraint", a.systsnoconstraint);
  out.write_strings(file, "hsystgroups", a.group_names);
  out.write_index_lists(file, "hsystgroupidxs", a.group_idxs);
  out.write_int32(file, "hnoiidxs", a.noiidxs);
  out.write_strings(file, "hpseudodatanames", a.pseudodata_names);

  out.write_doubles(file, "hconstraintweights", a.constraintweights, {nsyst}, false, max_chunk_bytes);
  out.write_doubles(file, "hdata_obs", a.data_obs, {nbins}, false, max_chunk_bytes);
  if (a.data_var != a.data_obs)
    out.write_doubles(file, "hdata_var", a.data_var, {nbins}, false, max_chunk_bytes);
  out.write_doubles(file, "hpseudodata", a.pseudodata, {nbins, a.npseudo}, false, max_chunk_bytes);
  if (a.data_cov_inv)
    out.write_doubles(file, "hdata_cov_inv", *a.data_cov_inv, {nbins, nbins}, false, max_chunk_bytes);
  out.write_doubles(file, "hsumw", a.norm, {nbinsfull, nproc}, options.float32, max_chunk_bytes);
  out.write_doubles(file, "hsumw2", a.sumw2, {nbinsfull, nproc}, options.float32, max_chunk_bytes);

  if (options.sparse) {
    const io::SparseTensors s = io::sparse_tensors(a);
    const auto nnz_norm = static_cast<int64_t>(s.norm_values.size());
    const auto nnz_logk = static_cast<int64_t>(s.logk_values.size());
    auto write_sparse = [&](const std::string& name, const std::vector<int64_t>& indices,
                            const std::vector<double>& values, int64_t nnz,
                            std::vector<int64_t> dense_shape) {
      h5::Handle group(io::make_group(file, name));
      if (!group.valid()) out.fail(name);
      out.write_flat(group, "indices", indices, {nnz, 2}, H5T_STD_I64LE, H5T_NATIVE_INT64, max_chunk_bytes);
      // Like current rabbit: values uncompressed with Blosc2, deflated in the gzip generation.
      out.write_doubles(group, "values", values, {nnz}, options.float32, max_chunk_bytes,
                        options.compression != Compression::blosc2);
      out.write_shape_attribute(group, dense_shape, name, "dense_shape");
    };
    write_sparse("hnorm_sparse", s.norm_indices, s.norm_values, nnz_norm, {nbinsfull, nproc});
    write_sparse("hlogk_sparse", s.logk_indices, s.logk_values, nnz_logk, {nnz_norm, a.width});
  } else {
    out.write_doubles(file, "hnorm", a.norm, {nbinsfull, nproc}, options.float32, max_chunk_bytes);
    if (a.symmetric_layout)
      out.write_doubles(file, "hlogk", a.logk, {nbinsfull, nproc, nsyst}, options.float32, max_chunk_bytes);
    else
      out.write_doubles(file, "hlogk", a.logk, {nbinsfull, nproc, 2, nsyst}, options.float32,
                        max_chunk_bytes);
    if (a.beta_variations)
      out.write_doubles(file, "hbetavariations", *a.beta_variations, {nbinsfull, nbins, nproc},
                        options.float32, max_chunk_bytes);
  }

  if (!a.external_terms.empty()) {
    h5::Handle group(io::make_group(file, "external_terms"));
    if (!group.valid()) out.fail("external_terms");
    for (const auto& term : a.external_terms) {
      h5::Handle sub(io::make_group(group, term.name));
      if (!sub.valid()) out.fail("external_terms/" + term.name);
      out.write_strings(sub, "params", term.params);
      // Written only when given: absent tells the reader to derive them (rabbit PR #147).
      if (term.const_value) out.write_scalar(sub, "const", *term.const_value);
      if (term.lognorm) out.write_scalar(sub, "lognorm", *term.lognorm);
      const auto n = static_cast<int64_t>(term.params.size());
      if (term.grad_values) {
        std::vector<double> g(term.grad_values->data(), term.grad_values->data() + n);
        out.write_doubles(sub, "grad_values", g, {n}, false, max_chunk_bytes);
      }
      if (term.hess) {
        std::vector<double> h(static_cast<size_t>(n * n));
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < n; ++j) h[i * n + j] = (*term.hess)(i, j);
        out.write_doubles(sub, "hess_dense", h, {n, n}, false, max_chunk_bytes);
      }
    }
  }
}

}  // namespace

void TensorWriter::write(const std::string& filename, const WriteOptions& options) const {
  const io::TensorAssembly assembly = assemble(options);
  if (options.compression == Compression::blosc2) io::require_blosc2_encoder(filename);
  const std::string tmp_name = filename + ".tmp";
  const io::H5Out out(filename, options.compression);
  {
    h5::Handle fcpl(H5Pcreate(H5P_FILE_CREATE));
    H5Pset_obj_track_times(fcpl, false);
    h5::Handle file(H5Fcreate(tmp_name.c_str(), H5F_ACC_TRUNC, fcpl, H5P_DEFAULT));
    if (!file.valid()) throw ResourceError(filename + ": cannot create the output file");
    write_tensor_objects(file, out, assembly, options);
    if (H5Fflush(file, H5F_SCOPE_GLOBAL) < 0) out.fail("(flush)");
  }
  std::error_code ec;
  std::filesystem::rename(tmp_name, filename, ec);
  if (ec) throw ResourceError(filename + ": cannot rename " + tmp_name + ": " + ec.message());
}

}  // namespace rabbit
