"""sparsefuse_profile: measures per-tensor backward timing of PyTorch models
and writes sparsefuse-trace/1 files (`sparsefuse profile-model`)."""
