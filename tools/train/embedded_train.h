// The Python package sparsefuse_torch (`sparsefuse train` and the
// DistributedOptimizer), embedded at build time (common/embed_files.py) and
// run by tools/plot/python_runner together with sparsefuse_profile.
#pragma once

#include <vector>

#include "tools/plot/python_runner.h"

namespace sparsefuse::train {

// sparsefuse_torch's files only.
const std::vector<plot::EmbeddedFile>& embedded_torch_files();

// What `sparsefuse train` writes out: sparsefuse_torch and sparsefuse_profile.
const std::vector<plot::EmbeddedFile>& embedded_train_files();

}  // namespace sparsefuse::train
