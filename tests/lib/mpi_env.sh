# Sourced by every test that runs mpirun. Bazel runs tests in parallel, each
# in its own PID namespace, so two jobs' launchers and ranks get the same PIDs,
# and Open MPI derives the names of its shared-memory files from them:
# concurrent jobs mapped each other's segments and crashed (a segfault in
# mca_btl_vader_poll_handle_frag; PMIx "ERROR in gds_ds12_lock_pthread.c").
# mpirun itself also crashed now and then while sharing its hwloc topology in
# shared memory (hwloc_shmem_topology_write). Each test keeps its vader
# segments in its own temporary directory, PMIx keeps job data in process
# memory (the "hash" store), and mpirun does not share its topology.
export OMPI_MCA_btl_vader_backing_directory="${TEST_TMPDIR:?run under bazel test}"
export PMIX_MCA_gds=hash
export OMPI_MCA_rtc_hwloc_vmhole=none
