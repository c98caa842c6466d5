// main() for every gpu-tagged gtest binary. Without a usable CUDA device it
// prints "SKIPPED: <reason>" and exits with status 77, so that a GPU test
// that could not run is never counted as passed (tools/test leaves gpu tests
// out, saying so, where nvidia-smi sees no GPU).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "kernels/cuda/cuda_kernels.h"

int main(int argc, char** argv) {
  std::string reason;
  if (!sparsefuse::kernels::cuda::device_available(&reason)) {
    std::printf("SKIPPED: no usable CUDA device (%s); GPU tests not run.\n", reason.c_str());
    return 77;
  }
  std::printf("CUDA device: %s\n", sparsefuse::kernels::cuda::device_name().c_str());
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
