// Phase B of a CPU shard evaluation (docs/likelihood.md "Derivative structure"): per bin, the
// gradient, HVP and blocked dense-Hessian contributions from φ and Ψ = U M Uᵀ + diag(d); the merge
// of the threads' sums and the chain rule through h(θ) and r(π) into ξ.
#include <algorithm>
#include <cmath>

#include "rabbit/model/param_model.hpp"
#include "shard_evaluation.hpp"

namespace rabbit::cpu_detail {

using cpu::BBKind;
using cpu::BinObservation;
using cpu::HyperDual;
using Eigen::MatrixXd;
using Eigen::VectorXd;

namespace {

constexpr int kMaxCols = 4;

}  // namespace

// The Hessian sums are symmetric, so only their lower triangle is accumulated, by blocked rank-k
// updates (a SYRK for the E part, a GEMM restricted to the triangle for the J part: the J block of
// one flush may hold part of a bin's columns only and is not symmetric by itself, the total is);
// finish() mirrors it once.
inline void flush_E(Accum& acc) {
  auto HE = acc.H.bottomRightCorner(acc.Epos.rows(), acc.Epos.rows());
  if (acc.npos > 0) {
    HE.selfadjointView<Eigen::Lower>().rankUpdate(acc.Epos.leftCols(acc.npos), 1.0);
    acc.npos = 0;
  }
  if (acc.nneg > 0) {
    HE.selfadjointView<Eigen::Lower>().rankUpdate(acc.Eneg.leftCols(acc.nneg), -1.0);
    acc.nneg = 0;
  }
}
inline void flush_J(Accum& acc) {
  if (acc.nrows > 0) {
    acc.H.triangularView<Eigen::Lower>() +=
        acc.Lrows.leftCols(acc.nrows) * acc.Rrows.leftCols(acc.nrows).transpose();
    acc.nrows = 0;
  }
}

// Phase B: accumulate gradient / HVP / Hessian contributions of bin b.
// gradient = false: the gradient part is already known (cached point), only the HVP part is added.
inline void ShardEvaluation::accumulate(int64_t b, const BinScratch& sc, int64_t slot, int64_t bslot,
                                        const Request& req, Accum& acc,
                                        const double* zcoupled /* per-bin z (k) for coupled mode */,
                                        bool gradient) const {
  const int64_t e0 = L.bin_ptr[b], e1 = L.bin_ptr[b + 1];
  const int nc = sc.ncol;
  const int64_t k = sc.k;
  // gradient
  const int64_t ne = e1 - e0;
  // row of (b, p) in the per-process sums: p, or b·P + p for a bin-dependent param model
  const int64_t roff = pt.bin_dependent ? b * P : 0;
  // a dense bin's logk rows, double or float32, multiplied by row_block_products.hpp (docs/input-reader.md
  // "Precision"), prefetching the next bin's block
  const bool dense_rows = !L.sparse && ne > 0 && (gradient || k > 0);
  const bool rows32 = dense_rows && L.float32;
  const double* K64 = dense_rows && !rows32 ? L.dense_block(e0, ne).data() : nullptr;
  const float* K32 = rows32 ? L.dense_rows32(e0) : nullptr;
  row_blocks::NextBlock next = dense_rows ? next_block(b) : row_blocks::NextBlock();
  if (!gradient) {
  } else if (!L.sparse && ne > 0) {
    VectorXd wv(ne);
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t i = slot + e - e0;
      wv[e - e0] = sc.phi[i] * sc.c[i];
      acc.gpi[roff + L.entry_proc[e]] += sc.phi[i] * sc.a[i];
    }
    if (rows32)
      row_blocks::rows_transpose_times_add(K32, ne, W, wv.data(), ne, 1, acc.y.data(), W, next);
    else
      row_blocks::rows_transpose_times_add(K64, ne, W, wv.data(), ne, 1, acc.y.data(), W, next);
    next = {};  // prefetched once per bin
  } else {
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t i = slot + e - e0;
      const int p = L.entry_proc[e];
      L.row_axpy(e, sc.phi[i] * sc.c[i], acc.y.data());
      acc.gpi[roff + p] += sc.phi[i] * sc.a[i];
    }
  }
  if (k > 0) {
    // t = Uᵀ δN per column, z = U (M t) + d δN
    double tbuf[kMaxCols];
    std::vector<double> tvec;
    double* t = tbuf;
    if (nc > kMaxCols) {
      tvec.resize(nc);
      t = tvec.data();
    }
    std::vector<double> zb(k * nc);
    if (!zcoupled) {
      const double* Mb = &sc.M[bslot * nc * nc];
      for (int64_t j = 0; j < k; ++j) {
        for (int a = 0; a < nc; ++a) t[a] = 0.0;
        for (int64_t e = e0; e < e1; ++e) {
          const int64_t i = slot + e - e0;
          for (int a = 0; a < nc; ++a) t[a] += sc.U[i * nc + a] * sc.dN[i * k + j];
        }
        for (int a = 0; a < nc; ++a) {
          double acc2 = 0.0;
          for (int c = 0; c < nc; ++c) acc2 += Mb[a * nc + c] * t[c];
          zb[j * nc + a] = acc2;
        }
      }
    } else {
      for (int64_t j = 0; j < k * nc; ++j) zb[j] = zcoupled[j];
    }
    std::vector<double> omega(k);
    MatrixXd Omega(L.sparse ? 0 : ne, k);
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t i = slot + e - e0;
      const int p = L.entry_proc[e];
      for (int64_t j = 0; j < k; ++j) {
        double z = sc.d[i] * sc.dN[i * k + j];
        for (int a = 0; a < nc; ++a) z += sc.U[i * nc + a] * zb[j * nc + a];
        double om = sc.c[i] * z;
        double pipart = sc.a[i] * z;
        if (L.lognormal) {
          om += sc.phi[i] * sc.dN[i * k + j];
          pipart += sc.phi[i] * sc.a[i] * sc.dLam[i * k + j];
        }
        omega[j] = om;
        acc.hpi(roff + p, j) += pipart;
      }
      if (!L.sparse) {
        for (int64_t j = 0; j < k; ++j) Omega(e - e0, j) = omega[j];
      } else {
        for (int64_t j = 0; j < k; ++j) L.row_axpy(e, omega[j], acc.O.col(j).data());
      }
    }
    if (rows32)
      row_blocks::rows_transpose_times_add(K32, ne, W, Omega.data(), ne, k, acc.O.data(), acc.O.outerStride(),
                                           next);
    else if (!L.sparse && ne > 0 && k == 1)
      row_blocks::rows_transpose_times_add(K64, ne, W, Omega.data(), ne, k, acc.O.data(), acc.O.outerStride(),
                                           next);
    else if (!L.sparse && ne > 0)  // several columns: one blocked product reads the rows once
      acc.O.noalias() += RowBlock(K64, ne, W).transpose() * Omega;
  }
  if (req.hess) {
    // E-part: Σ_e (d c² + φ N [log-normal]) E Eᵀ, plus π parts per process
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t i = slot + e - e0;
      const int p = L.entry_proc[e];
      const double w = sc.d[i] * sc.c[i] * sc.c[i] + (L.lognormal ? sc.phi[i] * sc.N[i] : 0.0);
      const double xw = sc.d[i] * sc.c[i] * sc.a[i] + (L.lognormal ? sc.phi[i] * sc.a[i] : 0.0);
      acc.Ypp[roff + p] += sc.d[i] * sc.a[i] * sc.a[i];
      if (xw != 0.0 && M > 0) {
        VectorXd tmp = VectorXd::Zero(S);
        L.row_E_axpy(e, xw, pt.hp.data(), tmp.data());
        acc.X.row(roff + p) += tmp.transpose();
      }
      if (w != 0.0) {
        const double sw = std::sqrt(std::abs(w));
        double* col;
        if (w > 0) {
          col = acc.Epos.col(acc.npos++).data();
        } else {
          col = acc.Eneg.col(acc.nneg++).data();
        }
        std::fill(col, col + S, 0.0);
        L.row_E_axpy(e, sw, pt.hp.data(), col);
        if (acc.npos == kHessBlock || acc.nneg == kHessBlock) flush_E(acc);
      }
    }
    if (!zcoupled) {
      // J-part: J_j = Σ_e U_ej 𝒥_e, H += Jᵀ M J
      const double* Mb = &sc.M[bslot * nc * nc];
      MatrixXd Jb = MatrixXd::Zero(n, nc);
      for (int64_t e = e0; e < e1; ++e) {
        const int64_t i = slot + e - e0;
        const int p = L.entry_proc[e];
        for (int a = 0; a < nc; ++a) {
          const double u = sc.U[i * nc + a];
          if (u == 0.0) continue;
          if (M > 0 && pt.bin_dependent) {
            pt.add_rate_gradient(b, p, u * sc.a[i], Jb.col(a).data());
          } else if (M > 0) {
            Jb.col(a).head(M) += (u * sc.a[i]) * pt.jr.row(p).transpose();
          }
          L.row_E_axpy(e, u * sc.c[i], pt.hp.data(), Jb.col(a).data() + M);
        }
      }
      for (int a = 0; a < nc; ++a) {
        if (acc.nrows == kHessBlock) flush_J(acc);
        acc.Lrows.col(acc.nrows) = Jb.col(a);
        VectorXd r = VectorXd::Zero(n);
        for (int c = 0; c < nc; ++c) r += Mb[a * nc + c] * Jb.col(c);
        acc.Rrows.col(acc.nrows) = r;
        ++acc.nrows;
      }
    }
  }
}

