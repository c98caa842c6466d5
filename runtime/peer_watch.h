// Where every rank is, visible to the other ranks on its node, so a rank that
// gives up waiting for a collective can say which peer held it up and how:
// exited, not running (stopped, or a machine that froze), or alive but at
// another job (slow, or flushing a different bucket sequence).
//
// Rank 0 makes a fresh directory under /dev/shm (or /tmp) and tells the
// others its name at start-up; each rank maps a small file in it. A heartbeat
// thread stamps it every 100 ms; the communication thread records each job it
// starts. A rank on another node has no file here, and the description says
// so. (Nothing derived from the job id or the launcher's pid will do: in
// sandboxes with their own pid namespaces, two jobs can share both.)
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

namespace sparsefuse::runtime {

class CommThread;

class PeerWatch {
 public:
  // Rank 0 makes the job's directory and every rank learns it (one collective
  // on COMM), and COMM records its jobs in the watch and names the peers in
  // its timeout messages (the caller keeps the watch until COMM's jobs are
  // done). nullptr with one rank (no peers, no collective), or where the
  // directory or this rank's file fails (the run goes on without a watch).
  static std::unique_ptr<PeerWatch> start(CommThread& comm, std::chrono::milliseconds timeout);
  // Rank 0's part: a fresh directory; returns its name's unique suffix packed
  // into an integer (0: none could be made). Also removes the directories of
  // jobs that ended without cleaning up (no heartbeat for 10 minutes).
  static int64_t make_job_directory();
  // RANK's watch in the directory SUFFIX names; nullptr if SUFFIX is 0 or the
  // file cannot be made.
  static std::unique_ptr<PeerWatch> join(int64_t suffix, int rank, int size);
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
