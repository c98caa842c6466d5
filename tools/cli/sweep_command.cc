// sparsefuse sweep: the cartesian product of --grid axes (and --schemes) over
// one scenario, run by -j threads and, under mpirun, split across ranks.
// The sweep logic lives in sim/sweep.h; this file adds the command line, the
// progress display and MPI. MPI is initialised only here, and only when
// mpirun started more than one process, so no other command needs mpirun.
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "common/atomic_file.h"
#include "common/input_error.h"
#include "sim/sweep.h"
#include "tools/cli/commands.h"
#include "tools/cli/options.h"
#include "tools/cli/output_lock.h"
#include "tools/cli/rank_exit.h"

namespace sparsefuse::cli {

namespace {

int env_int(const char* name, int fallback) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  return (*end == '\0' && value > 0 && value < (1 << 24)) ? int(value) : fallback;
}

// MPI for the lifetime of one sweep. Only created when OMPI_COMM_WORLD_SIZE
// says mpirun launched several processes: a singleton MPI_Init is slow and
// chatty, and a plain `sparsefuse sweep` needs no MPI at all.
class MpiSession {
 public:
  MpiSession() {
    int provided = 0;
    // Worker threads never call MPI; only the main thread does (FUNNELED).
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiSession() { MPI_Finalize(); }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int min(int value) const {
    int out = 0;
    MPI_Allreduce(&value, &out, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return out;
  }
  uint64_t sum(uint64_t value) const {
    uint64_t out = 0;
    MPI_Allreduce(&value, &out, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    return out;
  }
  void barrier() const { MPI_Barrier(MPI_COMM_WORLD); }
  [[noreturn]] void abort(int status) const {
    MPI_Abort(MPI_COMM_WORLD, status);
    std::exit(status);
  }

 private:
  int rank_ = 0, size_ = 1;
};

std::string format_duration(double seconds) {
  long s = long(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}h{:02}m{:02}s", s / 3600, s / 60 % 60, s % 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

// Progress on stderr: redrawn in place on a terminal; otherwise one line per
// 10 % so CI logs stay short. Called serialised by run_sweep_points.
class Progress {
 public:
  explicit Progress(std::string label) : label_(std::move(label)), tty_(::isatty(STDERR_FILENO) == 1) {}

  void update(size_t done, size_t total, bool ran) {
    using clock = std::chrono::steady_clock;
    if (ran) ++ran_;
    const double elapsed = std::chrono::duration<double>(clock::now() - start_).count();
    // The remaining points are assumed to need simulating, at the rate seen so far.
    std::string eta = ran_ ? format_duration(elapsed / double(ran_) * double(total - done)) : "?";
    if (tty_) {
      if (done < total && elapsed - last_draw_s_ < 0.1) return;
      last_draw_s_ = elapsed;
      constexpr int kWidth = 30;
      int filled = int(double(kWidth) * double(done) / double(total));
      std::cerr << fmt::format("\r{}[{}{}] {}/{} points, {} elapsed, ETA {}   ", label_, std::string(filled, '#'),
                               std::string(kWidth - filled, '.'), done, total, format_duration(elapsed), eta);
      if (done == total) std::cerr << "\n";
      std::cerr.flush();
    } else {
      size_t decile = done * 10 / total;
      if (decile == last_decile_) return;
      last_decile_ = decile;
      std::cerr << fmt::format("{}{}/{} points ({}%), {} elapsed, ETA {}\n", label_, done, total, done * 100 / total,
                               format_duration(elapsed), eta);
    }
  }

 private:
  std::string label_;
  bool tty_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double last_draw_s_ = -1;
  size_t last_decile_ = 0;
  size_t ran_ = 0;
};

// -j, or the hardware threads shared among this node's MPI ranks.
int thread_count(const po::variables_map& vm) {
  if (!vm.count("jobs")) {
    return std::max(1, int(std::thread::hardware_concurrency()) / env_int("OMPI_COMM_WORLD_LOCAL_SIZE", 1));
  }
  const int threads = vm["jobs"].as<int>();
  if (threads < 1 || threads > 4096) {
    throw InputError("-j", "", fmt::format("expected a thread count in [1, 4096], got {}", threads));
  }
  return threads;
}

// Every rank validates every point (parsing only), so a bad grid fails
// before anything is written; then rank 0 locks the output directory
// (another sweep writing there is refused). Ranks agree on the outcome; the lowest rank
// that failed reports it, the others exit quietly with the same status,
// which is returned.
std::optional<int> plan_on_every_rank(MpiSession* mpi, const std::string& scenario,
                                      const std::vector<std::string>& base, const std::vector<sim::GridAxis>& axes,
                                      int threads, const std::string& out, std::optional<OutputLock>& lock,
                                      sim::SweepPlan& plan) {
  // Planning first: a sweep refused for its grid leaves no trace, not even DIR.
  const auto lock_and_plan = [&] {
    plan = sim::plan_sweep(scenario, base, axes, /*validate=*/true, threads);
    if (!mpi || mpi->rank() == 0) lock.emplace("--out", out, "sparsefuse sweep");
  };
  if (!mpi) {
    lock_and_plan();
    return std::nullopt;
  }
  const int rank = mpi->rank(), ranks = mpi->size();
  std::optional<InputError> error;
  try {
    lock_and_plan();
  } catch (const InputError& e) {
    error = e;
  }
  const int first_failed = mpi->min(error ? rank : ranks);
  if (first_failed == ranks) return std::nullopt;
  // Every rank failed alike or one did alone: either way the job stops.
  const InputError reported = error ? *error : InputError("", "", "another rank rejected the sweep");
  return refuse_on_every_rank(rank == first_failed, reported, [&] { mpi->barrier(); });
}

// This rank's share of the points; rank 0 writes sweep.json and shows progress.
sim::SweepRunSummary run_points(MpiSession* mpi, const sim::SweepPlan& plan, const std::string& out, int threads) {
  const int rank = mpi ? mpi->rank() : 0, ranks = mpi ? mpi->size() : 1;
  sim::SweepRunSummary summary;
  try {
    if (rank == 0) write_file_atomically(out + "/sweep.json", plan.description().dump(2) + "\n");
    Progress progress(ranks > 1 ? fmt::format("sweep (rank 0 of {}) ", ranks) : "sweep ");
    sim::SweepRunOptions run_options;
    run_options.threads = threads;
    run_options.rank = rank;
    run_options.ranks = ranks;
    if (rank == 0) {
      run_options.progress = [&](size_t done, size_t total, bool ran) { progress.update(done, total, ran); };
    }
    summary = sim::run_sweep_points(plan, out, run_options);
    for (const auto& e : summary.errors) std::cerr << "sparsefuse sweep: point failed: " << e << "\n";
  } catch (const std::exception& e) {
    if (!mpi) throw;
    // A rank that cannot go on must not leave the others waiting at the barrier.
    std::cerr << fmt::format("sparsefuse: internal error on rank {}: {}\n", rank, e.what());
    mpi->abort(1);
  }
  return summary;
}

}  // namespace

int run_sweep(const Args& args) {
  po::options_description options("sparsefuse sweep options");
  options.add_options()
      ("scenario", po::value<std::string>()->required(), "scenario JSON file")
      ("grid", po::value<std::vector<std::string>>()->composing(),
       "sweep KEY over VALUES: KEY=v1,v2,... (KEY as for --set; repeat for more axes, first is outermost)")
      ("schemes", po::value<std::string>(), "comma-separated presets: shorthand for a grid over scheme (outermost)")
      ("jobs,j", po::value<int>(), "worker threads (default: hardware threads, shared among local MPI ranks)")
      ("out", po::value<std::string>()->required(), "write DIR/points/ID/result.json, DIR/results.csv, DIR/sweep.json")
      ("set", po::value<std::vector<std::string>>()->composing(),
       "override KEY=VALUE in every point (applied before the point's own values)");
  po::positional_options_description positional;
  positional.add("scenario", 1);
  po::variables_map vm;
  if (!parse_command_line(args,
                          "usage: sparsefuse sweep SCENARIO.json --grid KEY=v1,v2,... [--grid ...] [--schemes a,b] "
                          "[-j N] --out DIR [--set KEY=VALUE]...\n\n"
                          "Runs every point of the grid; a rerun with the same arguments skips finished points.\n"
                          "Under mpirun, rank r takes the points i with i % ranks == r.",
                          options, positional, vm)) {
    return 0;
  }
  const std::string scenario = vm["scenario"].as<std::string>();
  const std::string out = vm["out"].as<std::string>();
  auto base = vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{};
  std::vector<sim::GridAxis> axes;
  if (vm.count("schemes")) axes.push_back(sim::schemes_axis(vm["schemes"].as<std::string>()));
  if (vm.count("grid")) {
    for (const auto& text : vm["grid"].as<std::vector<std::string>>()) axes.push_back(sim::parse_grid_axis(text));
  }
  const int threads = thread_count(vm);

  std::unique_ptr<MpiSession> mpi;
  if (env_int("OMPI_COMM_WORLD_SIZE", 1) > 1) mpi = std::make_unique<MpiSession>();
  const int rank = mpi ? mpi->rank() : 0;

  sim::SweepPlan plan;
  std::optional<OutputLock> lock;  // held until the sweep's files are all written
  if (std::optional<int> refused = plan_on_every_rank(mpi.get(), scenario, base, axes, threads, out, lock, plan)) {
    return *refused;
  }

  auto start = std::chrono::steady_clock::now();
  const sim::SweepRunSummary summary = run_points(mpi.get(), plan, out, threads);
  uint64_t ran = summary.ran, skipped = summary.skipped, failed = summary.failed;
  if (mpi) {
    // Every rank's point files are on the shared filesystem once all arrive here.
    mpi->barrier();
    ran = mpi->sum(ran);
    skipped = mpi->sum(skipped);
    failed = mpi->sum(failed);
  }
  if (rank == 0) {
    write_file_atomically(out + "/results.csv", sim::results_csv(plan, out));
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << fmt::format("sweep: {} points: {} simulated, {} already done, {} failed; {:.2f} s", plan.points.size(),
                             ran, skipped, failed, elapsed);
    if (ran > 0 && elapsed > 0) std::cout << fmt::format(" ({:.0f} points/hour)", double(ran) / elapsed * 3600.0);
    std::cout << fmt::format("\nwrote {}/results.csv and {}/sweep.json\n", out, out);
  }
  return failed ? 1 : 0;
}

}  // namespace sparsefuse::cli