inline row_blocks::NextBlock ShardEvaluation::next_block(int64_t b) const {
  if (L.sparse || b < s.begin_ || b + 1 >= s.end_) return {};
  const int64_t e0 = L.bin_ptr[b + 1], ne = L.entries(b + 1);
  if (ne == 0) return {};
  if (L.float32) return {L.dense_rows32(e0), ne * W * static_cast<int64_t>(sizeof(float))};
  return {L.dense_block(e0, ne).data(), ne * W * static_cast<int64_t>(sizeof(double))};
}

inline void ShardEvaluation::init_accum(Accum& acc, const Request& req, int64_t k) const {
  acc.f = 0.0;
  acc.y = VectorXd::Zero(W);
  const int64_t rows = pt.bin_dependent ? s.nbinsfull_ * P : P;  // the per-process sums' rows
  acc.gpi = VectorXd::Zero(rows);
  if (k > 0) {
    acc.O = MatrixXd::Zero(W, k);
    acc.hpi = MatrixXd::Zero(rows, k);
  }
  if (req.hess) {
    acc.H = MatrixXd::Zero(n, n);
    acc.X = MatrixXd::Zero(rows, S);
    acc.Ypp = VectorXd::Zero(rows);
    acc.Epos.resize(S, kHessBlock);
    acc.Eneg.resize(S, kHessBlock);
    acc.Lrows.resize(n, kHessBlock);
    acc.Rrows.resize(n, kHessBlock);
  }
}

