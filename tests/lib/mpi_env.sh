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

# rank_pid PATTERN RANK [LAUNCHER]: the PID of the process matching PATTERN
# (pgrep -f) that mpirun started as rank RANK (OMPI_COMM_WORLD_RANK in its
# environment). Waits up to 60 s, or until LAUNCHER (a PID) has exited;
# prints nothing if no such process appeared.
rank_pid() {
  local pattern=$1 rank=$2 launcher=${3:-} pid
  for _ in $(seq 1 120); do
    for pid in $(pgrep -f "$pattern"); do
      if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$rank"; then
        echo "$pid"
        return
      fi
    done
    [[ -z $launcher ]] || kill -0 "$launcher" 2>/dev/null || return
    sleep 0.5
  done
}
