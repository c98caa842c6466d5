// Shared plumbing of the fuzz targets (one *_fuzz.cc per file kind the tools
// read). Each target hands the fuzzer's bytes to the very reader the CLI uses;
// InputError (the CLI's exit status 2) is the expected answer to bad bytes,
// so only InputError is caught: any other exception escapes, and libFuzzer
// (or the corpus replay test) reports it as a finding, like a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/input_error.h"

namespace sparsefuse::fuzz {

std::string_view as_text(const uint8_t* data, size_t size);

// TEXT's lines, without their '\n'; a final newline starts no empty line.
std::vector<std::string> split_lines(std::string_view text);

// Splits TEXT at its first NUL byte: the file's content, then extra
// arguments (e.g. --set overrides), one per line. No NUL: no arguments.
std::pair<std::string_view, std::vector<std::string>> split_file_and_arguments(std::string_view text);

// Writes TEXT to this process's scratch file NAME and returns its path. The
// readers take paths, as the CLI gives them; the scratch directory is made
// once per process under $TMPDIR and holds links "traces", "calibrations"
// and "data" to the repository's fixtures (when run from the repository
// root or a test's runfiles), so relative paths in seeds resolve.
std::string scratch_file(std::string_view text, const std::string& name);

// Runs READ; an InputError is the reader rejecting bad input, which is fine.
template <typename Read>
void expect_only_input_errors(Read&& read) {
  try {
    read();
  } catch (const InputError&) {
  }
}

}  // namespace sparsefuse::fuzz
