/* The runtime's C API: a real training loop (PyTorch through ctypes, see
 * tools/train/) drives one rank of the runtime engine (runtime/training.h).
 *
 * Every call returns a status: SF_OK, SF_BAD_INPUT (the caller's mistake: a
 * bad scenario, an unsupported scheme, a wrong tensor or call order; the
 * message names it), SF_INTERNAL (a failure inside the runtime), or
 * SF_COMM_FAILED (a collective failed or did not finish within the timeout:
 * a peer died, hangs or flushed a different bucket sequence; the
 * communication thread may still be blocked inside MPI, so the process must
 * exit — sf_session_destroy then leaves the thread behind instead of
 * joining it). sf_last_error() is the message of this thread's last failed
 * call. Nothing here aborts the process or throws across the API.
 *
 * Under mpirun (OMPI_COMM_WORLD_SIZE set) the session's communication
 * thread initialises MPI and is the only thread that calls it; otherwise a
 * single-rank loopback is used. One communicator per process. */
#ifndef SPARSEFUSE_RUNTIME_CAPI_SPARSEFUSE_C_H_
#define SPARSEFUSE_RUNTIME_CAPI_SPARSEFUSE_C_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { SF_OK = 0, SF_INTERNAL = 1, SF_BAD_INPUT = 2, SF_COMM_FAILED = 3 };

typedef struct sf_comm sf_comm;
typedef struct sf_session sf_session;

const char* sf_last_error(void);

/* The process's communicator (MPI under mpirun). TIMEOUT_S bounds every
 * collective. */
int sf_comm_create(double timeout_s, sf_comm** out);
int sf_comm_rank(const sf_comm* comm);
int sf_comm_size(const sf_comm* comm);
/* ROOT's TEXT (NUL-terminated) to every rank; *OUT is freed with sf_free. */
int sf_comm_broadcast_text(sf_comm* comm, int root, const char* text, char** out);
/* Sums N doubles over ranks in place (e.g. every rank's losses, each in
 * its own slots). No session may be between sf_session_begin_iteration
 * and sf_session_end_iteration. */
int sf_comm_allreduce_sum(sf_comm* comm, double* data, int64_t n);
/* Destroys the communicator (MPI_Finalize); every session must be gone. */
int sf_comm_destroy(sf_comm* comm);

/* One "KEY=VALUE" override of a scenario, as `sparsefuse simulate --set`
 * applies it, to the JSON text DOCUMENT; *OUT is the new document (freed
 * with sf_free). A malformed assignment is SF_BAD_INPUT naming it. */
int sf_scenario_set(const char* document, const char* assignment, char** out);

/* A session for the scenario file SCENARIO_PATH (relative paths in it
 * resolve from its directory, as for `sparsefuse run`). */
int sf_session_create(sf_comm* comm, const char* scenario_path, sf_session** out);
int sf_session_tensors(const sf_session* s);
/* Tensor T in backward order: its name (valid while the session lives) and size. */
const char* sf_session_tensor_name(const sf_session* s, int t);
int64_t sf_session_tensor_elements(const sf_session* s, int t);

int sf_session_begin_iteration(sf_session* s);
int sf_session_backward_started(sf_session* s);
/* Tensor T's gradient (ELEMENTS floats at DATA, copied before returning) is
 * ready; the policy sees tensors in backward order (an early one waits for
 * its predecessors). */
int sf_session_tensor_ready(sf_session* s, int t, const float* data, int64_t elements);
/* After backward: waits for every bucket and writes tensor t's averaged
 * gradient to OUTPUTS[t] (COUNT = sf_session_tensors; 0 for a scheme with
 * forward stages, below). */
int sf_session_wait(sf_session* s, float* const* outputs, int count);
int sf_session_end_iteration(sf_session* s);

/* A scheme that updates inside the next forward (DeAR, ByteScheduler) has
 * sf_session_stages > 0 forward stages, stage G covering tensors
 * [*FIRST, *END) of the backward order. In every forward, before backward,
 * each stage in order: sf_session_open_stage waits until the stage may run
 * and writes the previous iteration's averages of its tensors to OUTPUTS
 * (COUNT = *END - *FIRST pointers; *UPDATED = 1, or 0 in the first iteration
 * with nothing written); the caller updates those parameters, then calls
 * sf_session_stage_updated (the update is timed as optimizer). Such a
 * scheme's sf_session_wait takes no outputs (COUNT 0). After the last
 * iteration, sf_session_complete (collective) writes every tensor's last
 * average to OUTPUTS (sf_session_tensors pointers, or COUNT 0 to discard). */
