#include "kernels/code_sweep.h"

#include <array>
#include <cstddef>
#include <utility>

#include "kernels/common.h"

namespace sparsefuse::kernels {
namespace {

// Sixteen multiply-xor-shift steps whose constants depend on N: each
// instantiation is its own ~490 bytes of code (g++ 12, -O3).
#define SPARSEFUSE_STEP(k) \
  x = (x ^ (x >> 13)) * (uint64_t(N) * 2654435761ull + k##ull) + (uint64_t(N) << 7) + k##ull;
template <int N>
[[gnu::noinline]] uint64_t code_block(uint64_t x) {
  SPARSEFUSE_STEP(1) SPARSEFUSE_STEP(2) SPARSEFUSE_STEP(3) SPARSEFUSE_STEP(4)
  SPARSEFUSE_STEP(5) SPARSEFUSE_STEP(6) SPARSEFUSE_STEP(7) SPARSEFUSE_STEP(8)
  SPARSEFUSE_STEP(9) SPARSEFUSE_STEP(10) SPARSEFUSE_STEP(11) SPARSEFUSE_STEP(12)
  SPARSEFUSE_STEP(13) SPARSEFUSE_STEP(14) SPARSEFUSE_STEP(15) SPARSEFUSE_STEP(16)
  return x;
}
#undef SPARSEFUSE_STEP

template <size_t... I>
constexpr std::array<uint64_t (*)(uint64_t), sizeof...(I)> blocks(std::index_sequence<I...>) {
  return {&code_block<int(I)>...};
}

constexpr auto kBlocks = blocks(std::make_index_sequence<4096>{});

}  // namespace

uint64_t sweep_code() {
  uint64_t x = 1;
  for (auto block : kBlocks) x = block(x);
  return x;
}

void sweep_after_compute(std::vector<uint64_t>& evict) {
  sweep_caches(evict);
  sweep_code();
}

}  // namespace sparsefuse::kernels
