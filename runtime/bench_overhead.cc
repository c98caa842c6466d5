// The runtime's dense path against raw MPI_Allreduce of the same bytes, on
// the same ranks (mpirun -np P bench_overhead [--sizes N,N,...] [--reps R]).
// A benchmark, not a test: it prints the figures, it asserts nothing.
//
// runtime: one dense allreduce bucket of N floats as the engine runs it —
//   the payload set up (fill_payload: a bucket carrying its whole range is
//   reduced in place in the gradient itself), the collective handed to the
//   communication thread (CommThread, MpiCommunicator) and run there as
//   RankEngine::execute runs it (a sum left in the gradient is not averaged
//   there), the main thread waiting for it (wait_for); timed on the main
//   thread. The exchange is reused from one repetition to the next, as the
//   engine reuses last iteration's.
// Then, off both clocks, what the reader of the result pays: a plain copy
// of the N floats out (what `sparsefuse train` copies into p.grad anyway)
// and the same copy with the division by P folded in (kernels::average,
// what RankEngine::average_into does): the "average" column is its excess
// over the plain copy.
// raw: MPI_Allreduce(MPI_IN_PLACE, N floats, MPI_SUM) called directly on the
//   thread that initialised MPI (the communication thread: MPI is FUNNELED),
//   timed around the call alone.
// Both reduce in place, so each repetition first refills its buffer with this
// rank's gradient, off the clock (the engine's gradient is fresh every
// iteration too). Both start the same way: a barrier run as a job on the
// communication thread, the main thread waking from it, then the next job.
// (A barrier called right before the raw call, on the same thread, starts
// the ranks in lockstep, and at 16 MiB on this VM that made the raw
// allreduce 25 % slower than one started as the runtime starts it:
// runtime/README.md.) They alternate repetition by
// repetition (so drift in the machine's load hits both alike); each repetition's time is the
// slowest rank's; the figure is the median over R repetitions after R/5
// warm-up ones. overhead = runtime / raw - 1.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/median.h"
#include "kernels/pack.h"
#include "kernels/synthetic.h"
#include "runtime/comm_thread.h"
#include "runtime/exchange.h"
#include "runtime/mpi_communicator.h"

