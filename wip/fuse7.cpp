#include <Eigen/Core>
#include <omp.h>
#include <chrono>
#include <cstdio>
#include <vector>
#include <cmath>
#include <algorithm>
#include "/work/main/src/backend/cpu/row_block_products.hpp"
using namespace Eigen;
namespace rb = rabbit::cpu_detail::row_blocks;
using RowBlock = Map<const Matrix<double, Dynamic, Dynamic, RowMajor>>;
constexpr int64_t NB = 10000, NE = 10, W = 2000;
double now(){return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();}
template <class T, int SEG, int LINES=1>
inline void seg_kernel(const T* K, int64_t ne, int64_t W, const double* w, double* y, rb::NextBlock next){
  const int64_t Ws = W - W % SEG;
  for (int64_t s = 0; s < Ws; s += SEG) {
    double acc[SEG];
    for (int l = 0; l < SEG; ++l) acc[l] = y[s + l];
    for (int64_t r = 0; r < ne; ++r) { const double wr = w[r]; const T* kr = K + r * W + s;
      for (int l = 0; l < SEG; ++l) acc[l] += wr * static_cast<double>(kr[l]); }
    for (int l = 0; l < SEG; ++l) y[s + l] = acc[l];
    for (int q=0;q<LINES;++q) next.one_line();
  }
  for (int64_t c = Ws; c < W; ++c) { double v = y[c]; for (int64_t r = 0; r < ne; ++r) v += w[r] * static_cast<double>(K[r * W + c]); y[c] = v; }
}
int main(){
  std::vector<double> K(NB*NE*W);
#pragma omp parallel for schedule(static)
  for (int64_t i=0;i<NB*NE*W;++i) K[i]=1e-3*((i*7)%13);
  VectorXd m = VectorXd::Constant(W, 0.01);
  const int T=2;
  std::vector<double> a(40000000,0), bb(40000000,1), c(40000000,2);
  const char* names[]={"C lam only","A eigen","R rb no pf","R rb pf","S16 no pf","S16 pf","S16 pf2","S16 pf3"};
  const int NV=8; std::vector<std::vector<double>> tv(NV+1);
  for (int rep=0; rep<25; ++rep){
    for (int v=0; v<NV; ++v){
      double s=0; double t0=now();
#pragma omp parallel num_threads(T)
      { int t=omp_get_thread_num(); VectorXd y=VectorXd::Zero(W); VectorXd lam(NE), wv(NE); double q=0;
        const int64_t lo=NB*t/T, hi=NB*(t+1)/T;
        for (int64_t b=lo;b<hi;++b){ RowBlock Kb(K.data()+b*NE*W,NE,W); lam.noalias()=Kb*m;
          if (v==0){ q+=lam.sum(); continue;}
          for(int e=0;e<NE;++e) wv[e]=std::exp(lam[e]);
          if (v==1) y.noalias()+=Kb.transpose()*wv;
          else if (v==4) seg_kernel<double,16>(Kb.data(), NE, W, wv.data(), y.data(), rb::NextBlock());
          else if (v==5) seg_kernel<double,16>(Kb.data(), NE, W, wv.data(), y.data(), b+1<hi ? rb::NextBlock(K.data()+(b+1)*NE*W, NE*W*8) : rb::NextBlock());
          else if (v==6) seg_kernel<double,16,2>(Kb.data(), NE, W, wv.data(), y.data(), b+1<hi ? rb::NextBlock(K.data()+(b+1)*NE*W, NE*W*8) : rb::NextBlock());
          else if (v==7) seg_kernel<double,16,3>(Kb.data(), NE, W, wv.data(), y.data(), b+1<hi ? rb::NextBlock(K.data()+(b+1)*NE*W, NE*W*8) : rb::NextBlock());
          else rb::rows_transpose_times_add(Kb.data(), NE, W, wv.data(), NE, 1, y.data(), W, v==3 && b+1<hi ? rb::NextBlock(K.data()+(b+1)*NE*W, NE*W*8) : rb::NextBlock());
        }
#pragma omp atomic
        s+=y.sum()+q; }
      tv[v].push_back(now()-t0);
    }
    double t0=now();
#pragma omp parallel for num_threads(T) schedule(static)
    for (int64_t i=0;i<40000000;++i) a[i]=bb[i]+3.0*c[i];
    tv[NV].push_back(now()-t0);
  }
  auto med=[](std::vector<double> v){std::sort(v.begin(),v.end()); return v[v.size()/2];};
  double bytes=8.0*NB*NE*W; double tri=24.0*40000000/med(tv[NV]);
  for(int v=0;v<NV;++v) printf("%-20s %.1f GB/s  %.0f%% triad\n", names[v], bytes/med(tv[v])/1e9, 100*(bytes/med(tv[v]))/tri);
  printf("triad %.1f\n", tri/1e9);
}
