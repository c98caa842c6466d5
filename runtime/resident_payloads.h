// The device-resident payload path of `sparsefuse run --device cuda`
// (runtime/payload_plane.h): the rank's gradient, error-feedback residual
// and averaged gradient live in device memory, and so does every bucket's
// payload. Per flush:
//  - compression (engine thread, CudaCompressor's compression stream): the
//    selection kernels read the gradient where it is; error feedback adds and
//    clears on the device; the sent values are written over the gradient and
//    the selected indices kept per selection slot;
//  - packing (same stream): an allgather's local indices are assembled on the
//    device (each selection's, and 0..n-1 for an uncompressed tensor carried
//    as pairs) and kernels::cuda::pack gathers the pairs from the gradient; a
//    dense allreduce sends the gradient range itself. An event recorded after
//    the packing is what the communication stream waits for;
//  - the collective (communication thread, NcclCommunicator's stream, after
//    that event): the ranks' (count, fingerprint) go over the host
//    communicator, then ncclAllReduce in place or the grouped broadcasts of
//    the pairs, device to device (a hybrid bucket's dense tensors are first
//    gathered into its payload, its sparse ones unpacked through a scratch
//    range: each of the two collectives carries part of the range);
//  - the average (same stream): kernels::cuda::unpack or
//    unpack_equal_slices of the gathered pairs, or the sum / P, into the
//    device's averaged gradient;
//  - DeAR: a group's reduce-scatter (ncclReduceScatter of the gradient range,
//    padded to P equal blocks when it does not divide) leaves this rank's
//    averaged shard in a device buffer per forward stage, and the stage's
//    all-gather in the next forward (ncclAllGather) writes every rank's
//    shards into the averaged gradient.
// What still crosses to the host on the clock: the counts the kernels read
// back to size their outputs, and the announcements. Unlike the host path,
// no checksum guards the gathered pairs (computing one would bring them to
// the host). For --check, copy_to_host brings the averaged gradient, the
// residual and the gathered pairs back off the clock.
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <vector>

#include "kernels/cuda/cuda_kernels.h"
#include "runtime/cuda_compressor.h"
#include "runtime/nccl_communicator.h"
#include "runtime/payload_plane.h"

namespace sparsefuse::runtime {

class ResidentPayloads : public PayloadPlane {
 public:
  // Created on the engine's thread (DEVICE made current there); the
  // communication thread must already use DEVICE (NcclCommunicator does).
  ResidentPayloads(const ModelLayout& layout, int device);
  ~ResidentPayloads() override;
  ResidentPayloads(const ResidentPayloads&) = delete;
  ResidentPayloads& operator=(const ResidentPayloads&) = delete;

  void load_gradient(const float* gradient) override;
  int64_t compress(const policy::CompressionRequest& r, int slot, const SelectionKey& key) override;
  void adopt_selection(int slot, const RangeSelection& selection) override;
  void fill(BucketExchange& exchange) override;
  void run_collective(BucketExchange& exchange, Communicator& comm) override;
  void apply_result(BucketExchange& exchange, Communicator& comm) override;
  void all_gather_stage(int stage, const policy::Bucket& group, Communicator& comm) override;
  void copy_to_host(std::vector<float>& aggregate, std::vector<float>& residual,
                    const std::vector<std::unique_ptr<BucketExchange>>& exchanges) override;

 private:
  struct Slot {  // one selection's sent indices, relative to its range start
    kernels::cuda::DeviceBuffer<int32_t> indices;
    int64_t count = 0;
  };

  void reduce_scatter(BucketExchange& exchange, NcclCommunicator& nccl);
  void unpack_pairs(BucketExchange& exchange, int ranks, cudaStream_t stream);

  const ModelLayout& layout_;
  CudaCompressor compressor_;
  kernels::cuda::Workspace pack_workspace_, unpack_workspace_;  // engine thread, communication thread
  kernels::cuda::DeviceBuffer<float> gradient_, residual_, aggregate_;
  std::vector<Slot> slots_;  // by selection id (at most one per tensor)
  std::map<int, kernels::cuda::DeviceBuffer<float>> shards_;  // DeAR: by forward stage, this rank's averages
  kernels::cuda::DeviceBuffer<float> gathered_shards_;         // DeAR: a stage's all-gather
  kernels::cuda::DeviceBuffer<float> unpack_scratch_;          // a hybrid bucket's sparse range
};

}  // namespace sparsefuse::runtime
