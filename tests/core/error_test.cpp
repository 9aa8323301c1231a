#include "rabbit/core/error.hpp"

#include <gtest/gtest.h>

namespace rabbit {
TEST(Error, KindsMapToTheirExitCodes) {
  EXPECT_EQ(InputError("x").code(), ExitCode::input);
  EXPECT_EQ(OptionError("x").code(), ExitCode::option);
  EXPECT_EQ(ResourceError("x").code(), ExitCode::resource);
  EXPECT_EQ(NumericalError("x").code(), ExitCode::numerical);
  EXPECT_STREQ(InputError("file.hdf5: dataset 'hnorm' missing").what(), "file.hdf5: dataset 'hnorm' missing");
}
}  // namespace rabbit
