#include "runtime/peer_watch.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include <fmt/format.h>

#include "runtime/comm_thread.h"

namespace sparsefuse::runtime {

// One rank's record. `what` is guarded by a sequence counter (odd while it is
// being written), the rest are single aligned words.
struct PeerWatch::Slot {
  std::atomic<uint64_t> sequence;
  std::atomic<int64_t> heartbeat_ns;    // CLOCK_MONOTONIC, shared by the processes of a node
  std::atomic<int64_t> job_started_ns;
  std::atomic<uint64_t> job;            // jobs started so far
  std::atomic<int32_t> pid;
  char what[200];
};

namespace {

constexpr auto kBeat = std::chrono::milliseconds(100);

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

PeerWatch::Slot* map_slot(const std::string& path, bool create) {
  const int fd = ::open(path.c_str(), create ? O_RDWR | O_CREAT | O_TRUNC : O_RDONLY, 0600);
  if (fd < 0) return nullptr;
  if (create && ::ftruncate(fd, sizeof(PeerWatch::Slot)) != 0) {
    ::close(fd);
    return nullptr;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size < off_t(sizeof(PeerWatch::Slot))) {
    ::close(fd);
    return nullptr;
  }
  void* p = ::mmap(nullptr, sizeof(PeerWatch::Slot), create ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  return p == MAP_FAILED ? nullptr : static_cast<PeerWatch::Slot*>(p);
}

const char* base_directory() { return ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"; }
constexpr char kPrefix[] = "sparsefuse-peers-";
constexpr int kSuffixLength = 6;  // mkdtemp's XXXXXX

// Records outlive a job whose ranks mpirun killed (no destructor runs). A
// directory untouched for 10 minutes whose every record has no heartbeat for
// as long belongs to no running job: removed. (Process ids cannot tell: a
// sandboxed job's processes are invisible from another pid namespace.)
void remove_stale_jobs(const std::string& base) {
  constexpr int64_t kStaleNs = 600'000'000'000;
  DIR* d = ::opendir(base.c_str());
  if (!d) return;
  while (const dirent* e = ::readdir(d)) {
    if (std::strncmp(e->d_name, kPrefix, sizeof kPrefix - 1) != 0) continue;
    const std::string dir = base + "/" + e->d_name;
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0 || ::time(nullptr) - st.st_mtime < kStaleNs / 1'000'000'000) continue;
    DIR* job = ::opendir(dir.c_str());
    if (!job) continue;
    std::vector<std::string> files;
    bool live = false;
    while (const dirent* f = ::readdir(job)) {
      if (std::strncmp(f->d_name, "rank-", 5) != 0) continue;
      files.push_back(dir + "/" + f->d_name);
      if (PeerWatch::Slot* slot = map_slot(files.back(), false)) {
        live = live || now_ns() - slot->heartbeat_ns.load() < kStaleNs;
        ::munmap(slot, sizeof(PeerWatch::Slot));
      }
    }
    ::closedir(job);
    if (live) continue;
    for (const auto& f : files) ::unlink(f.c_str());
    ::rmdir(dir.c_str());
  }
  ::closedir(d);
}

std::string seconds_ago(int64_t then, int64_t now) { return fmt::format("{:.1f} s ago", double(now - then) / 1e9); }

}  // namespace

int64_t PeerWatch::make_job_directory() {
  const std::string base = base_directory();
  remove_stale_jobs(base);
  std::string dir = base + "/" + kPrefix + std::string(kSuffixLength, 'X');
  if (!::mkdtemp(dir.data())) return 0;
  int64_t packed = 0;  // the suffix's bytes, first in the lowest
  for (int i = 0; i < kSuffixLength; ++i) packed |= int64_t(uint8_t(dir[dir.size() - kSuffixLength + i])) << (8 * i);
  return packed;
}

std::unique_ptr<PeerWatch> PeerWatch::join(int64_t suffix, int rank, int size) {
  if (suffix == 0) return nullptr;
  std::string name;
  for (int i = 0; i < kSuffixLength; ++i) {
    const char c = char((uint64_t(suffix) >> (8 * i)) & 0xFF);
    if (!std::isalnum(static_cast<unsigned char>(c))) return nullptr;
    name += c;
  }
  std::string dir = std::string(base_directory()) + "/" + kPrefix + name;
  Slot* slot = map_slot(fmt::format("{}/rank-{}", dir, rank), true);
  if (!slot) return nullptr;
  return std::unique_ptr<PeerWatch>(new PeerWatch(std::move(dir), rank, size, slot));
}

std::unique_ptr<PeerWatch> PeerWatch::start(CommThread& comm, std::chrono::milliseconds timeout) {
  if (comm.size() == 1) return nullptr;
  const int64_t mine = comm.rank() == 0 ? make_job_directory() : 0;
  const std::vector<int64_t> all = comm.allgather(mine, "the start-up exchange of the peer-watch directory", timeout);
  std::unique_ptr<PeerWatch> watch = join(all.at(0), comm.rank(), comm.size());
  if (watch) comm.set_peer_watch(watch.get());
  return watch;
}

PeerWatch::PeerWatch(std::string dir, int rank, int size, Slot* slot)
    : dir_(std::move(dir)), rank_(rank), size_(size), slot_(slot) {
  slot_->pid = int32_t(::getpid());
  slot_->heartbeat_ns = now_ns();
  heartbeat_ = std::thread([this] {
    while (!stop_.load()) {
      slot_->heartbeat_ns = now_ns();
      std::this_thread::sleep_for(kBeat);
    }
  });
}

PeerWatch::~PeerWatch() {
  stop_ = true;
  heartbeat_.join();
  ::munmap(slot_, sizeof(Slot));
  ::unlink(path_of(rank_).c_str());
  ::rmdir(dir_.c_str());  // the last rank out removes the directory
}

void PeerWatch::remove_all_records() const {
  for (int r = 0; r < size_; ++r) ::unlink(path_of(r).c_str());
}

std::string PeerWatch::path_of(int rank) const { return fmt::format("{}/rank-{}", dir_, rank); }

void PeerWatch::job_started(uint64_t job, const std::string& what) {
  slot_->sequence.fetch_add(1);  // odd: `what` is being written
  std::snprintf(slot_->what, sizeof slot_->what, "%s", what.c_str());
  slot_->job = job;
  slot_->job_started_ns = now_ns();
  slot_->sequence.fetch_add(1);
}

std::string PeerWatch::describe_peers() const {
  const int64_t now = now_ns();
  const uint64_t my_job = slot_->job.load();
  std::string out;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    Slot* peer = map_slot(path_of(r), false);
    std::string line;
    if (!peer) {
      line = fmt::format(
          "rank {}: no record on this node (on another node, never started, or already failed: a failing rank "
          "removes every record)",
          r);
    } else {
      char what[sizeof peer->what];
      uint64_t job, before, after;
      int64_t started;
      // A consistent copy: the sequence even and unchanged around it. A
      // writer stopped mid-record leaves it odd: then take what is there.
      for (int attempt = 0;; ++attempt) {
        before = peer->sequence.load();
        std::memcpy(what, peer->what, sizeof what);
        job = peer->job.load();
        started = peer->job_started_ns.load();
        after = peer->sequence.load();
        if ((before == after && !(before & 1)) || attempt == 1000) break;
      }
      what[sizeof what - 1] = '\0';
      const pid_t pid = peer->pid.load();
      const int64_t beat = peer->heartbeat_ns.load();
      const std::string where =
          job ? fmt::format("its last job (#{}, {}) started {}", job, what, seconds_ago(started, now)) : "no job started";
      if (::kill(pid, 0) != 0 && errno == ESRCH) {
        line = fmt::format("rank {} (pid {}) has exited; {}", r, pid, where);
      } else if (now - beat > 10 * std::chrono::nanoseconds(kBeat).count()) {
        line = fmt::format("rank {} (pid {}) is not running: no heartbeat for {:.1f} s (stopped, or its machine "
                           "froze); {}", r, pid, double(now - beat) / 1e9, where);
      } else if (job != my_job) {
        line = fmt::format("rank {} (pid {}) is alive at job #{} while this rank waits at job #{}: {}", r, pid, job,
                           my_job, where);
      } else {
        line = fmt::format("rank {} (pid {}) is alive in the same job #{}: {}", r, pid, job, where);
      }
      ::munmap(peer, sizeof(Slot));
    }
    out += (out.empty() ? "" : "; ") + line;
  }
  return out;
}

}  // namespace sparsefuse::runtime
