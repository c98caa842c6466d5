// The --check oracle's rule for sparse-allreduce buckets: what the sum over
// the bucket's range must be, replayed naively on dense vectors. Every rank's
// contribution is a dense vector over the range (its selected values, 0
// elsewhere); each algorithm's rounds are replayed on those vectors, every
// re-selection keeping the k largest magnitudes of a whole block with the
// oracle's own sort (oracle::sorted_topk) and zeroing the rest. A dense 0
// stands for "no entry": the engine's pair merges add a present value to an
// absent one as x + 0 = x, so the sums are the same fp32 additions.
// The schedules (who sends to whom, block sizes) are restated here from the
// algorithms' definitions, not taken from runtime/sparse_allreduce.h:
//  - gtopk: in round s = 1, 2, 4, ... rank r with r mod 2s == 0 adds rank
//    r + s's vector to its own (receiver + sender) and keeps the k =
//    bucket.sent_elements largest; the result is rank 0's;
//  - spardl: P blocks of b = ceil(n / P) elements, kb = max(1, floor(b *
//    bucket.density)) kept per block. Each round halves every rank's group
//    [lo, hi) (lower half: the first ceil(size / 2) ranks); a rank keeps the
//    blocks of its half and adds what its senders (in rank order) sent for
//    them: lower rank i sends to mid + min(i - lo, upper - 1), upper rank j
//    to lo + (j - mid); then keeps kb per kept block. Block j of the result
//    is rank j's;
//  - oktopk: region sums in rank order, i.e. the plain rank-order sum; on an
//    exact iteration the k largest of it (their smallest magnitude becomes
//    the global threshold), otherwise every sum whose magnitude reaches the
//    threshold;
//  - topk-dsa, randomk-shared: the plain rank-order sum (nothing dropped);
//  - casync-ring: the contributions are the ranks' gradients (no selection
//    comes in); K = bucket.partitions parts of ceil(n / K) elements, part j
//    visiting ranks j, j + 1, ..., j - 1 (mod P), each adding its own values
//    to what arrived and keeping the part's min(length, max(1,
//    floor(length * density))) largest.
// Exactness: gtopk, spardl, oktopk and casync-ring add in the engine's order, so the
// engine must match bit for bit; topk-dsa (recursive doubling) and
// randomk-shared (the library's allreduce) add in another order and get the
// allreduce's bound (oracle.h).
#pragma once

#include <vector>

#include "policy/bucket.h"

namespace sparsefuse::runtime::oracle {

// The sum (not yet divided by the rank count) over B's range from the ranks'
// dense CONTRIBUTIONS (B.elements values each). GLOBAL_THRESHOLD: Ok-Topk's,
// set on an exact iteration and read on the others (unused otherwise).
std::vector<float> sparse_allreduce_sum(const policy::Bucket& b, const std::vector<std::vector<float>>& contributions,
                                        float& global_threshold);

// Whether the engine must match B's sum bit for bit (else: the allreduce bound).
bool sparse_allreduce_exact(const policy::Bucket& b);

}  // namespace sparsefuse::runtime::oracle
