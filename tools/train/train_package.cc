#include "tools/profile_model/embedded_profile.h"
#include "tools/train/embedded_train.h"

namespace sparsefuse::train {

const std::vector<plot::EmbeddedFile>& embedded_train_files() {
  static const std::vector<plot::EmbeddedFile> files = [] {
    std::vector<plot::EmbeddedFile> all = embedded_torch_files();
    const auto& profile = profile_model::embedded_profile_files();
    all.insert(all.end(), profile.begin(), profile.end());
    return all;
  }();
  return files;
}

}  // namespace sparsefuse::train
