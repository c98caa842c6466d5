#include "tests/fuzz/fuzz_input.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace sparsefuse::fuzz {

namespace fs = std::filesystem;

std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    lines.emplace_back(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
  }
  return lines;
}

std::pair<std::string_view, std::vector<std::string>> split_file_and_arguments(std::string_view text) {
  const size_t nul = text.find('\0');
  if (nul == std::string_view::npos) return {text, {}};
  return {text.substr(0, nul), split_lines(text.substr(nul + 1))};
}

// The fixtures seeds refer to by relative paths ("../traces/x.json" from a
// scenario under tests/fidelity/scenarios/): linked beside the scratch folder.
static void link_fixtures(const fs::path& root) {
  const std::pair<const char*, const char*> links[] = {
      {"traces", "tests/fidelity/traces"}, {"calibrations", "tests/fidelity/calibrations"}, {"data", "tests/data"}};
  for (const auto& [name, target] : links) {
    std::error_code ec;
    if (fs::is_directory(target, ec)) fs::create_directory_symlink(fs::absolute(target), root / name, ec);
  }
}

static const fs::path& scratch_dir() {
  static const fs::path dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/sparsefuse-fuzz.XXXXXX";
    if (!mkdtemp(pattern.data())) throw std::runtime_error("fuzz: cannot create a scratch directory");
    const fs::path root(pattern);
    link_fixtures(root);
    fs::create_directory(root / "in");
    return root / "in";
  }();
  return dir;
}

std::string scratch_file(std::string_view text, const std::string& name) {
  const std::string path = (scratch_dir() / name).string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), std::streamsize(text.size()));
  out.close();
  if (!out) throw std::runtime_error("fuzz: cannot write " + path);
  return path;
}

}  // namespace sparsefuse::fuzz
