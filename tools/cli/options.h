// Shared command-line plumbing on Boost.Program_options.
#pragma once

#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "model/scenario.h"

namespace sparsefuse::cli {

namespace po = boost::program_options;

// Parses ARGS against OPTIONS (with optional positional names). Returns false
// when --help was given (usage already printed to stdout).
bool parse_command_line(const std::vector<std::string>& args, const std::string& usage,
                        po::options_description& options, const po::positional_options_description& positional,
                        po::variables_map& vm);

// Checks, before any work, that DIR can hold a command's output: creates it
// if missing; an existing non-directory or an uncreatable path is bad input
// named by OPTION.
void prepare_output_directory(const std::string& option, const std::string& dir);

// Why write_file_atomically could not create PATH ("" when it could): PATH
// must not be a directory, and its nearest existing ancestor must be a
// writable directory (write_file_atomically creates the missing ones). For
// checking an output file up front, so that a long measurement is not lost
// at the end.
std::string unwritable(const std::string& path);

// Prints the scenario's notes (inert settings, scheme knobs carried over or
// dropped) to stderr, one "note:" line each.
void print_notes(const model::Scenario& scenario);

}  // namespace sparsefuse::cli