int sf_session_stages(const sf_session* s);
int sf_session_stage_tensors(const sf_session* s, int g, int* first, int* end);
int sf_session_open_stage(sf_session* s, int g, float* const* outputs, int count, int* updated);
int sf_session_stage_updated(sf_session* s);
int sf_session_complete(sf_session* s, float* const* outputs, int count);

/* The last iteration's buckets in flush order. TIMES_S[5]: posted, collective
 * start, collective end, decompressed (seconds since the iteration start),
 * and compression (seconds). INFO[4]: first tensor, end tensor, collective
 * (0 allreduce, 1 allgather, 2 reduce-scatter), elements sent by this rank. */
int sf_session_buckets(const sf_session* s);
int sf_session_bucket(const sf_session* s, int k, double times_s[5], int64_t info[4]);

/* Collective: every rank calls it once after its last iteration. *OUT is
 * result.json (the simulator's schema plus "executor"), freed with sf_free. */
int sf_session_finish(sf_session* s, char** out);
int sf_session_destroy(sf_session* s);

/* The engine's flush of a bucket sent dense as pairs, measured in the
 * caller's cache state (runtime/flush_probe.h): a profiled training loop
 * calls sf_flush_probe_hook at each gradient-ready hook (at most HOOKS per
 * iteration) with the gradient made ready (copied in, as
 * sf_session_tensor_ready copies it), between sf_flush_probe_begin_iteration
 * and sf_flush_probe_end_iteration. Iteration 0 learns the hooks, which
 * every later iteration repeats; then iterations alternate between the
 * engine's flush and the pack kernel alone, the first of each a warm-up.
 * Hook k is probed at min(its elements, MAX_ELEMENTS).
 * sf_flush_probe_end_iteration given the COUNT gradients the hooks were given
 * (in hook order; or COUNT 0) writes each one's average back into it, as
 * sf_session_wait writes the averages, and times that (iteration 0 writes
 * nothing; one rank's average is the gradient, so the values are unchanged).
 * sf_flush_probe_summary writes *HOOKS_OUT (the hooks, at most CAPACITY) and,
 * per hook k in order, ELEMENTS[k] (its probe tensor's), FLUSH_US[k] and
 * KERNEL_US[k] (medians, microseconds); *BOOKKEEPING_US (the median over the
 * hooks of flush - kernel, each floored at 0), *WRITE_BACK_US (the median
 * write-back, 0 if none was timed) and SAMPLES[3] (flush, kernel and
 * write-back samples in all). Wrong call order, more hooks than HOOKS, an
 * iteration unlike the first, a gradient count other than 0 or the hooks', a
 * capacity under the hooks, or a summary before a measured iteration of each
 * kind, is SF_BAD_INPUT.
 * sf_flush_probe_bookkeeping writes *BOOKKEEPING_US for per-hook medians
 * combined elsewhere (e.g. averaged over ranks): the median over the N hooks
 * of FLUSH_US[k] - KERNEL_US[k], each floored at 0, as the summary's. */
typedef struct sf_flush_probe sf_flush_probe;
int sf_flush_probe_create(int hooks, int64_t max_elements, sf_flush_probe** out);
int sf_flush_probe_begin_iteration(sf_flush_probe* p);
int sf_flush_probe_hook(sf_flush_probe* p, const float* gradient, int64_t elements);
int sf_flush_probe_end_iteration(sf_flush_probe* p, float* const* gradients, int count);
int sf_flush_probe_summary(const sf_flush_probe* p, int capacity, int* hooks_out, int64_t* elements,
                           double* flush_us, double* kernel_us, double* bookkeeping_us, double* write_back_us,
                           int64_t samples[3]);
int sf_flush_probe_bookkeeping(int n, const double* flush_us, const double* kernel_us, double* bookkeeping_us);
int sf_flush_probe_destroy(sf_flush_probe* p);

void sf_free(char* text);

#ifdef __cplusplus
}
#endif

#endif
