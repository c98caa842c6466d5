#!/bin/sh
# Regenerates calibrations/ from the microbenchmark tables in data/ (run from
# the repository root after `bazel build //tools/cli:sparsefuse`). Only
# microbenchmarks are fitted here; end-to-end cases never are.
#   10gbe-mpi-holdout8.json  OSU allreduce on B-Caffe's 10GbE cluster, fitted on 2 and 4 nodes,
#                            8 nodes held out (the case osu_10gbe_8node_heldout reports that error)
#   10gbe-mpi.json           the same tables, all node counts fitted: the network of the
#                            MG-WFBP end-to-end cases and of the per-layer allreduce cross-check
set -eu
S=${SPARSEFUSE:-bazel-bin/tools/cli/sparsefuse}
D=tests/fidelity/data
C=tests/fidelity/calibrations
$S calibrate $D/osu_allreduce_10gbe_2nodes.txt@2 $D/osu_allreduce_10gbe_4nodes.txt@4 \
  $D/osu_allreduce_10gbe_8nodes.txt@8 --holdout-ranks 8 --link-class 10gbe --transport mpi-tcp-host-buffers \
  --out $C/10gbe-mpi-holdout8.json
$S calibrate $D/osu_allreduce_10gbe_2nodes.txt@2 $D/osu_allreduce_10gbe_4nodes.txt@4 \
  $D/osu_allreduce_10gbe_8nodes.txt@8 --no-holdout --link-class 10gbe --transport mpi-tcp-host-buffers \
  --out $C/10gbe-mpi.json