inline double ShardEvaluation::finish(Request& req, std::vector<Accum>& accs) {
  Accum& tot = accs[0];
  for (size_t t = 1; t < accs.size(); ++t) {
    tot.f += accs[t].f;
    tot.y += accs[t].y;
    tot.gpi += accs[t].gpi;
    if (pt.k > 0) {
      tot.O += accs[t].O;
      tot.hpi += accs[t].hpi;
    }
    if (req.hess) {
      tot.H.triangularView<Eigen::Lower>() += accs[t].H;
      tot.X += accs[t].X;
      tot.Ypp += accs[t].Ypp;
    }
  }
  req.f = tot.f;
  const bool derivs = req.grad || pt.k > 0 || req.hess;
  if (!derivs) return tot.f;
  // y = [y_a; y_d]
  VectorXd gth = tot.y.head(S);
  VectorXd yd = L.symmetric ? VectorXd::Zero(S) : VectorXd(tot.y.tail(S));
  if (!L.symmetric) gth += pt.hp.cwiseProduct(yd);
  if (req.grad_out) {
    VectorXd& g = *req.grad_out;
    g.resize(n);
    if (M > 0 && pt.bin_dependent) {
      g.head(M) = pt.jb.transpose() * tot.gpi;
    } else if (M > 0) {
      g.head(M) = pt.jr.transpose() * tot.gpi;
    }
    g.tail(S) = gth;
  }
  MatrixXd curv;  // 𝒞_ππ
  if (pt.bin_dependent) {
    if (M > 0 && (pt.k > 0 || req.hess)) return finish_bin_dependent(req, tot, yd);
  } else if (M > 0 && (pt.k > 0 || req.hess)) {
    curv = s.model_->param_model->rate_curvature(pt.pi, tot.gpi);
  }
  if (pt.k > 0 && req.hv_out) {
    MatrixXd& HV = *req.hv_out;
    HV.resize(n, pt.k);
    MatrixXd oth = tot.O.topRows(S);
    if (!L.symmetric) {
      oth += pt.hp.asDiagonal() * tot.O.bottomRows(S);
      oth += (pt.hpp.cwiseProduct(yd)).asDiagonal() * pt.Vtheta;
    }
    HV.bottomRows(S) = oth;
    if (M > 0) HV.topRows(M) = pt.jr.transpose() * tot.hpi + curv * pt.Vpi;
  }
  if (req.hess && req.hess_out) {
    MatrixXd& H = *req.hess_out;
    H = tot.H.selfadjointView<Eigen::Lower>();
    if (!L.symmetric) H.bottomRightCorner(S, S).diagonal() += pt.hpp.cwiseProduct(yd);
    if (M > 0) {
      MatrixXd Hpp = curv;
      for (int64_t p = 0; p < P; ++p) Hpp += tot.Ypp[p] * pt.jr.row(p).transpose() * pt.jr.row(p);
      H.topLeftCorner(M, M) += Hpp;
      const MatrixXd Hpt = pt.jr.transpose() * tot.X;
      H.topRightCorner(M, S) += Hpt;
      H.bottomLeftCorner(S, M) += Hpt.transpose();
    }
  }
  return tot.f;
}

