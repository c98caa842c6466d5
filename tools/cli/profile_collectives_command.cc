// sparsefuse profile-collectives: time the MPI collectives the runtime moves
// its buckets with (runtime/collective_profile.h) and write them as a
// calibrated collective table for the simulator. MPI starts first so that bad
// input is reported once, by rank 0, and every rank exits 2 before anything
// is measured (tools/cli/rank_exit.h). After that, a failed or hung collective ends this process at
// once with status 1 (its communication thread may be blocked inside MPI),
// and mpirun then ends the other ranks.
#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "common/atomic_file.h"
#include "common/input_error.h"
#include "runtime/collective_profile.h"
#include "runtime/comm_thread.h"
#include "runtime/mpi_communicator.h"
#include "tools/cli/commands.h"
#include "tools/cli/options.h"
#include "tools/cli/rank_exit.h"

namespace sparsefuse::cli {

namespace {

[[noreturn]] void die(const std::string& message) { die_now("profile-collectives", message); }

// Only rank 0 writes, so its file system decides; every rank learns whether
// it refused (the problem text itself only on rank 0; elsewhere "refused").
std::string out_problem_on_rank0(runtime::CommThread& comm, const std::string& out, std::chrono::milliseconds timeout) {
  const int rank = comm.rank();
  const std::string problem = rank == 0 && !out.empty() ? unwritable(out) : "";
  double refused = problem.empty() ? 0 : 1;
  try {
    comm.submit([&](runtime::Communicator& c) { c.allreduce_max(&refused, 1); }, "the check of --out");
    comm.drain(timeout);
  } catch (const std::exception& e) {
    die(fmt::format("rank {}: {}", rank, e.what()));
  }
  return refused == 0 ? "" : problem.empty() ? "refused by rank 0" : problem;
}

// Every collective at every size, rank 0 printing the table as it goes.
runtime::CollectiveProfile measure(runtime::CommThread& comm, const runtime::CollectiveProfileOptions& o,
                                   std::chrono::milliseconds timeout) {
  const int rank = comm.rank();
  runtime::CollectiveProfile profile;
  profile.options = o;
  profile.ranks = comm.size();
  profile.library = runtime::MpiCommunicator::library_version();
  if (rank == 0) std::cout << runtime::table_header(profile) << std::flush;
  for (Collective collective : runtime::profiled_collectives()) {
    for (int64_t bytes : runtime::profile_sizes(collective, profile.ranks, o.min_bytes, o.max_bytes)) {
      double time_us = 0;
      try {
        comm.submit(
            [&](runtime::Communicator& c) {
              time_us = runtime::time_collective(c, collective, bytes, o.warmup, o.iterations, o.working_set);
            },
            fmt::format("the {} of {} bytes", collective_name(collective), bytes));
        comm.drain(timeout);
      } catch (const std::exception& e) {
        die(fmt::format("rank {}: {}", rank, e.what()));
      }
      profile.timings.push_back({collective, bytes, time_us});
      if (rank == 0) std::cout << runtime::table_row(profile.timings.back(), profile.ranks) << std::flush;
    }
  }
  return profile;
}

}  // namespace

int run_profile_collectives(const Args& args) {
  const runtime::CollectiveProfileOptions defaults;
  po::options_description options("sparsefuse profile-collectives options");
  options.add_options()
      ("out", po::value<std::string>(), "rank 0 writes the profile (sparsefuse-profile/1) to FILE")
      ("min-bytes", po::value<int64_t>()->default_value(defaults.min_bytes), "smallest size B (bytes, >= 1)")
      ("max-bytes", po::value<int64_t>()->default_value(defaults.max_bytes),
       "largest size (bytes, <= 1073741824); sizes double from --min-bytes up to it")
      ("warmup", po::value<int>()->default_value(defaults.warmup), "untimed repetitions per size (>= 0)")
      ("iterations", po::value<int>()->default_value(defaults.iterations), "timed repetitions per size (>= 1)")
      ("working-set", po::value<int64_t>()->default_value(defaults.working_set),
       "bytes of buffer copies the repetitions cycle through (0: one set, reused; the runtime's gradient is "
       "usually larger than the caches: e.g. 134217728)")
      ("timeout", po::value<double>()->default_value(120.0),
       "seconds one collective at one size (all its repetitions) may take before the run fails");
  po::positional_options_description none;
  po::variables_map vm;
  if (!parse_command_line(args,
                          "usage: mpirun -np P sparsefuse profile-collectives [--out FILE] [--min-bytes B] "
                          "[--max-bytes B] [--iterations N] [--warmup N] [--working-set B] [--timeout S]\n\n"
                          "Times allreduce, allgather and reduce-scatter over the P ranks through the runtime's MPI\n"
                          "communicator, at sizes doubling from --min-bytes to --max-bytes; prints an nccl-tests-like\n"
                          "table (rank 0) and, with --out, writes a calibrated collective table the simulator reads\n"
                          "(network.model=calibrated, network.profile=FILE). Time per size: the median over the\n"
                          "repetitions of the slowest rank's time.",
                          options, none, vm)) {
    return 0;
  }
  runtime::CollectiveProfileOptions o;
  o.min_bytes = vm["min-bytes"].as<int64_t>();
  o.max_bytes = vm["max-bytes"].as<int64_t>();
  o.warmup = vm["warmup"].as<int>();
  o.iterations = vm["iterations"].as<int>();
  o.working_set = vm["working-set"].as<int64_t>();
  const double timeout_s = vm["timeout"].as<double>();
  const std::string out = vm.count("out") ? vm["out"].as<std::string>() : "";

  std::unique_ptr<runtime::CommThread> comm;
  try {
    comm = std::make_unique<runtime::CommThread>([] { return std::make_unique<runtime::MpiCommunicator>(); });
  } catch (const std::exception& e) {
    die(e.what());
  }
  const int rank = comm->rank();
  // Until --timeout is known to be valid, the bad-input barrier waits this long.
  constexpr std::chrono::milliseconds kInputTimeout{60'000};
  try {
    runtime::validate(o);
    if (!(timeout_s > 0 && timeout_s <= 86400)) {
      throw InputError("--timeout", "", fmt::format("expected seconds in (0, 86400], got {}", timeout_s));
    }
  } catch (const InputError& e) {
    return refuse_on_every_rank(*comm, e, kInputTimeout);
  }
  const auto timeout = std::chrono::milliseconds(std::llround(timeout_s * 1000));
  if (const std::string problem = out_problem_on_rank0(*comm, out, timeout); !problem.empty()) {
    return refuse_on_every_rank(*comm, InputError("--out", "", fmt::format("cannot write {}: {}", out, problem)),
                                timeout);
  }

  const runtime::CollectiveProfile profile = measure(*comm, o, timeout);
  if (rank == 0 && !out.empty()) {
    write_file_atomically(out, profile.to_json().dump(2) + "\n");
    std::cout << "wrote " << out << "\n";
  }
  return 0;
}

}  // namespace sparsefuse::cli
