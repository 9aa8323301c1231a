// CusolverLinalg: Cholesky factorisations (and factor-and-solve) on one CUDA device through
// cuSOLVER's potrf/potrs, in double precision, on the device's own stream. Device buffers grow and
// are reused between calls; a mutex serialises callers (one handle, one stream).
#include "rabbit/backend/cuda/cusolver_linalg.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <cmath>
#include <mutex>

#include "cuda_check.hpp"

namespace rabbit {

struct CusolverLinalg::Device {
  int ordinal = 0;
  cudaStream_t stream = nullptr;
  cusolverDnHandle_t solver = nullptr;
  cublasHandle_t blas = nullptr;
  double* a = nullptr;  // n×n matrix, column-major, lda = n
  size_t a_capacity = 0;
  double* b = nullptr;  // right-hand sides of potrs
  size_t b_capacity = 0;
  double* work = nullptr;
  size_t work_capacity = 0;
  double* ones = nullptr;  // n ones: the diagonal shift is one AXPY with stride n+1
  size_t ones_size = 0;
  int* info = nullptr;
  std::mutex mutex;

  void select() const { cuda_check::cuda(cudaSetDevice(ordinal), ordinal, "selecting the device"); }

  void reserve(double*& ptr, size_t& capacity, size_t count, const char* what) {
    if (count <= capacity) return;
    if (ptr) cudaFree(ptr);
    ptr = nullptr;
    capacity = 0;
    cuda_check::cuda(cudaMalloc(reinterpret_cast<void**>(&ptr), count * sizeof(double)), ordinal, what);
    capacity = count;
  }

  void upload(double* dst, const double* src, size_t count, const char* what) {
    if (count == 0) return;
    cuda_check::cuda(cudaMemcpyAsync(dst, src, count * sizeof(double), cudaMemcpyHostToDevice, stream),
                     ordinal, what);
  }

  void download(double* dst, const double* src, size_t count, const char* what) {
    if (count == 0) return;
    cuda_check::cuda(cudaMemcpyAsync(dst, src, count * sizeof(double), cudaMemcpyDeviceToHost, stream),
                     ordinal, what);
    cuda_check::cuda(cudaStreamSynchronize(stream), ordinal, what);
  }

  // A (+ shift·I) onto the device.
  void load(const Eigen::MatrixXd& A, double shift) {
    const size_t n = static_cast<size_t>(A.rows());
    reserve(a, a_capacity, n * n, "allocating the matrix of a Cholesky factorisation");
    upload(a, A.data(), n * n, "copying the matrix of a Cholesky factorisation");
    if (shift != 0.0) {
      if (ones_size < n) {
        std::vector<double> host(n, 1.0);
        reserve(ones, ones_size, n, "allocating the diagonal shift");
        ones_size = n;
        upload(ones, host.data(), n, "copying the diagonal shift");
      }
      const int ni = static_cast<int>(n), stride = ni + 1;
      cuda_check::cublas(cublasDaxpy(blas, ni, &shift, ones, 1, a, stride), ordinal, "shifting the diagonal");
    }
  }

  // potrf on the leading m×m block of the loaded matrix (lda = n); returns devInfo.
  int potrf(int m, int lda) {
    int lwork = 0;
    cuda_check::cusolver(cusolverDnDpotrf_bufferSize(solver, CUBLAS_FILL_MODE_LOWER, m, a, lda, &lwork),
                         ordinal, "sizing the potrf workspace");
    reserve(work, work_capacity, static_cast<size_t>(std::max(lwork, 1)), "allocating the potrf workspace");
    cuda_check::cusolver(cusolverDnDpotrf(solver, CUBLAS_FILL_MODE_LOWER, m, a, lda, work,
                                          static_cast<int>(work_capacity), info),
                         ordinal, "potrf");
    int host_info = 0;
    cuda_check::cuda(cudaMemcpyAsync(&host_info, info, sizeof(int), cudaMemcpyDeviceToHost, stream), ordinal,
                     "reading potrf's info");
    cuda_check::cuda(cudaStreamSynchronize(stream), ordinal, "potrf");
    return host_info;
  }

  ~Device() {
    cudaSetDevice(ordinal);
    for (double* p : {a, b, work, ones})
      if (p) cudaFree(p);
    if (info) cudaFree(info);
    if (solver) cusolverDnDestroy(solver);
    if (blas) cublasDestroy(blas);
    if (stream) cudaStreamDestroy(stream);
  }
};

CusolverLinalg::CusolverLinalg(int ordinal) : ordinal_(ordinal), dev_(std::make_unique<Device>()) {
  Device& d = *dev_;
  d.ordinal = ordinal;
  d.select();
  cuda_check::cuda(cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking), ordinal, "creating a stream");
  cuda_check::cusolver(cusolverDnCreate(&d.solver), ordinal, "creating the cuSOLVER handle");
  cuda_check::cusolver(cusolverDnSetStream(d.solver, d.stream), ordinal, "binding the cuSOLVER stream");
  cuda_check::cublas(cublasCreate(&d.blas), ordinal, "creating the cuBLAS handle");
  cuda_check::cublas(cublasSetStream(d.blas, d.stream), ordinal, "binding the cuBLAS stream");
  cuda_check::cuda(cudaMalloc(reinterpret_cast<void**>(&d.info), sizeof(int)), ordinal,
                   "allocating potrf's info");
}

CusolverLinalg::~CusolverLinalg() = default;

