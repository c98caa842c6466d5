// The sparsefuse_profile Python package (sparsefuse profile-model), embedded
// into the binary at build time (common/embed_files.py) and run by
// tools/plot/python_runner.
#pragma once

#include <vector>

#include "tools/plot/python_runner.h"

namespace sparsefuse::profile_model {

const std::vector<plot::EmbeddedFile>& embedded_profile_files();

}  // namespace sparsefuse::profile_model
