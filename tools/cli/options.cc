#include "tools/cli/options.h"

#include <iostream>

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

void print_notes(const model::Scenario& scenario) {
  for (const auto& note : scenario.notes) std::cerr << "note: " << note << "\n";
}

}  // namespace sparsefuse::cli
