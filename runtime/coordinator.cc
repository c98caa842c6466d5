#include "runtime/coordinator.h"

#include <algorithm>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

namespace sparsefuse::runtime {

using policy::Bucket;
using policy::CompressionRequest;
using policy::CoordinatedFlush;

// Records how many tensors backward has made ready. The engine's thread
// writes, the communication thread reads: one atomic count.
class CoordinatedSession::Reporter : public policy::WorkerPolicy {
 public:
  void begin_iteration(int) override { ready.store(0, std::memory_order_release); }
  void on_tensor_ready(int tensor, TimeNs, policy::FlushSink&) override {
    ready.store(tensor + 1, std::memory_order_release);
  }
  std::atomic<int> ready{0};
};

std::vector<double> encode_flush(const CoordinatedFlush& f) {
  const Bucket& b = f.bucket;
  const CompressionRequest r = f.request ? *f.request : CompressionRequest{};
  return {double(b.first_tensor),   double(b.end_tensor),    double(b.elements),        double(b.dense_elements),
          double(b.sent_elements),  double(b.bytes_per_worker), double(int(b.collective)), double(int(b.alignment)),
          double(b.communicator),   double(int(b.sparse)),   b.density,                 double(int(b.compressor)),
          double(b.partitions),     double(b.exact_threshold), double(b.repartition),   double(b.priority),
          double(f.compress),       double(r.first_tensor),  double(r.end_tensor),      double(r.elements),
          double(int(r.sparsifier)), r.density,              double(r.expected_count),  double(r.align_to_expected),
          double(int(r.placement)), double(r.error_feedback), double(b.first_element)};
}

CoordinatedFlush decode_flush(const double* v) {
  CoordinatedFlush f;
  Bucket& b = f.bucket;
  b.first_tensor = int(v[0]), b.end_tensor = int(v[1]);
  b.elements = int64_t(v[2]), b.dense_elements = int64_t(v[3]);
  b.sent_elements = int64_t(v[4]), b.bytes_per_worker = int64_t(v[5]);
  b.collective = Collective(int(v[6])), b.alignment = policy::Alignment(int(v[7]));
  b.communicator = int(v[8]), b.sparse = policy::SparseAllreduce(int(v[9]));
  b.density = v[10], b.compressor = policy::Sparsifier(int(v[11]));
  b.partitions = int(v[12]), b.exact_threshold = v[13] != 0, b.repartition = v[14] != 0, b.priority = int(v[15]);
  b.first_element = int64_t(v[26]);
  f.compress = v[16] != 0;
  if (f.compress) {
    auto r = std::make_shared<CompressionRequest>();
    r->first_tensor = int(v[17]), r->end_tensor = int(v[18]), r->elements = int64_t(v[19]);
    r->sparsifier = policy::Sparsifier(int(v[20])), r->density = v[21], r->expected_count = int64_t(v[22]);
    r->align_to_expected = v[23] != 0, r->placement = policy::Placement(int(v[24])), r->error_feedback = v[25] != 0;
    f.request = std::move(r);
  }
  return f;
}

CoordinatedSession::CoordinatedSession(std::unique_ptr<policy::Coordinator> coordinator, int tensors, TimeNs cycle_ns)
    : coordinator_(std::move(coordinator)), reporter_(std::make_unique<Reporter>()), tensors_(tensors),
      cycle_ns_(cycle_ns) {
  if (!coordinator_) throw std::logic_error("a coordinated session needs the scheme's coordinator");
}

CoordinatedSession::~CoordinatedSession() = default;

policy::WorkerPolicy& CoordinatedSession::reporter() { return *reporter_; }

void CoordinatedSession::start(int iteration, CommThread& comm, CoordinatedExecutor& engine,
                               std::chrono::steady_clock::time_point start) {
  iteration_ = iteration;
  decided_ = cycles_ = 0;
  stamped_.assign(size_t(tensors_), 0);
  done_.clear();
  ticket_ = comm.submit([this, &engine, start](Communicator& c) { run_cycles(c, engine, start); },
                        fmt::format("the negotiation cycles of iteration {}", iteration));
}

void CoordinatedSession::finish(CommThread& comm, std::chrono::milliseconds timeout,
                                std::vector<std::unique_ptr<BucketExchange>>& out) {
  comm.wait_for(ticket_, timeout);
  for (auto& x : done_) out.push_back(std::move(x));
  done_.clear();
}

void CoordinatedSession::run_cycles(Communicator& comm, CoordinatedExecutor& engine,
                                    std::chrono::steady_clock::time_point start) {
  const TimeNs period = cycle_ns_;
  int everywhere = 0;
  int64_t k = 0;
  while (decided_ < tensors_) {
    // The next tick at or after now; a cycle that overran its period starts
    // the next one at once, as Horovod's loop does.
    TimeNs tick = engine.since_start();
    if (period > 0) {
      k = std::max(k + 1, (tick + period - 1) / period);
      tick = k * period;
      std::this_thread::sleep_until(start + std::chrono::nanoseconds(tick));
    } else {
      std::this_thread::yield();
    }
    ++cycles_;
    const int64_t mine = reporter_->ready.load(std::memory_order_acquire);
    const std::vector<int64_t> counts = comm.allgather(&mine, 1);
    const int now_everywhere = int(*std::min_element(counts.begin(), counts.end()));
    for (int t = everywhere; t < now_everywhere; ++t) stamped_[t] = tick;
    everywhere = now_everywhere;
    // At most one flush per undecided tensor; slot 0 holds the count.
    response_.assign(1 + size_t(everywhere - decided_) * kFlushFields, 0.0);
    if (comm.rank() == 0) decide(everywhere);
    comm.allreduce_sum(response_.data(), int64_t(response_.size()));
    perform(comm, engine);
  }
}

void CoordinatedSession::decide(int everywhere) {
  // Tensors not yet ready everywhere are reported as never ready: they
  // cannot join a flush of stamped tensors, so every flush over stamped
  // tensors is final.
  constexpr TimeNs kNever = TimeNs(1) << 60;
  coordinator_->begin_iteration(iteration_);
  for (int t = 0; t < tensors_; ++t) coordinator_->report_ready(0, t, t < everywhere ? stamped_[t] : kNever);
  flushes_.clear();
  coordinator_->resolve(flushes_);
  size_t n = 0;
  for (const auto& f : flushes_) {
    if (f.bucket.first_tensor < decided_ || f.bucket.end_tensor > everywhere) continue;
    const std::vector<double> fields = encode_flush(f);
    std::copy(fields.begin(), fields.end(), response_.begin() + 1 + n * kFlushFields);
    ++n;
  }
  response_[0] = double(n);
}

void CoordinatedSession::perform(Communicator& comm, CoordinatedExecutor& engine) {
  const int n = int(response_[0]);
  for (int i = 0; i < n; ++i) {
    const CoordinatedFlush f = decode_flush(response_.data() + 1 + i * kFlushFields);
    if (f.bucket.first_tensor != decided_) {
      throw std::logic_error(fmt::format("the coordinator decided tensors [{}, {}) while [{}, ...) was next",
                                         f.bucket.first_tensor, f.bucket.end_tensor, decided_));
    }
    const TimeNs compression = f.compress ? engine.compress_agreed(*f.request) : 0;
    std::unique_ptr<BucketExchange> x = engine.make_exchange(f.bucket, engine.since_start());
    x->iteration = iteration_;
    x->index = int(done_.size());
    x->compression_ns = compression;
    if (f.compress) {  // what was selected, as the simulator records it
      x->bucket.sent_elements = x->sent_count;
      x->bucket.bytes_per_worker = 8 * x->sent_count;
    }
    engine.execute(*x, comm);
    decided_ = f.bucket.end_tensor;
    done_.push_back(std::move(x));
  }
}

}  // namespace sparsefuse::runtime
