#include "policy/static_scheme.h"

#include <stdexcept>

namespace sparsefuse::policy {

namespace {

class StaticBucketWorker : public WorkerPolicy {
 public:
  StaticBucketWorker(const std::vector<Bucket>& buckets, const std::vector<int>& closed_by)
      : buckets_(buckets), closed_by_(closed_by) {}

  void on_tensor_ready(int tensor, TimeNs now, FlushSink& sink) override {
    int bucket = closed_by_[tensor];
    if (bucket >= 0) sink.flush(buckets_[bucket], now);
  }

 private:
  const std::vector<Bucket>& buckets_;
  const std::vector<int>& closed_by_;
};

}  // namespace

StaticBucketScheme::StaticBucketScheme(std::vector<Bucket> buckets) : buckets_(std::move(buckets)) {
  int tensors = buckets_.empty() ? 0 : buckets_.back().end_tensor;
  bucket_closed_by_.assign(tensors, -1);
  int expected_first = 0;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    if (buckets_[b].first_tensor != expected_first || buckets_[b].end_tensor <= expected_first) {
      throw std::logic_error("static buckets must be non-empty, contiguous and in backward order");
    }
    bucket_closed_by_[buckets_[b].end_tensor - 1] = int(b);
    expected_first = buckets_[b].end_tensor;
  }
}

std::unique_ptr<WorkerPolicy> StaticBucketScheme::make_worker_policy(int /*rank*/) const {
  return std::make_unique<StaticBucketWorker>(buckets_, bucket_closed_by_);
}

}  // namespace sparsefuse::policy
