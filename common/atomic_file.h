// Output files are written to a temporary name in the same directory and then
// renamed, so a reader (or a resumed sweep) never sees a half-written file.
#pragma once

#include <string>

namespace sparsefuse {

// Writes CONTENT to PATH atomically, creating parent directories. Throws
// std::runtime_error on I/O failure (an internal error, exit status 1).
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace sparsefuse
