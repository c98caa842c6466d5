// Splitting the text tables the calibrator reads (nccl-tests, OSU, the
// `FILE@RANKS` arguments) into words and numbers.
#pragma once

#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace sparsefuse::calibrate {

inline std::vector<std::string> split_words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// A number that fills the whole word, else nothing.
inline std::optional<double> whole_number(const std::string& word) {
  try {
    size_t used = 0;
    double v = std::stod(word, &used);
    if (used == word.size()) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

}  // namespace sparsefuse::calibrate
