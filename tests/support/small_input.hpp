#pragma once
// A small FitInputData built in memory for the model tests: 4 bins (3 observed + 1 masked),
// processes sig, sig2 (signals), bkg, bkg2; systematics a (constrained), noi (unconstrained NOI),
// b (constrained).
#include <memory>

#include "rabbit/io/fit_input_data.hpp"

namespace rabbit::test {

inline std::shared_ptr<FitInputData> small_input(bool integer_data = true) {
  auto in = std::make_shared<FitInputData>();
  in->filename = "small.hdf5";
  in->procs = {"sig", "sig2", "bkg", "bkg2"};
  in->signals = {"sig", "sig2"};
  in->systs = {"a", "noi", "b"};
  in->systsnoconstraint = {"noi"};
  in->noiidxs = {1};
  in->constraintweights = Eigen::Vector3d(1.0, 0.0, 1.0);
  in->nbins = 3;
  in->nbinsmasked = 1;
  in->nbinsfull = 4;
  in->nproc = 4;
  in->nsyst = 3;
  in->nsignals = 2;
  in->nsystnoconstraint = 1;
  in->data_obs = integer_data ? Eigen::Vector3d(10.0, 0.0, 7.0) : Eigen::Vector3d(10.5, 3.25, 7.5);
  in->norm.assign(in->nbinsfull * in->nproc, 1.0);
  in->logk.assign(in->nbinsfull * in->nproc * 2 * in->nsyst, 0.0);
  in->sumw = in->norm;
  in->sumw2 = in->norm;
  ChannelInfo ch0;
  ch0.name = "ch0";
  AxisInfo x;
  x.kind = "regular";
  x.name = "x";
  x.size = 3;
  ch0.axes = {x};
  ch0.start = 0;
  ch0.stop = 3;
  ChannelInfo masked;
  masked.name = "ch0_masked";
  masked.masked = true;
  AxisInfo y;
  y.kind = "regular";
  y.name = "y";
  y.size = 1;
  masked.axes = {y};
  masked.start = 3;
  masked.stop = 4;
  in->channels = {ch0, masked};
  in->has_meta = true;
  return in;
}

}  // namespace rabbit::test
