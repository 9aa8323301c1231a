#include <Eigen/Core>
#include <immintrin.h>
#include <omp.h>
#include <chrono>
#include <cstdio>
#include <vector>
#include <cmath>
#include <algorithm>
#include <functional>
using namespace Eigen;
using RowBlock = Map<const Matrix<double, Dynamic, Dynamic, RowMajor>>;
constexpr int64_t NB = 10000, NE = 10, W = 2000;
double now(){return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();}
static inline double dot1(const double* k, const double* m){
  __m512d a0=_mm512_setzero_pd(),a1=a0,a2=a0,a3=a0;
  int j=0; for(;j+32<=W;j+=32){a0=_mm512_fmadd_pd(_mm512_loadu_pd(k+j),_mm512_loadu_pd(m+j),a0);a1=_mm512_fmadd_pd(_mm512_loadu_pd(k+j+8),_mm512_loadu_pd(m+j+8),a1);a2=_mm512_fmadd_pd(_mm512_loadu_pd(k+j+16),_mm512_loadu_pd(m+j+16),a2);a3=_mm512_fmadd_pd(_mm512_loadu_pd(k+j+24),_mm512_loadu_pd(m+j+24),a3);}
  double s=_mm512_reduce_add_pd(_mm512_add_pd(_mm512_add_pd(a0,a1),_mm512_add_pd(a2,a3)));
  for(;j<W;++j) s+=k[j]*m[j]; return s;}
static inline void axpy1(double w, const double* k, double* y){
  __m512d ww=_mm512_set1_pd(w); int j=0;
  for(;j+8<=W;j+=8) _mm512_storeu_pd(y+j,_mm512_fmadd_pd(ww,_mm512_loadu_pd(k+j),_mm512_loadu_pd(y+j)));
  for(;j<W;++j) y[j]+=w*k[j];}
int main(){
  std::vector<double> K(NB*NE*W);
#pragma omp parallel for schedule(static)
  for (int64_t i=0;i<NB*NE*W;++i) K[i]=1e-3*((i*7)%13);
  VectorXd m = VectorXd::Constant(W, 0.01);
  const int T=2;
  std::vector<double> a(40000000,0), bb(40000000,1), c(40000000,2);
  const int NV=6; std::vector<std::vector<double>> tv(NV+1); const char* names[NV]={"A eigen 2-pass","C eigen lam only","D mydot lam only","E mydot+myaxpy 2-pass","F row-interleave prev","G 2row-interleave"};
  for (int rep=0; rep<12; ++rep){
    for (int v=0; v<NV; ++v){
      double s=0; double t0=now();
#pragma omp parallel num_threads(T)
      { int t=omp_get_thread_num(); VectorXd y=VectorXd::Zero(W); VectorXd lam(NE), wv(NE), wp(NE); double q=0;
        const int64_t lo=NB*t/T, hi=NB*(t+1)/T;
        if (v==0) for (int64_t b=lo;b<hi;++b){ RowBlock Kb(K.data()+b*NE*W,NE,W); lam.noalias()=Kb*m; for(int e=0;e<NE;++e) wv[e]=std::exp(lam[e]); y.noalias()+=Kb.transpose()*wv;}
        if (v==1) for (int64_t b=lo;b<hi;++b){ RowBlock Kb(K.data()+b*NE*W,NE,W); lam.noalias()=Kb*m; q+=lam.sum();}
        if (v==2) for (int64_t b=lo;b<hi;++b){ for(int e=0;e<NE;++e) q+=dot1(K.data()+(b*NE+e)*W,m.data());}
        if (v==3) for (int64_t b=lo;b<hi;++b){ for(int e=0;e<NE;++e) wv[e]=std::exp(dot1(K.data()+(b*NE+e)*W,m.data())); for(int e=0;e<NE;++e) axpy1(wv[e],K.data()+(b*NE+e)*W,y.data());}
        if (v==4||v==5) { const int step = v==4?1:2;
          for (int64_t b=lo;b<=hi;++b){ const bool hasn=b<hi, hasp=b>lo;
            for(int e=0;e<NE;e+=step){ for(int u=e;u<e+step;++u){ if(hasn) lam[u]=dot1(K.data()+(b*NE+u)*W,m.data());}
              for(int u=e;u<e+step;++u) if(hasp) axpy1(wp[u],K.data()+((b-1)*NE+u)*W,y.data()); }
            if(hasn) for(int e=0;e<NE;++e) wp[e]=std::exp(lam[e]); } }
#pragma omp atomic
        s+=y.sum()+q; }
      tv[v].push_back(now()-t0);
      if (rep==0) printf("%s check %.9e\n", names[v], s);
    }
    double t0=now();
#pragma omp parallel for num_threads(T) schedule(static)
    for (int64_t i=0;i<40000000;++i) a[i]=bb[i]+3.0*c[i];
    tv[NV].push_back(now()-t0);
  }
  auto med=[](std::vector<double> v){std::sort(v.begin(),v.end()); return v[v.size()/2];};
  double bytes=8.0*NB*NE*W;
  for(int v=0;v<NV;++v) printf("%-28s %.1f GB/s  %.0f%% triad\n", names[v], bytes/med(tv[v])/1e9, 100*(24.0*40000000/med(tv[NV]))/ (bytes/med(tv[v]))*0+100*(bytes/med(tv[v]))/(24.0*40000000/med(tv[NV])));
  printf("triad %.1f\n", 24.0*40000000/med(tv[NV])/1e9);
}