int64_t CusolverLinalg::factor(const Eigen::MatrixXd& A, double shift, Eigen::MatrixXd* L,
                               Eigen::MatrixXd* rhs) const {
  const int64_t n = A.rows();
  if (A.cols() != n) throw Error("Cholesky factorisation of a non-square matrix");
  if (rhs && rhs->rows() != n) throw Error("Cholesky solve: right-hand side has the wrong number of rows");
  if (n == 0) {
    if (L) L->resize(0, 0);
    return 0;
  }
  Device& d = *dev_;
  std::lock_guard<std::mutex> lock(d.mutex);
  d.select();
  const int ni = static_cast<int>(n);
  d.load(A, shift);
  int info = d.potrf(ni, ni);
  if (info < 0) return 1;  // an argument error cannot come from a square n×n call; report failure
  if (info > 1 && L) {
    // The contract (as LAPACK's) promises the factor of the leading (info−1) block; cuSOLVER
    // does not document the partial state, so that block is factorised again (it is positive
    // definite by definition of info).
    d.load(A, shift);
    if (d.potrf(info - 1, ni) != 0)
      throw NumericalError("cuSOLVER potrf: the leading block before a failed pivot did not factorise");
  }
  if (L) {
    L->resize(n, n);
    d.download(L->data(), d.a, static_cast<size_t>(n * n), "reading the Cholesky factor");
    if (info == 0 && !L->diagonal().allFinite()) info = 1;  // NaN input passes potrf's test
    const int64_t valid = info == 0 ? n : info - 1;
    L->triangularView<Eigen::StrictlyUpper>().setZero();
    if (valid < n) {
      // Only the leading valid×valid block is meaningful; clear the rest instead of leaving A's entries.
      L->bottomRows(n - valid).setZero();
      L->rightCols(n - valid).setZero();
    }
    return info;
  }
  if (info != 0) return info;
  const int nrhs = static_cast<int>(rhs->cols());
  if (nrhs == 0) return 0;
  const size_t nb = static_cast<size_t>(n) * nrhs;
  d.reserve(d.b, d.b_capacity, nb, "allocating the right-hand sides of potrs");
  d.upload(d.b, rhs->data(), nb, "copying the right-hand sides of potrs");
  cuda_check::cusolver(cusolverDnDpotrs(d.solver, CUBLAS_FILL_MODE_LOWER, ni, nrhs, d.a, ni, d.b, ni, d.info),
                       ordinal_, "potrs");
  d.download(rhs->data(), d.b, nb, "reading the solution of potrs");
  if (!rhs->allFinite()) return 1;
  return 0;
}

int64_t CusolverLinalg::cholesky(const Eigen::MatrixXd& A, Eigen::MatrixXd& L) const {
  return factor(A, 0.0, &L, nullptr);
}

int64_t CusolverLinalg::cholesky_shifted(const Eigen::MatrixXd& A, double shift, Eigen::MatrixXd& L) const {
  return factor(A, shift, &L, nullptr);
}

int64_t CusolverLinalg::cholesky_solve(const Eigen::MatrixXd& A, Eigen::MatrixXd& X) const {
  return factor(A, 0.0, nullptr, &X);
}

bool CusolverLinalg::spd_inverse(const Eigen::MatrixXd& A, Eigen::MatrixXd& inverse,
                                 Eigen::VectorXd* whiten) const {
  const int64_t n = A.rows();
  if (A.cols() != n) throw Error("inverse of a non-square matrix");
  if (whiten && whiten->size() != n) throw Error("inverse: the vector to whiten has the wrong length");
  if (n == 0) {
    inverse.resize(0, 0);
    return true;
  }
  Device& d = *dev_;
  std::lock_guard<std::mutex> lock(d.mutex);
  d.select();
  const int ni = static_cast<int>(n);
  d.load(A, 0.0);
  if (d.potrf(ni, ni) != 0) return false;
  if (whiten) {  // L⁻¹ g before potri overwrites L
    d.reserve(d.b, d.b_capacity, static_cast<size_t>(n), "allocating the gradient to whiten");
    d.upload(d.b, whiten->data(), static_cast<size_t>(n), "copying the gradient to whiten");
    cuda_check::cublas(
        cublasDtrsv(d.blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, ni, d.a, ni, d.b, 1),
        ordinal_, "whitening the gradient (trsv)");
    d.download(whiten->data(), d.b, static_cast<size_t>(n), "reading the whitened gradient");
  }
  int lwork = 0;
  cuda_check::cusolver(cusolverDnDpotri_bufferSize(d.solver, CUBLAS_FILL_MODE_LOWER, ni, d.a, ni, &lwork),
                       ordinal_, "sizing the potri workspace");
  d.reserve(d.work, d.work_capacity, static_cast<size_t>(std::max(lwork, 1)),
            "allocating the potri workspace");
  cuda_check::cusolver(cusolverDnDpotri(d.solver, CUBLAS_FILL_MODE_LOWER, ni, d.a, ni, d.work,
                                        static_cast<int>(d.work_capacity), d.info),
                       ordinal_, "potri");
  int info = 0;
  cuda_check::cuda(cudaMemcpyAsync(&info, d.info, sizeof(int), cudaMemcpyDeviceToHost, d.stream), ordinal_,
                   "reading potri's info");
  inverse.resize(n, n);
  d.download(inverse.data(), d.a, static_cast<size_t>(n * n), "reading the inverse");
  if (info != 0) return false;
  inverse.triangularView<Eigen::StrictlyUpper>() = inverse.transpose();
  return inverse.allFinite() && (!whiten || whiten->allFinite());
}

std::shared_ptr<CusolverLinalg> make_cusolver_linalg(int ordinal) {
  return std::make_shared<CusolverLinalg>(ordinal);
}

}  // namespace rabbit
