// The C API (sparsefuse_c.h) over runtime::TrainingSession: exceptions become
// status codes and a per-thread message.
#include "runtime/capi/sparsefuse_c.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>

#include <fmt/format.h>

#include "common/input_error.h"
#include "model/scenario.h"
#include "runtime/comm_thread.h"
#include "runtime/flush_probe.h"
#include "runtime/mpi_communicator.h"
#include "runtime/training.h"

using sparsefuse::InputError;
namespace rt = sparsefuse::runtime;

struct sf_comm {
  // Declared before the thread, so destroyed after it: its jobs record themselves here.
  std::unique_ptr<rt::PeerWatch> watch;  // null with one rank, or where /dev/shm and /tmp refuse it
  std::unique_ptr<rt::CommThread> thread;
  std::chrono::milliseconds timeout{60'000};
  bool under_mpirun = false;
  bool failed = false;  // a collective failed: the thread may be stuck inside MPI
};

struct sf_session {
  sf_comm* comm = nullptr;
  std::unique_ptr<rt::TrainingSession> session;
};

struct sf_flush_probe {
  sparsefuse::runtime::FlushProbe probe;
};

namespace {

thread_local std::string last_error;

// A collective failed: the job is ending (the caller exits, mpirun ends the
// others), so every rank's heartbeat record goes now, as sparsefuse run's do.
void mark_failed(sf_comm* comm) {
  if (!comm) return;
  comm->failed = true;
  if (comm->watch) comm->watch->remove_all_records();
}

// Runs BODY, mapping what it throws to a status code and last_error. A failed
// collective marks COMM as failed.
template <typename Body>
int guarded(sf_comm* comm, Body&& body) {
  try {
    body();
    return SF_OK;
  } catch (const InputError& e) {
    last_error = e.what();
    return SF_BAD_INPUT;
  } catch (const std::invalid_argument& e) {
    last_error = e.what();
    return SF_BAD_INPUT;
  } catch (const rt::CommTimeout& e) {
    last_error = e.what();
    mark_failed(comm);
    return SF_COMM_FAILED;
  } catch (const std::runtime_error& e) {
    // Errors of the communication thread's jobs (a failed or mismatched collective).
    last_error = e.what();
    mark_failed(comm);
    return SF_COMM_FAILED;
  } catch (const std::exception& e) {
    last_error = e.what();
    return SF_INTERNAL;
  } catch (...) {
    last_error = "unknown exception";
    return SF_INTERNAL;
  }
}

char* copy_out(const std::string& text) {
  char* out = static_cast<char*>(std::malloc(text.size() + 1));
  if (!out) throw std::bad_alloc();
  std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

// OUTPUTS (COUNT pointers; none needed when COUNT is 0) must all be non-null.
void require_outputs(float* const* outputs, int count, const char* call) {
  require(count == 0 || outputs, fmt::format("{}: null outputs", call));
  for (int t = 0; t < count; ++t) require(outputs[t] != nullptr, fmt::format("{}: a null output pointer", call));
}

}  // namespace

extern "C" {

const char* sf_last_error(void) { return last_error.c_str(); }

int sf_comm_create(double timeout_s, sf_comm** out) {
  return guarded(nullptr, [&] {
    require(out != nullptr, "sf_comm_create: OUT is null");
    require(timeout_s > 0 && timeout_s <= 86400, "sf_comm_create: expected a timeout in (0, 86400] seconds");
    auto comm = std::make_unique<sf_comm>();
    comm->timeout = std::chrono::milliseconds(std::llround(timeout_s * 1000));
    comm->under_mpirun = std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr;
    const bool mpi = comm->under_mpirun;
    comm->thread = std::make_unique<rt::CommThread>([mpi]() -> std::unique_ptr<rt::Communicator> {
      if (mpi) return std::make_unique<rt::MpiCommunicator>();
      return std::make_unique<rt::LoopbackCommunicator>();
    });
    // A timed-out collective then names the peer that held it up (a collective:
    // every rank creates its communicator at the same point).
    comm->watch = rt::PeerWatch::start(*comm->thread, comm->timeout);
    *out = comm.release();
  });
}

int sf_comm_rank(const sf_comm* comm) { return comm ? comm->thread->rank() : -1; }
int sf_comm_size(const sf_comm* comm) { return comm ? comm->thread->size() : -1; }

int sf_comm_broadcast_text(sf_comm* comm, int root, const char* text, char** out) {
  return guarded(comm, [&] {
    require(comm && out, "sf_comm_broadcast_text: null argument");
    require(root >= 0 && root < comm->thread->size(), "sf_comm_broadcast_text: ROOT is not a rank");
    const bool mine = comm->thread->rank() == root;
    require(!mine || text, "sf_comm_broadcast_text: the root's TEXT is null");
    // Over the communicator's int64 allgather: the root's length, then its
    // bytes packed eight to a word (the other ranks send zeros).
    const int64_t length = mine ? int64_t(std::strlen(text)) : 0;
    std::string result;
    comm->thread->submit(
        [&](rt::Communicator& c) {
          const int64_t n = c.allgather(&length, 1)[size_t(root)];
          const int words = int((n + 7) / 8);
          std::vector<int64_t> packed(size_t(std::max(words, 1)), 0);
          if (mine) std::memcpy(packed.data(), text, size_t(n));
          const std::vector<int64_t> all = c.allgather(packed.data(), int(packed.size()));
          result.assign(reinterpret_cast<const char*>(all.data() + size_t(root) * packed.size()), size_t(n));
        },
        "a text broadcast");
    comm->thread->drain(comm->timeout);
    *out = copy_out(result);
  });
}

int sf_comm_allreduce_sum(sf_comm* comm, double* data, int64_t n) {
  return guarded(comm, [&] {
    require(comm && (data || n == 0) && n >= 0, "sf_comm_allreduce_sum: null DATA or negative N");
    comm->thread->submit([&](rt::Communicator& c) { c.allreduce_sum(data, n); }, "a sum over ranks");
    comm->thread->drain(comm->timeout);
  });
}

int sf_comm_destroy(sf_comm* comm) {
  if (!comm) return SF_OK;
  comm->thread->set_peer_watch(nullptr);
  if (comm->failed) {
    (void)comm->thread.release();  // may be blocked inside MPI: never joined (the process is ending)
  }
  delete comm;
  return SF_OK;
}

int sf_scenario_set(const char* document, const char* assignment, char** out) {
  return guarded(nullptr, [&] {
    require(document && assignment && out, "sf_scenario_set: null argument");
    sparsefuse::Json doc = sparsefuse::Json::parse(document);
    sparsefuse::model::apply_override(doc, assignment);
    *out = copy_out(doc.dump());
  });
}

int sf_session_create(sf_comm* comm, const char* scenario_path, sf_session** out) {
  return guarded(comm, [&] {
    require(comm && scenario_path && out, "sf_session_create: null argument");
    rt::RunOptions options;
    options.timeout = comm->timeout;
    options.transport = comm->under_mpirun ? "mpi" : "loopback";
    auto session = std::make_unique<sf_session>();
    session->comm = comm;
    session->session = std::make_unique<rt::TrainingSession>(
        sparsefuse::model::load_scenario(scenario_path, {}), *comm->thread, options);
    *out = session.release();
  });
}

int sf_session_tensors(const sf_session* s) { return s ? s->session->tensors() : -1; }

const char* sf_session_tensor_name(const sf_session* s, int t) {
  if (!s || t < 0 || t >= s->session->tensors()) return nullptr;
  return s->session->name(t).c_str();
}

int64_t sf_session_tensor_elements(const sf_session* s, int t) {
  if (!s || t < 0 || t >= s->session->tensors()) return -1;
  return s->session->elements(t);
}

int sf_session_begin_iteration(sf_session* s) {
  return guarded(s ? s->comm : nullptr, [&] {
    require(s, "sf_session_begin_iteration: null session");
    s->session->begin_iteration();
  });
}

int sf_session_backward_started(sf_session* s) {
  return guarded(s ? s->comm : nullptr, [&] {
    require(s, "sf_session_backward_started: null session");
    s->session->backward_started();
  });
}

int sf_session_tensor_ready(sf_session* s, int t, const float* data, int64_t elements) {
  return guarded(s ? s->comm : nullptr, [&] {
    require(s && data, "sf_session_tensor_ready: null argument");
    s->session->tensor_ready(t, data, elements);
  });
}

int sf_session_wait(sf_session* s, float* const* outputs, int count) {
  return guarded(s ? s->comm : nullptr, [&] {
    require(s, "sf_session_wait: null session");
    require_outputs(outputs, count, "sf_session_wait");
    s->session->wait(outputs, count);
  });
}

int sf_session_stages(const sf_session* s) { return s ? s->session->stages() : -1; }

int sf_session_stage_tensors(const sf_session* s, int g, int* first, int* end) {
  return guarded(s ? s->comm : nullptr, [&] {
    require(s && first && end, "sf_session_stage_tensors: null argument");
    std::tie(*first, *end) = s->session->stage_tensors(g);
  });
}

int sf_session_open_stage(sf_session* s, int g, float* const* outputs, int count, int* updated) {
  return guarded(s ? s->comm : nullptr, [&] {
    require(s && updated, "sf_session_open_stage: null argument");
    require_outputs(outputs, count, "sf_session_open_stage");
    *updated = s->session->open_stage(g, outputs, count) ? 1 : 0;
  });
}

int sf_session_stage_updated(sf_session* s) {
  return guarded(s ? s->comm : nullptr, [&] {
    require(s, "sf_session_stage_updated: null session");
    s->session->stage_updated();
  });
}

int sf_session_complete(sf_session* s, float* const* outputs, int count) {
  return guarded(s ? s->comm : nullptr, [&] {
    require(s, "sf_session_complete: null session");
    require_outputs(outputs, count, "sf_session_complete");
    s->session->complete(outputs, count);
  });
}

int sf_session_end_iteration(sf_session* s) {
  return guarded(s ? s->comm : nullptr, [&] {
    require(s, "sf_session_end_iteration: null session");
    s->session->end_iteration();
  });
}

int sf_session_buckets(const sf_session* s) { return s ? int(s->session->buckets().size()) : -1; }

int sf_session_bucket(const sf_session* s, int k, double times_s[5], int64_t info[4]) {
  return guarded(s ? s->comm : nullptr, [&] {
    require(s && times_s && info, "sf_session_bucket: null argument");
    const auto& buckets = s->session->buckets();
    require(k >= 0 && k < int(buckets.size()), "sf_session_bucket: K is not a bucket of the last iteration");
    const rt::BucketExchange& x = *buckets[size_t(k)];
    const double ns[] = {double(x.posted), double(x.started), double(x.finished), double(x.decompressed),
                         double(x.compression_ns)};
    for (int i = 0; i < 5; ++i) times_s[i] = ns[i] * 1e-9;
    info[0] = x.bucket.first_tensor;
    info[1] = x.bucket.end_tensor;
    using sparsefuse::Collective;
    info[2] = x.bucket.collective == Collective::kAllgather ? 1 : x.bucket.collective == Collective::kReduceScatter ? 2 : 0;
    info[3] = x.sent_count;
  });
}

int sf_session_finish(sf_session* s, char** out) {
  return guarded(s ? s->comm : nullptr, [&] {
    require(s && out, "sf_session_finish: null argument");
    *out = copy_out(s->session->finish().to_json().dump(2) + "\n");
  });
}

int sf_session_destroy(sf_session* s) {
  if (!s) return SF_OK;
  if (s->comm && s->comm->failed) (void)s->session.release();  // its exchanges may still be in use by a stuck job
  delete s;
  return SF_OK;
}

int sf_flush_probe_create(int hooks, int64_t max_elements, sf_flush_probe** out) {
  return guarded(nullptr, [&] {
    require(out, "sf_flush_probe_create: null argument");
    *out = new sf_flush_probe{rt::FlushProbe(hooks, max_elements)};
  });
}

int sf_flush_probe_begin_iteration(sf_flush_probe* p) {
  return guarded(nullptr, [&] {
    require(p, "sf_flush_probe_begin_iteration: null probe");
    p->probe.begin_iteration();
  });
}

int sf_flush_probe_hook(sf_flush_probe* p, const float* gradient, int64_t elements) {
  return guarded(nullptr, [&] {
    require(p, "sf_flush_probe_hook: null probe");
    p->probe.hook(gradient, elements);
  });
}

int sf_flush_probe_end_iteration(sf_flush_probe* p, float* const* gradients, int count) {
  return guarded(nullptr, [&] {
    require(p && (count == 0 || gradients), "sf_flush_probe_end_iteration: null argument");
    p->probe.end_iteration(gradients, count);
  });
}

int sf_flush_probe_summary(const sf_flush_probe* p, int capacity, int* hooks_out, int64_t* elements,
                           double* flush_us, double* kernel_us, double* bookkeeping_us, double* write_back_us,
                           int64_t samples[3]) {
  return guarded(nullptr, [&] {
    require(p && hooks_out && elements && flush_us && kernel_us && bookkeeping_us && write_back_us && samples,
            "sf_flush_probe_summary: null argument");
    const rt::FlushProbeSummary s = p->probe.summary();
    require(int64_t(s.hooks.size()) <= int64_t(capacity),
            fmt::format("sf_flush_probe_summary: {} hooks, room for {}", s.hooks.size(), capacity));
    *hooks_out = int(s.hooks.size());
    for (size_t k = 0; k < s.hooks.size(); ++k) {
      elements[k] = s.hooks[k].elements;
      flush_us[k] = s.hooks[k].flush_us;
      kernel_us[k] = s.hooks[k].kernel_us;
    }
    *bookkeeping_us = s.bookkeeping_us();
    *write_back_us = s.write_back_us;
    samples[0] = s.flushes;
    samples[1] = s.kernels;
    samples[2] = s.write_backs;
  });
}

int sf_flush_probe_bookkeeping(int n, const double* flush_us, const double* kernel_us, double* bookkeeping_us) {
  return guarded(nullptr, [&] {
    require(n >= 0 && (n == 0 || (flush_us && kernel_us)) && bookkeeping_us,
            "sf_flush_probe_bookkeeping: null argument or negative count");
    rt::FlushProbeSummary s;
    for (int k = 0; k < n; ++k) s.hooks.push_back({0, flush_us[k], kernel_us[k]});
    *bookkeeping_us = s.bookkeeping_us();
  });
}

int sf_flush_probe_destroy(sf_flush_probe* p) {
  delete p;
  return SF_OK;
}

void sf_free(char* text) { std::free(text); }

}  // extern "C"
