#include "tools/cli/options.h"

#include <unistd.h>

#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "common/input_error.h"

namespace sparsefuse::cli {

bool parse_command_line(const std::vector<std::string>& args, const std::string& usage,
                        po::options_description& options, const po::positional_options_description& positional,
                        po::variables_map& vm) {
  options.add_options()("help,h", "show this help");
  po::store(po::command_line_parser(args).options(options).positional(positional).run(), vm);
  if (vm.count("help")) {
    std::cout << usage << "\n\n" << options << "\n";
    return false;
  }
  po::notify(vm);
  return true;
}

void prepare_output_directory(const std::string& option, const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec)) {
    throw InputError(option + " " + dir, "", "exists and is not a directory; expected a directory for the output");
  }
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError(option + " " + dir, "", "cannot create the output directory: " + ec.message());
}

void print_notes(const model::Scenario& scenario) {
  for (const auto& note : scenario.notes) std::cerr << "note: " << note << "\n";
}

std::string unwritable(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return "it is a directory";
  fs::path dir = fs::path(path).parent_path();
  while (!dir.empty() && !fs::exists(dir, ec) && dir != dir.parent_path()) dir = dir.parent_path();
  if (dir.empty()) dir = ".";
  if (!fs::is_directory(dir, ec)) return fmt::format("{} is not a directory", dir.string());
  if (::access(dir.c_str(), W_OK) != 0) return fmt::format("{} is not writable", dir.string());
  return "";
}

}  // namespace sparsefuse::cli
