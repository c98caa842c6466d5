#include "runtime/resident_payloads.h"

#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/nccl_communicator.h"

namespace sparsefuse::runtime {

namespace cuda = kernels::cuda;
using cuda::check;

namespace {

// An exchange's device payload: reused with the exchange.
struct Payload : DevicePayload {
  cuda::DeviceBuffer<int32_t> local, indices, gathered_indices;
  cuda::DeviceBuffer<float> values, gathered_values;
  cudaEvent_t packed = nullptr;
  Payload() { check(cudaEventCreateWithFlags(&packed, cudaEventDisableTiming), "cudaEventCreate(packed)"); }
  ~Payload() override { cudaEventDestroy(packed); }
};

Payload& payload_of(BucketExchange& x) {
  if (!x.device) x.device = std::make_unique<Payload>();
  return static_cast<Payload&>(*x.device);
}

NcclCommunicator& nccl_of(Communicator& comm) {
  auto* nccl = dynamic_cast<NcclCommunicator*>(&comm);
  if (!nccl) throw std::logic_error("device-resident payloads need the NCCL communicator");
  return *nccl;
}

}  // namespace

ResidentPayloads::ResidentPayloads(const ModelLayout& layout, int device)
    : layout_(layout), compressor_(layout, device), slots_(size_t(layout.tensors())) {
  const int64_t n = layout.total();
  gradient_.at_least(n);
  residual_.at_least(n);
  aggregate_.at_least(n);
  // Error feedback starts from zero; tensors no bucket carries stay 0 in the average.
  check(cudaMemset(residual_.data(), 0, size_t(n) * sizeof(float)), "cudaMemset(residual)");
  check(cudaMemset(aggregate_.data(), 0, size_t(n) * sizeof(float)), "cudaMemset(aggregate)");
}

ResidentPayloads::~ResidentPayloads() = default;

void ResidentPayloads::load_gradient(const float* gradient) {
  check(cudaMemcpy(gradient_.data(), gradient, size_t(layout_.total()) * sizeof(float), cudaMemcpyHostToDevice),
        "cudaMemcpy(gradient)");
}

int64_t ResidentPayloads::compress(const policy::CompressionRequest& r, int slot, const SelectionKey& key) {
  Slot& s = slots_.at(size_t(slot));
  s.count = compressor_.compress_resident(r, gradient_.data(), residual_.data(), key, s.indices.at_least(r.elements));
  return s.count;
}

// Synchronous: the copy back of a CPU selection's indices is part of what
// offloading costs (SSFusion-O copies them back too).
void ResidentPayloads::adopt_selection(int slot, const RangeSelection& selection) {
  Slot& s = slots_.at(size_t(slot));
  s.count = int64_t(selection.selection.indices.size());
  check(cudaMemcpy(s.indices.at_least(s.count), selection.selection.indices.data(), size_t(s.count) * sizeof(int32_t),
                   cudaMemcpyHostToDevice),
        "cudaMemcpy(offloaded selection)");
}

void ResidentPayloads::fill(BucketExchange& x) {
  const policy::Bucket& b = x.bucket;
  Payload& p = payload_of(x);
  const cudaStream_t stream = compressor_.compression_stream();
  const int64_t base = layout_.offset[b.first_tensor];
  if (b.sparse != policy::SparseAllreduce::kNone) {
    throw std::logic_error(describe_flush(x) +
                           ": not a bucket the device-resident path runs (resident_refusal let it through)");
  }
  if (policy::dense_reduction(b) && x.carries_whole_range()) {  // the gradient range itself is the payload
    x.dense = gradient_.data() + base + b.first_element;
    x.sent_count = b.elements;
  } else if (policy::dense_reduction(b)) {  // a hybrid bucket's dense tensors, gathered into the payload
    float* out = p.values.at_least(b.elements);
    x.dense = out;
    x.sent_count = b.elements;
    for_each_carried(x, layout_, [&](int64_t at, int64_t n) {
      check(cudaMemcpyAsync(out, gradient_.data() + at, size_t(n) * sizeof(float), cudaMemcpyDeviceToDevice, stream),
            "cudaMemcpyAsync(hybrid dense segments)");
      out += n;
    });
  } else {
    const int64_t total = pack_layout(x, layout_, [&](int id) { return slots_[size_t(id)].count; });
    int32_t* local = p.local.at_least(total);
    for (size_t i = 0; i < x.segments.size(); ++i) {
      const Segment& s = x.segments[i];
      const int64_t n = x.pack_counts[i];  // 0 for a segment not carried
      if (n == 0) continue;
      if (s.selection >= 0) {
        check(cudaMemcpyAsync(local, slots_[size_t(s.selection)].indices.data(), size_t(n) * sizeof(int32_t),
                              cudaMemcpyDeviceToDevice, stream),
              "cudaMemcpyAsync(local indices)");
      } else {
        cuda::iota_indices(local, n, stream);  // carried whole, as pairs
      }
      local += n;
    }
    x.sent_count = cuda::pack(gradient_.data() + base, x.pack_offsets, p.local.data(), x.pack_counts,
                              p.values.at_least(total), p.indices.at_least(total), pack_workspace_, stream);
  }
  check(cudaEventRecord(p.packed, stream), "cudaEventRecord(packed)");
}

void ResidentPayloads::run_collective(BucketExchange& x, Communicator& comm) {
  NcclCommunicator& nccl = nccl_of(comm);
  Payload& p = payload_of(x);
  check(cudaStreamWaitEvent(nccl.stream(), p.packed, 0), "cudaStreamWaitEvent(communication after packing)");
  if (x.bucket.collective == Collective::kAllreduce) {
    nccl.device_allreduce_sum(x.dense, x.sent_count);
    return;
  }
  if (x.bucket.collective == Collective::kReduceScatter) {
    reduce_scatter(x, nccl);
    return;
  }
  // No checksum: it would bring the pairs to the host.
  const int64_t fingerprint = int64_t(bucket_fingerprint(x.bucket, x.iteration, x.index));
  accept_announcements(x, announce(comm, {x.sent_count, fingerprint, 0}));
  const int64_t total = std::accumulate(x.counts.begin(), x.counts.end(), int64_t(0));
  nccl.device_allgatherv(p.values.data(), p.indices.data(), x.counts, p.gathered_values.at_least(total),
                         p.gathered_indices.at_least(total));
}

// P equal blocks, as the host path: a range that does not divide is copied
// into the payload's values and padded with zeros; rank r's block of sums
// lands in the gathered values.
void ResidentPayloads::reduce_scatter(BucketExchange& x, NcclCommunicator& nccl) {
  Payload& p = payload_of(x);
  const int64_t n = x.bucket.elements, P = nccl.size();
  x.shard = reduce_scatter_block(n, P);
  x.sent_count = x.shard * P;
  const float* in = x.dense;
  if (x.sent_count != n) {
    float* padded = p.values.at_least(x.sent_count);
    check(cudaMemcpyAsync(padded, x.dense, size_t(n) * sizeof(float), cudaMemcpyDeviceToDevice, nccl.stream()),
          "cudaMemcpyAsync(reduce-scatter padding)");
    check(cudaMemsetAsync(padded + n, 0, size_t(x.sent_count - n) * sizeof(float), nccl.stream()),
          "cudaMemsetAsync(reduce-scatter padding)");
    in = padded;
  }
  nccl.device_reduce_scatter_sum(in, p.gathered_values.at_least(x.shard), x.shard);
}

void ResidentPayloads::apply_result(BucketExchange& x, Communicator& comm) {
  NcclCommunicator& nccl = nccl_of(comm);
  const policy::Bucket& b = x.bucket;
  if (b.collective == Collective::kReduceScatter) {
    if (x.stage < 0) throw std::logic_error(describe_flush(x) + ": a reduce-scatter without a forward stage");
    cuda::average(payload_of(x).gathered_values.data(), x.shard, comm.size(), shards_[x.stage].at_least(x.shard),
                  nccl.stream());
  } else if (b.collective == Collective::kAllreduce && x.carries_whole_range()) {
    cuda::average(x.dense, x.sent_count, comm.size(), aggregate_.data() + (x.dense - gradient_.data()), nccl.stream());
  } else if (b.collective == Collective::kAllreduce) {  // a hybrid bucket's dense tensors, back to their places
    const float* sum = x.dense;
    for_each_carried(x, layout_, [&](int64_t at, int64_t n) {
      cuda::average(sum, n, comm.size(), aggregate_.data() + at, nccl.stream());
      sum += n;
    });
  } else {
    unpack_pairs(x, comm.size(), nccl.stream());
  }
  check(cudaStreamSynchronize(nccl.stream()), "cudaStreamSynchronize(communication)");
}

// The gathered pairs averaged into the bucket's range: straight into the
// average when the bucket carries all of it, else (a hybrid bucket's sparse
// tensors) through a scratch range whose carried tensors are copied over.
void ResidentPayloads::unpack_pairs(BucketExchange& x, int ranks, cudaStream_t stream) {
  const policy::Bucket& b = x.bucket;
  const Payload& p = payload_of(x);
  const int64_t total = std::accumulate(x.counts.begin(), x.counts.end(), int64_t(0));
  const int64_t n = layout_.elements(b.first_tensor, b.end_tensor), base = layout_.offset[b.first_tensor];
  const bool whole = x.carries_whole_range();
  float* dense = whole ? aggregate_.data() + base : unpack_scratch_.at_least(n);
  if (b.alignment == policy::Alignment::kEqualSlices) {
    x.lost = cuda::unpack_equal_slices(p.gathered_values.data(), p.gathered_indices.data(), total, ranks, n, dense,
                                       unpack_workspace_, stream);
  } else {
    cuda::unpack(p.gathered_values.data(), p.gathered_indices.data(), x.counts, n, dense, unpack_workspace_, stream);
  }
  if (whole) return;
  for_each_carried(x, layout_, [&](int64_t at, int64_t n) {
    check(cudaMemcpyAsync(aggregate_.data() + at, dense + (at - base), size_t(n) * sizeof(float),
                          cudaMemcpyDeviceToDevice, stream),
          "cudaMemcpyAsync(hybrid sparse segments)");
  });
}

void ResidentPayloads::all_gather_stage(int stage, const policy::Bucket& group, Communicator& comm) {
  NcclCommunicator& nccl = nccl_of(comm);
  const auto mine = shards_.find(stage);
  if (mine == shards_.end()) {
    throw std::logic_error(fmt::format("the all-gather of forward stage {} before its reduce-scatter", stage));
  }
  const int64_t P = comm.size(), shard = reduce_scatter_block(group.elements, P);
  float* all = gathered_shards_.at_least(shard * P);
  nccl.device_allgather_values(mine->second.data(), all, shard);
  check(cudaMemcpyAsync(aggregate_.data() + layout_.offset[group.first_tensor], all,
                        size_t(group.elements) * sizeof(float), cudaMemcpyDeviceToDevice, nccl.stream()),
        "cudaMemcpyAsync(all-gathered shards)");
  check(cudaStreamSynchronize(nccl.stream()), "cudaStreamSynchronize(communication)");
}

void ResidentPayloads::copy_to_host(std::vector<float>& aggregate, std::vector<float>& residual,
                                    const std::vector<std::unique_ptr<BucketExchange>>& exchanges) {
  const size_t n = size_t(layout_.total());
  check(cudaMemcpy(aggregate.data(), aggregate_.data(), n * sizeof(float), cudaMemcpyDeviceToHost),
        "cudaMemcpy(aggregate)");
  check(cudaMemcpy(residual.data(), residual_.data(), n * sizeof(float), cudaMemcpyDeviceToHost),
        "cudaMemcpy(residual)");
  for (const auto& x : exchanges) {
    if (x->bucket.collective != Collective::kAllgather || !x->device) continue;
    const auto& p = static_cast<const Payload&>(*x->device);
    const int64_t total = std::accumulate(x->counts.begin(), x->counts.end(), int64_t(0));
    x->gathered_values = p.gathered_values.download(total);
    x->gathered_indices = p.gathered_indices.download(total);
  }
}

}  // namespace sparsefuse::runtime
