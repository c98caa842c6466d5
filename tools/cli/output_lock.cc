#include "tools/cli/output_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

#include "common/input_error.h"
#include "tools/cli/options.h"

namespace sparsefuse::cli {

namespace {

std::string read_holder(int fd) {
  char text[512] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  std::string holder(text, n > 0 ? size_t(n) : 0);
  while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0')) holder.pop_back();
  return holder.empty() ? "a process that has not yet written its name" : holder;
}

std::string describe_self(const std::string& command) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  char since[32] = {};
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  std::strftime(since, sizeof since, "%Y-%m-%dT%H:%M:%SZ", ::gmtime_r(&now, &utc));
  return fmt::format("{} (pid {} on {}, since {})\n", command, ::getpid(), host, since);
}

}  // namespace

OutputLock::OutputLock(const std::string& option, const std::string& dir, const std::string& command) {
  prepare_output_directory(option, dir);
  const std::string path = dir + "/.lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw InputError(option + " " + dir, "",
                     fmt::format("cannot create {}: {}; expected a writable directory", path, std::strerror(errno)));
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    const std::string holder = error == EWOULDBLOCK ? read_holder(fd_) : "";
    ::close(fd_);
    fd_ = -1;
    if (error != EWOULDBLOCK) {
      throw InputError(option + " " + dir, "", fmt::format("cannot lock {}: {}", path, std::strerror(error)));
    }
    throw InputError(option + " " + dir, "",
                     fmt::format("another run is writing this directory: {} holds {}; wait for it to end or "
                                 "choose another directory",
                                 holder, path));
  }
  const std::string self = describe_self(command);
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, self.data(), self.size(), 0) != ssize_t(self.size())) {
    const int error = errno;
    ::close(fd_);
    fd_ = -1;
    throw InputError(option + " " + dir, "",
                     fmt::format("cannot write {}: {}; expected a writable directory", path, std::strerror(error)));
  }
}

OutputLock::~OutputLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace sparsefuse::cli