// finish() for a bin-dependent param model (docs/likelihood.md "Bin-dependent rates"): the per-(bin,
// process) sums contract with the sparse rate Jacobian, and the rates' curvature is the model's
// curvature product with the weights Σ φ a of each (bin, process).
inline double ShardEvaluation::finish_bin_dependent(Request& req, const Accum& tot, const VectorXd& yd) {
  const ParamModel& pm = *s.model_->param_model;
  const int64_t B = s.nbinsfull_;
  MatrixXd w(B, P);  // Σ φ a per bin and process
  for (int64_t b = 0; b < B; ++b) w.row(b) = tot.gpi.segment(b * P, P).transpose();
  if (pt.k > 0 && req.hv_out) {
    MatrixXd& HV = *req.hv_out;
    HV.resize(n, pt.k);
    MatrixXd oth = tot.O.topRows(S);
    if (!L.symmetric) {
      oth += pt.hp.asDiagonal() * tot.O.bottomRows(S);
      oth += (pt.hpp.cwiseProduct(yd)).asDiagonal() * pt.Vtheta;
    }
    HV.bottomRows(S) = oth;
    HV.topRows(M) = pt.jb.transpose() * tot.hpi + pm.curvature_product(pt.pi, 0, B, w, pt.Vpi);
  }
  if (req.hess && req.hess_out) {
    MatrixXd& H = *req.hess_out;
    H = tot.H.selfadjointView<Eigen::Lower>();
    if (!L.symmetric) H.bottomRightCorner(S, S).diagonal() += pt.hpp.cwiseProduct(yd);
    const Eigen::SparseMatrix<double> ypp_j = tot.Ypp.asDiagonal() * pt.jb;
    MatrixXd Hpp = pm.curvature_product(pt.pi, 0, B, w, MatrixXd::Identity(M, M));
    Hpp += MatrixXd(pt.jb.transpose() * ypp_j);
    H.topLeftCorner(M, M) += 0.5 * (Hpp + Hpp.transpose());
    const MatrixXd Hpt = pt.jb.transpose() * tot.X;
    H.topRightCorner(M, S) += Hpt;
    H.bottomLeftCorner(S, M) += Hpt.transpose();
  }
  return tot.f;
}

}  // namespace rabbit::cpu_detail
