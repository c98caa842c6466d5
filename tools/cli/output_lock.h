// An exclusive lock on an output directory (DIR/.lock, flock): two sweeps
// writing one directory at once would race on results.csv and sweep.json and
// simulate the same points twice. The holder writes who it is into the lock
// file, so the refused command can name it. The kernel drops the lock when
// the holder exits, killed or not: a stale .lock file never blocks a rerun.
#pragma once

#include <string>

namespace sparsefuse::cli {

class OutputLock {
 public:
  // Creates DIR if needed and locks DIR/.lock for COMMAND. InputError naming
  // OPTION and DIR when DIR cannot be created or written (exit 2), or when
  // another process holds the lock (naming that process).
  OutputLock(const std::string& option, const std::string& dir, const std::string& command);
  ~OutputLock();
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace sparsefuse::cli
