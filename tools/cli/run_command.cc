// sparsefuse run: execute a scenario's scheme for real — one process per
// worker under mpirun, real gradients, CPU compression kernels and MPI
// collectives (runtime/). MPI starts first; bad input, found on every rank
// alike, is then reported by rank 0 and every rank exits 2
// (rank_exit.h). Any other failure ends this process at once with
// status 1 (its communication thread may be blocked inside MPI), and mpirun
// then ends the other ranks.
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <optional>

#include <fmt/format.h>

#include "common/atomic_file.h"
#include "common/input_error.h"
#include "kernels/cuda/cuda_kernels.h"
#include "runtime/agreement.h"
#include "runtime/comm_thread.h"
#include "runtime/cuda_run.h"
#include "runtime/driver.h"
#include "runtime/mpi_communicator.h"
#include "runtime/nccl_communicator.h"
#include "runtime/support.h"
#include "model/scenario.h"
#include "tools/cli/commands.h"
#include "tools/cli/options.h"
#include "tools/cli/progress.h"
#include "tools/cli/rank_exit.h"

namespace sparsefuse::cli {

namespace {

// mpirun's rank environment; absent when started without mpirun.
int env_int(const char* name, int fallback) {
  const char* text = std::getenv(name);
  return text && *text ? std::atoi(text) : fallback;
}

// Until --timeout is known to be valid, the bad-input barrier waits this long.
constexpr std::chrono::milliseconds kInputTimeout{60'000};

[[noreturn]] void die(int rank, const std::string& message) { die_now(fmt::format("run: rank {}", rank), message); }

// NOTES: what the reader should know about how this run relates to the simulator's (one line each).
std::string summary(const model::Scenario& s, const runtime::RunOutcome& outcome, const std::string& transport,
                    const std::vector<std::string>& notes) {
  const model::RunResult& r = outcome.result;
  const Json result = r.to_json(false);
  const Json& t = result["iteration_time_s"];
  const auto ms = [](double seconds) { return fmt::format("{:.3f} ms", seconds * 1e3); };
  std::string out;
  out += fmt::format("scenario    {}\n", s.file);
  int with_grad = 0;
  for (const auto& tensor : s.trace.tensors) with_grad += tensor.has_grad;
  out += fmt::format("model       {} ({} trace): {} tensors ({} with gradients), {:.3f} M parameters, batch {}/worker\n",
                     s.trace.model, r.provenance, s.trace.tensors.size(), with_grad, double(s.trace.parameters()) / 1e6,
                     s.batch_per_worker);
  out += fmt::format("executor    runtime-mpi: {} ranks over {} on {}, time scale {}, payloads {}\n", s.workers,
                     transport, outcome.executor["host"].get<std::string>(),
                     outcome.executor["time_scale"].get<double>(), outcome.executor["payloads"].get<std::string>());
  out += fmt::format("scheme      {}\n", s.scheme.resolved.dump());
  out += fmt::format("iterations  {} measured after {} warm-up, seed {}\n", s.iterations, s.warmup_iterations, s.seed);
  for (const std::string& note : notes) out += fmt::format("note        {}\n", note);
  out += "\n";
  out += fmt::format("iteration time  mean {}  p50 {}  p99 {}  min {}  max {}\n", ms(t["mean"]), ms(t["p50"]),
                     ms(t["p99"]), ms(t["min"]), ms(t["max"]));
  out += fmt::format("throughput      {:.1f} samples/s\n", r.throughput());
  const auto& b = r.breakdown;
  out += "breakdown per iteration (mean over ranks)\n";
  out += fmt::format("  forward {}  backward {}  compression {}\n", ms(b.forward), ms(b.backward), ms(b.compression));
  out += fmt::format("  exposed communication (incl. waiting for peers) {}  optimizer {}\n",
                     ms(b.communication_exposed), ms(b.optimizer));
  out += fmt::format("buckets         {} collectives per iteration, {:.4f} MiB sent per rank", r.buckets.size(),
                     r.bytes_sent_per_worker / (1 << 20));
  if (r.lost_contributions > 0) out += fmt::format(", {:.0f} contributions lost (equal slices)", r.lost_contributions);
  out += "\n";
  // Per-bucket lines for small plans only; result.json always has them.
  for (size_t k = 0; r.buckets.size() <= 16 && k < r.buckets.size(); ++k) {
    const auto& rec = r.buckets[k];
    out += fmt::format("  #{:<3} tensors [{}, {}) {:<9} {:>9} elements {:>11.1f} sent  compress {:>9}  collective {:>9}\n",
                       k, rec.bucket.first_tensor, rec.bucket.end_tensor, collective_name(rec.bucket.collective),
                       rec.bucket.elements, rec.sent_elements, ms(rec.compression_s), ms(rec.duration_s));
  }
  if (outcome.executor["checked"].get<bool>()) {
    out += fmt::format("check           passed: every rank's averaged gradient matched the reference in all {} "
                       "iterations\n",
                       s.warmup_iterations + s.iterations);
  }
  return out;
}

// Before the first iteration: every rank must be about to run the same plan
// (runtime/agreement.h). Otherwise rank 0 names the ranks that differ and
// every rank returns 2. A peer that never answers ends this rank (status 1).
std::optional<int> refuse_unless_ranks_agree(runtime::CommThread& comm, const model::Scenario& scenario,
                                             std::chrono::milliseconds timeout) {
  std::string problem;
  try {
    problem = runtime::disagreement(runtime::exchange_fingerprints(comm, runtime::run_fingerprint(scenario), timeout));
  } catch (const std::exception& e) {
    die(comm.rank(), e.what());
  }
  if (problem.empty()) return std::nullopt;
  return refuse_on_every_rank(comm,
                              InputError("mpirun", "",
                                         "the ranks were given different runs: " + problem +
                                             " (the scenario, its --set options or its trace differ); start every "
                                             "rank with the same arguments"),
                              timeout);
}

}  // namespace

// How this run relates to the simulator's model of it, for the summary.
static std::vector<std::string> run_notes(const model::Scenario& scenario, const policy::Scheme& scheme) {
  std::vector<std::string> notes = runtime::runtime_deviations(scheme);
  // A lagging scheme (runtime/scheduled.h): measured on ResNet-50 (runtime/README.md), iteration 0's
  // collectives were 10x slower than later ones.
  if (scheme.make_launch_scheduler() && scenario.warmup_iterations < 2) {
    notes.push_back("the first measured iteration waits in its forward for the last warm-up iteration's "
                    "collectives, here the run's first (cold) ones: use warmup_iterations >= 2 for this scheme");
  }
  return notes;
}

// Rank 0's summary and result.json. A failed write (a full disk) is reported
// naming the rank, file and reason, and the status is 1; the other ranks are
// done, so there is no need to end the job at once (die).
static int report(const model::Scenario& scenario, const runtime::RunOutcome& outcome, const std::string& transport,
                  const std::vector<std::string>& notes, const po::variables_map& vm) {
  std::cout << summary(scenario, outcome, transport, notes);
  if (!vm.count("out")) return 0;
  const std::string path = vm["out"].as<std::string>() + "/result.json";
  try {
    write_file_atomically(path, outcome.to_json().dump(2) + "\n");
  } catch (const std::exception& e) {
    std::cerr << fmt::format("sparsefuse run: rank 0: error: {}\n", e.what());
    return 1;
  }
  std::cout << "wrote " << path << "\n";
  return 0;
}

// --time-scale and --timeout into RUN; out-of-range values are bad input.
static void read_limits(const po::variables_map& vm, runtime::RunOptions& run) {
  run.time_scale = vm["time-scale"].as<double>();
  if (!(run.time_scale > 0 && run.time_scale <= 1e6)) {
    throw InputError("--time-scale", "", fmt::format("expected a number in (0, 1e6], got {}", run.time_scale));
  }
  const double timeout = vm["timeout"].as<double>();
  if (!(timeout > 0 && timeout <= 86400)) {
    throw InputError("--timeout", "", fmt::format("expected seconds in (0, 86400], got {}", timeout));
  }
  run.timeout = std::chrono::milliseconds(std::llround(timeout * 1000));
}

// Every rank's heartbeat and current job, for timeout messages: a collective,
// so called where every rank runs the same (after the agreement checks).
std::unique_ptr<runtime::PeerWatch> watch_peers(runtime::CommThread& comm, std::chrono::milliseconds timeout) {
  try {
    return runtime::PeerWatch::start(comm, timeout);
  } catch (const std::exception& e) {
    die(comm.rank(), e.what());
  }
}

// --device: "cpu" (MPI, CPU kernels) or "cuda" (NCCL, CUDA kernels), which
// needs a usable CUDA device on this host; --payloads: under cuda, "device"
// keeps the payloads on the GPU where the scheme allows (resident_refusal),
// "host" stages them through host memory (the CPU runs ignore it). Sets
// RUN's device, transport, compressor and payload plane; returns the bad-input problem, if any (the run then starts on
// MPI only to refuse on every rank).
static std::optional<InputError> read_device(const po::variables_map& vm, bool under_mpirun, int rank,
                                             runtime::RunOptions& run) {
  run.device = vm["device"].as<std::string>();
  if (run.device != "cpu" && run.device != "cuda") {
    return InputError("--device", "", fmt::format("expected cpu or cuda, got \"{}\"", run.device));
  }
  std::string reason;
  if (run.device == "cuda" && !kernels::cuda::device_available(&reason)) {
    return InputError("--device", "", fmt::format("expected a usable CUDA device for cuda, found none ({})", reason));
  }
  const std::string payloads = vm["payloads"].as<std::string>();
  if (payloads != "device" && payloads != "host") {
    return InputError("--payloads", "", fmt::format("expected device or host, got \"{}\"", payloads));
  }
  if (run.device == "cuda") {
    runtime::use_cuda(run, runtime::NcclCommunicator::device_for(rank), payloads == "device");
  } else {
    run.transport = under_mpirun ? "mpi" : "loopback";
  }
  return std::nullopt;
}

int run_runtime(const Args& args) {
  po::options_description options("sparsefuse run options");
  options.add_options()
      ("scenario", po::value<std::string>()->required(), "scenario JSON file")
      ("set", po::value<std::vector<std::string>>()->composing(), "override KEY=VALUE (dotted KEY, JSON VALUE)")
      ("out", po::value<std::string>(), "rank 0 writes DIR/result.json")
      ("time-scale", po::value<double>()->default_value(1.0),
       "multiply the trace's forward, backward and optimizer times by X (> 0) when replaying them")
      ("check", "every rank recomputes the exact averaged gradient of every iteration and fails on a mismatch")
      ("timeout", po::value<double>()->default_value(60.0),
       "seconds to wait for any one collective before the run fails (dead or hung peer)")
      ("device", po::value<std::string>()->default_value("cpu"),
       "cpu: CPU kernels, MPI collectives; cuda: CUDA kernels, NCCL collectives (needs a GPU)")
      ("payloads", po::value<std::string>()->default_value("device"), "with --device cuda: device keeps "
       "gradients and payloads in GPU memory where the scheme allows, host stages them through host memory");
  po::positional_options_description positional;
  positional.add("scenario", 1);
  po::variables_map vm;
  if (!parse_command_line(args,
                          "usage: mpirun -np P sparsefuse run SCENARIO.json [--set KEY=VALUE]... [--out DIR] "
                          "[--time-scale X] [--check] [--timeout S] [--device cpu|cuda] [--payloads device|host]\n\n"
                          "Executes the scenario's scheme with P real workers (MPI ranks; without mpirun, one\n"
                          "worker in this process). The scenario's \"workers\" must equal P (else exit 2; use\n"
                          "--set workers=P). Every preset runs; what the runtime cannot execute (e.g. Ok-Topk\n"
                          "with exact_every = 0) is refused with exit 2 and why.",
                          options, positional, vm)) {
    return 0;
  }
  const bool under_mpirun = std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr;
  const int ranks = env_int("OMPI_COMM_WORLD_SIZE", 1), rank = env_int("OMPI_COMM_WORLD_RANK", 0);
  runtime::RunOptions run;
  run.check = vm.count("check") > 0;
  const std::optional<InputError> bad_device = read_device(vm, under_mpirun, rank, run);
  const bool nccl = !bad_device && run.device == "cuda";
  runtime::CommThread::Factory factory = [under_mpirun, nccl]() -> std::unique_ptr<runtime::Communicator> {
    std::unique_ptr<runtime::Communicator> host;
    if (under_mpirun) host = std::make_unique<runtime::MpiCommunicator>();
    else host = std::make_unique<runtime::LoopbackCommunicator>();
    if (nccl) return std::make_unique<runtime::NcclCommunicator>(std::move(host));
    return host;
  };
  std::unique_ptr<runtime::PeerWatch> watch;  // outlives the communication thread's jobs
  std::unique_ptr<runtime::CommThread> comm;
  try {
    comm = std::make_unique<runtime::CommThread>(factory);
  } catch (const std::exception& e) {
    die(rank, e.what());
  }
  if (bad_device) return refuse_on_every_rank(*comm, *bad_device, kInputTimeout);
  if (comm->size() != ranks) die(rank, fmt::format("MPI reports {} ranks, mpirun's environment {}", comm->size(), ranks));
  model::Scenario scenario;
  std::unique_ptr<model::ScenarioPlan> planned;
  try {
    read_limits(vm, run);
    auto overrides = vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{};
    scenario = model::load_scenario(vm["scenario"].as<std::string>(), overrides);
    if (rank == 0) print_notes(scenario);
    planned = runtime::plan_for_runtime(scenario, ranks);
  } catch (const InputError& e) {
    return refuse_on_every_rank(*comm, e, kInputTimeout);
  }
  if (std::optional<int> refused = refuse_unless_ranks_agree(*comm, scenario, run.timeout)) return *refused;

  watch = watch_peers(*comm, run.timeout);
  if (rank == 0) run.progress = ProgressLine("run", "iterations");
  runtime::RunOutcome outcome;
  try {
    outcome = runtime::run_scenario(scenario, *planned, *comm, run);
  } catch (const std::exception& e) {
    comm->set_peer_watch(nullptr);
    if (watch) watch->remove_all_records();  // mpirun ends the other ranks, records and all
    watch.reset();
    die(rank, e.what());
  }
  if (!outcome.check_failure.empty()) {
    std::cerr << fmt::format("sparsefuse run: rank {}: --check failed: {}\n", rank, outcome.check_failure);
    return 1;
  }
  return rank == 0 ? report(scenario, outcome, run.transport, run_notes(scenario, planned->scheme()), vm) : 0;
}

}  // namespace sparsefuse::cli
