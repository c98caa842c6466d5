#include "sim/coordinated_posts.h"

#include <algorithm>

namespace sparsefuse::sim {

void post_coordinated_flushes(policy::Coordinator& coordinator, int it, const BackwardStage& backward,
                              std::vector<WorkerStreams>& streams, WorkerExecutor& executor, FlushRecord& record,
                              std::vector<TimeNs>& not_before) {
  std::vector<policy::CoordinatedFlush> flushes;
  coordinator.resolve(flushes);
  for (const auto& f : flushes) {
    record.buckets.push_back(f.bucket);
    not_before.push_back(f.not_before);
  }
  for (int w = 0; w < int(streams.size()); ++w) {
    executor.bind(w, it, streams[w], false);
    for (size_t i = 0; i < flushes.size(); ++i) {
      const policy::CoordinatedFlush& f = flushes[i];
      const TimeNs own = backward.ready_at(w, f.bucket.end_tensor - 1);
      if (!f.compress) {
        record.posts.push_back(own);
        record.bytes.push_back(f.bucket.bytes_per_worker);
        record.compression.push_back(0);
        continue;
      }
      const TimeNs from = std::max(own, f.not_before);
      policy::CompressionOutcome out = executor.compress(*f.request, from);
      const WorkerExecutor::Packed packed = executor.pack(f.bucket, out.selected, out.done);
      record.posts.push_back(packed.post);
      record.bytes.push_back(8 * out.selected);
      record.compression.push_back(out.done - from + packed.duration);
      if (w == 0) {  // buckets are worker 0's view, as for every scheme
        record.buckets[i].sent_elements = out.selected;
        record.buckets[i].bytes_per_worker = 8 * out.selected;
      }
    }
  }
}

}  // namespace sparsefuse::sim
