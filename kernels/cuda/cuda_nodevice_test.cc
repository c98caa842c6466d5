// Runs everywhere (no gpu tag): the CUDA library links, device discovery
// answers without crashing, and on a machine without a device every entry
// point fails with a CudaError rather than crashing. With a device present it
// only checks the discovery answer (the gpu-tagged cuda_test covers the rest).
#include <gtest/gtest.h>

#include <string>

#include "kernels/cuda/cuda_kernels.h"

namespace sparsefuse::kernels::cuda {
namespace {

TEST(CudaNoDevice, DiscoveryAndCleanFailure) {
  std::string reason;
  const bool have = device_available(&reason);
  if (have) {
    EXPECT_TRUE(reason.empty());
    GTEST_SKIP() << "a CUDA device is present; covered by //kernels:cuda_test";
  }
  EXPECT_FALSE(reason.empty());
  EXPECT_THROW(DeviceBuffer<float>(16), CudaError);
  Workspace ws;
  EXPECT_THROW(topk_abs(nullptr, 16, 4, nullptr, nullptr, ws), CudaError);
}

TEST(CudaNoDevice, ArgumentsCheckedBeforeTheDevice) {
  Workspace ws;
  EXPECT_THROW(topk_abs(nullptr, -1, 1, nullptr, nullptr, ws), std::invalid_argument);
  EXPECT_THROW(topk_abs(nullptr, 4, -1, nullptr, nullptr, ws), std::invalid_argument);
  EXPECT_THROW(unpack(nullptr, nullptr, {}, 4, nullptr, ws), std::invalid_argument);
  EXPECT_THROW(pack(nullptr, {0, 4}, nullptr, {1, 2}, nullptr, nullptr, ws), std::invalid_argument);
}

}  // namespace
}  // namespace sparsefuse::kernels::cuda
