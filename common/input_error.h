// Errors in user-supplied input (scenario, trace, profile files, CLI values).
// The CLI maps InputError to exit status 2; every message names the file, the
// JSON pointer of the offending value and the form that was expected.
#pragma once

#include <stdexcept>
#include <string>

namespace sparsefuse {

class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string pointer, std::string problem)
      : std::runtime_error(compose(file, pointer, problem)),
        file_(std::move(file)), pointer_(std::move(pointer)), problem_(std::move(problem)) {}

  const std::string& file() const { return file_; }
  const std::string& pointer() const { return pointer_; }
  const std::string& problem() const { return problem_; }  // without file and pointer

 private:
  static std::string compose(const std::string& file, const std::string& pointer,
                             const std::string& problem) {
    std::string where = file.empty() ? "<input>" : file;
    if (!pointer.empty()) where += ": at " + pointer;
    return where + ": " + problem;
  }
  std::string file_;
  std::string pointer_;
  std::string problem_;
};

}  // namespace sparsefuse
