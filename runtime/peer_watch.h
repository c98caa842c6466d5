// Where every rank is, visible to the other ranks on its node, so a rank that
// gives up waiting for a collective can say which peer held it up and how:
// exited, not running (stopped, or a machine that froze), or alive but at
// another job (slow, or flushing a different bucket sequence).
//
// Each rank maps a small file under /dev/shm (or /tmp) named after the MPI
// job. A heartbeat thread stamps it every 100 ms; the communication thread
// records each job it starts. A rank on another node has no file here, and
// the description says so.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

namespace sparsefuse::runtime {

class PeerWatch {
 public:
  // The watch of RANK among SIZE for the job JOB_ID (PMIX_NAMESPACE or
  // OMPI_MCA_ess_base_jobid under mpirun); nullptr when JOB_ID is empty or
  // the file cannot be made (the run goes on without it).
  static std::unique_ptr<PeerWatch> start(const std::string& job_id, int rank, int size);
  // The job id mpirun gave this process, or "".
  static std::string job_id_from_environment();
  ~PeerWatch();  // stops the heartbeat, removes this rank's file
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;

  // Called by the communication thread as it starts job number JOB.
  void job_started(uint64_t job, const std::string& what);
  // One sentence per other rank: where it is and what that suggests.
  std::string describe_peers() const;
  // The job is ending in failure: removes every rank's record here, so the
  // files of ranks that will be killed do not outlive it.
  void remove_all_records() const;

  struct Slot;  // the mapped layout (peer_watch.cc)

 private:
  PeerWatch(std::string dir, int rank, int size, Slot* slot);
  std::string path_of(int rank) const;

  std::string dir_;
  int rank_, size_;
  Slot* slot_;
  std::atomic<bool> stop_{false};
  std::thread heartbeat_;
};

}  // namespace sparsefuse::runtime
