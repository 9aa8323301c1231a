#pragma once
// A sparse product's segment plan (csr_segments.hpp) on the device, owned through the Ops policy.
#include "pipeline_buffers.hpp"
#include "rabbit/backend/cuda/csr_segments.hpp"

namespace rabbit::pipeline {

template <class Ops>
class DeviceCsrSegments {
 public:
  explicit DeviceCsrSegments(Ops* ops)
      : nz_begin_(ops), row_begin_(ops), row_end_(ops), slot_(ops), long_row_(ops), long_slot_(ops) {}

  void upload(const CsrSegmentPlan& plan, const char* what) {
    view_.rows = plan.rows;
    view_.nseg = plan.segments();
    view_.nslots = plan.nslots;
    view_.nlong = plan.long_rows();
    nz_begin_.upload(plan.nz_begin, what);
    row_begin_.upload(plan.row_begin, what);
    row_end_.upload(plan.row_end, what);
    slot_.upload(plan.slot, what);
    long_row_.upload(plan.long_row, what);
    long_slot_.upload(plan.long_slot, what);
    view_.nz_begin = nz_begin_.get();
    view_.row_begin = row_begin_.get();
    view_.row_end = row_end_.get();
    view_.slot = slot_.get();
    view_.long_row = long_row_.get();
    view_.long_slot = long_slot_.get();
  }
  const CsrSegments& view() const { return view_; }

 private:
  Buffer<Ops, int64_t> nz_begin_, row_begin_, row_end_, slot_, long_row_, long_slot_;
  CsrSegments view_;
};

}  // namespace rabbit::pipeline
