#include "common/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace sparsefuse {

void write_file_atomically(const std::string& path, const std::string& content) {
  namespace fs = std::filesystem;
  fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  if (ec) throw std::runtime_error("cannot create the directory " + target.parent_path().string() + ": " + ec.message());
  fs::path temp = target;
  temp += ".tmp." + std::to_string(::getpid());
  {
    // The reason (a full disk, a read-only or vanished directory) is in errno
    // right after the failing open or write; the message carries it.
    errno = 0;
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (out) out << content;
    if (out) out.flush();
    if (out) out.close();
    if (!out) {
      const std::string reason = errno ? std::strerror(errno) : "an I/O error";
      fs::remove(temp, ec);
      throw std::runtime_error("cannot write " + path + " (via " + temp.filename().string() + "): " + reason +
                               "; nothing was written there");
    }
  }
  fs::rename(temp, target, ec);
  if (ec) {
    const std::string reason = ec.message();
    fs::remove(temp, ec);
    throw std::runtime_error("cannot rename " + temp.string() + " to " + path + ": " + reason);
  }
}

}  // namespace sparsefuse