namespace sparsefuse::runtime {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kTimeout{120'000};

// This rank's seconds: {total, building the payload, the collective on the
// communication thread; the reader's plain copy out, and its copy with the average}.
struct RuntimeTimes {
  double total = 0, payload = 0, collective = 0, copy = 0, average = 0;
};

RuntimeTimes runtime_path(CommThread& comm, const ModelLayout& layout, BucketExchange& x,
                          const std::vector<float>& fresh, std::vector<float>& gradient, std::vector<float>& aggregate) {
  std::copy(fresh.begin(), fresh.end(), gradient.begin());
  comm.submit([](Communicator& c) { c.barrier(); }, "barrier");
  comm.drain(kTimeout);
  const auto seconds = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  const auto start = Clock::now();
  bucket_segments(x.bucket, layout, {-1}, {}, x.segments);
  fill_payload(x, layout, gradient.data(), {});
  const auto packed = Clock::now();
  Clock::time_point began, ended;
  const uint64_t ticket = comm.submit(
      [&](Communicator& c) {
        began = Clock::now();
        run_collective(x, c);
        std::vector<float> no_scratch;  // an allreduce never needs it
        if (!x.sums_in_gradient()) apply_result(x, layout, c.size(), aggregate.data(), no_scratch);
        ended = Clock::now();
      },
      "runtime allreduce");
  comm.wait_for(ticket, kTimeout);
  const auto done = Clock::now();
  const float* sum = gradient.data();
  std::copy(sum, sum + gradient.size(), aggregate.begin());  // both timed passes then find it warm
  const auto warm = Clock::now();
  std::copy(sum, sum + gradient.size(), aggregate.begin());
  const auto copied = Clock::now();
  kernels::average(sum, int64_t(gradient.size()), comm.size(), aggregate.data());
  const auto averaged = Clock::now();
  return {seconds(start, done), seconds(start, packed), seconds(began, ended), seconds(warm, copied),
          seconds(copied, averaged)};
}

double raw_path(CommThread& comm, const std::vector<float>& fresh, std::vector<float>& buffer) {
  std::copy(fresh.begin(), fresh.end(), buffer.begin());
  double seconds = 0;
  comm.submit([](Communicator& c) { c.barrier(); }, "barrier");
  comm.drain(kTimeout);
  comm.submit(
      [&](Communicator&) {
        const auto start = Clock::now();
        MPI_Allreduce(MPI_IN_PLACE, buffer.data(), int(buffer.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        seconds = std::chrono::duration<double>(Clock::now() - start).count();
      },
      "raw MPI_Allreduce");
  comm.drain(kTimeout);
  return seconds;
}

// Medians: the slowest rank's time of each path, and this rank's parts of the runtime's.
struct Figures {
  double runtime = 0, raw = 0, payload = 0, collective = 0, copy = 0, average = 0;
};

Figures measure(CommThread& comm, int64_t n, int reps) {
  const ModelLayout layout{{0, n}, {{n}}};
  BucketExchange x;
  x.bucket.first_tensor = 0, x.bucket.end_tensor = 1, x.bucket.elements = n;
  x.bucket.collective = Collective::kAllreduce;
  const std::vector<float> fresh = kernels::gaussian_gradient(n, 7 + uint64_t(comm.rank()), 1.0);
  std::vector<float> aggregate(static_cast<size_t>(n)), gradient = fresh, buffer = fresh;
  std::vector<double> runtime, raw, payload, collective, copy, average;
  const int warmup = std::max(1, reps / 5);
  for (int i = 0; i < warmup + reps; ++i) {
    RuntimeTimes a;
    double b;
    if (i % 2) {
      a = runtime_path(comm, layout, x, fresh, gradient, aggregate);
      b = raw_path(comm, fresh, buffer);
    } else {
      b = raw_path(comm, fresh, buffer);
      a = runtime_path(comm, layout, x, fresh, gradient, aggregate);
    }
    if (i < warmup) continue;
    runtime.push_back(a.total);
    payload.push_back(a.payload);
    collective.push_back(a.collective);
    copy.push_back(a.copy);
    average.push_back(a.average);
    raw.push_back(b);
  }
  comm.submit(
      [&](Communicator& c) {
        c.allreduce_max(runtime.data(), int64_t(runtime.size()));
        c.allreduce_max(raw.data(), int64_t(raw.size()));
      },
      "the slowest rank's times");
  comm.drain(kTimeout);
  return {median(runtime), median(raw), median(payload), median(collective), median(copy), median(average)};
}

int main_impl(int argc, char** argv) {
  std::vector<int64_t> sizes = {262144, 4194304, 16777216};  // floats: 1, 16, 64 MiB
  int reps = 30;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--reps") {
      reps = std::atoi(argv[i + 1]);
    } else if (flag == "--sizes") {
      sizes.clear();
      for (const char* p = argv[i + 1]; *p;) {
        char* end = nullptr;
        sizes.push_back(std::strtoll(p, &end, 10));
        p = *end ? end + 1 : end;
      }
    } else {
      std::fprintf(stderr, "usage: mpirun -np P bench_overhead [--sizes N,N,...] [--reps R]\n");
      return 2;
    }
  }
  if (reps < 1 || sizes.empty() || *std::min_element(sizes.begin(), sizes.end()) < 1) {
    std::fprintf(stderr, "bench_overhead: --reps and every size must be >= 1\n");
    return 2;
  }
  CommThread comm([] { return std::make_unique<MpiCommunicator>(); });
  if (comm.rank() == 0) {
    std::printf("# %d ranks; median of %d repetitions (slowest rank each), %s\n", comm.size(), reps,
                MpiCommunicator::library_version().c_str());
    std::printf("# runtime = payload + collective (on the communication thread) + hand-offs (rank 0's parts);\n"
                "# off both clocks, the reader's copy out and what folding the average into it adds\n");
    std::printf("%10s %10s %11s %13s %10s %12s %10s %9s %9s\n", "floats", "bytes", "raw (us)", "runtime (us)",
                "overhead", "payload", "collective", "copy", "average");
  }
  for (int64_t n : sizes) {
    const Figures f = measure(comm, n, reps);
    if (comm.rank() == 0) {
      std::printf("%10lld %10lld %11.1f %13.1f %9.1f%% %12.1f %10.1f %9.1f %+9.1f\n", (long long)n,
                  (long long)(4 * n), f.raw * 1e6, f.runtime * 1e6, (f.runtime / f.raw - 1) * 100, f.payload * 1e6,
                  f.collective * 1e6, f.copy * 1e6, (f.average - f.copy) * 1e6);
    }
  }
  return 0;
}

}  // namespace
}  // namespace sparsefuse::runtime

int main(int argc, char** argv) { return sparsefuse::runtime::main_impl(argc, argv); }
