"""ctypes bindings of the runtime's C API (runtime/capi/sparsefuse_c.h).

Status codes become exceptions: BadInput (the caller's mistake, exit status
2 in the CLI), CommFailed (a collective failed or timed out: the process
must end, the communication thread may be stuck inside MPI) and
RuntimeFailure (anything else inside the runtime)."""
import ctypes
import json
import os

SF_OK, SF_INTERNAL, SF_BAD_INPUT, SF_COMM_FAILED = 0, 1, 2, 3
LIBRARY_ENV = "SPARSEFUSE_TORCH_LIB"


class RuntimeFailure(Exception):
    """A failure inside the runtime (status SF_INTERNAL)."""


class BadInput(RuntimeFailure):
    """The caller's mistake: a bad scenario, an unsupported scheme, a wrong tensor or call order."""


class CommFailed(RuntimeFailure):
    """A collective failed or did not finish in time; end the process."""


_lib = None


def _declare(lib):
    c_double_p, c_int64_p = ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_int64)
    c_int_p = ctypes.POINTER(ctypes.c_int)
    void_p = ctypes.c_void_p
    signatures = {
        "sf_last_error": (ctypes.c_char_p, []),
        "sf_comm_create": (ctypes.c_int, [ctypes.c_double, ctypes.POINTER(void_p)]),
        "sf_comm_rank": (ctypes.c_int, [void_p]),
        "sf_comm_size": (ctypes.c_int, [void_p]),
        "sf_comm_broadcast_text": (ctypes.c_int, [void_p, ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(void_p)]),
        "sf_comm_allreduce_sum": (ctypes.c_int, [void_p, c_double_p, ctypes.c_int64]),
        "sf_comm_destroy": (ctypes.c_int, [void_p]),
        "sf_scenario_set": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(void_p)]),
        "sf_session_create": (ctypes.c_int, [void_p, ctypes.c_char_p, ctypes.POINTER(void_p)]),
        "sf_session_tensors": (ctypes.c_int, [void_p]),
        "sf_session_tensor_name": (ctypes.c_char_p, [void_p, ctypes.c_int]),
        "sf_session_tensor_elements": (ctypes.c_int64, [void_p, ctypes.c_int]),
        "sf_session_begin_iteration": (ctypes.c_int, [void_p]),
        "sf_session_backward_started": (ctypes.c_int, [void_p]),
        "sf_session_tensor_ready": (ctypes.c_int, [void_p, ctypes.c_int, void_p, ctypes.c_int64]),
        "sf_session_wait": (ctypes.c_int, [void_p, ctypes.POINTER(void_p), ctypes.c_int]),
        "sf_session_end_iteration": (ctypes.c_int, [void_p]),
        "sf_session_stages": (ctypes.c_int, [void_p]),
        "sf_session_stage_tensors": (ctypes.c_int, [void_p, ctypes.c_int, c_int_p, c_int_p]),
        "sf_session_open_stage": (ctypes.c_int, [void_p, ctypes.c_int, ctypes.POINTER(void_p), ctypes.c_int,
                                                 c_int_p]),
        "sf_session_stage_updated": (ctypes.c_int, [void_p]),
        "sf_session_complete": (ctypes.c_int, [void_p, ctypes.POINTER(void_p), ctypes.c_int]),
        "sf_session_buckets": (ctypes.c_int, [void_p]),
        "sf_session_bucket": (ctypes.c_int, [void_p, ctypes.c_int, c_double_p, c_int64_p]),
        "sf_session_finish": (ctypes.c_int, [void_p, ctypes.POINTER(void_p)]),
        "sf_session_destroy": (ctypes.c_int, [void_p]),
        "sf_flush_probe_create": (ctypes.c_int, [ctypes.c_int, ctypes.c_int64, ctypes.POINTER(void_p)]),
        "sf_flush_probe_begin_iteration": (ctypes.c_int, [void_p]),
        "sf_flush_probe_hook": (ctypes.c_int, [void_p, void_p, ctypes.c_int64]),
        "sf_flush_probe_end_iteration": (ctypes.c_int, [void_p, ctypes.POINTER(void_p), ctypes.c_int]),
        "sf_flush_probe_summary": (ctypes.c_int, [void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int), c_int64_p,
                                                  c_double_p, c_double_p, c_double_p, c_double_p, c_int64_p]),
        "sf_flush_probe_bookkeeping": (ctypes.c_int, [ctypes.c_int, c_double_p, c_double_p, c_double_p]),
        "sf_flush_probe_destroy": (ctypes.c_int, [void_p]),
        "sf_free": (None, [void_p]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype, function.argtypes = restype, argtypes
    return lib


def library():
    """The loaded runtime library ($SPARSEFUSE_TORCH_LIB; `sparsefuse train` sets it)."""
    global _lib
    if _lib is None:
        path = os.environ.get(LIBRARY_ENV)
        if not path:
            raise BadInput(f"${LIBRARY_ENV} is not set; point it at libsparsefuse_c.so "
                           "(bazel build //runtime/capi:libsparsefuse_c.so), or run through 'sparsefuse train'")
        if not os.path.isfile(path):
            raise BadInput(f"${LIBRARY_ENV}: {path}: no such file; expected libsparsefuse_c.so")
        # RTLD_GLOBAL: Open MPI's plugins, loaded by MPI_Init, resolve symbols of libmpi.
        _lib = _declare(ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL))
    return _lib


def check(status):
    """Raises the exception for a C API status (with the runtime's message)."""
    if status == SF_OK:
        return
    message = (library().sf_last_error() or b"").decode("utf-8", "replace")
    raise {SF_BAD_INPUT: BadInput, SF_COMM_FAILED: CommFailed}.get(status, RuntimeFailure)(message)


def take_text(pointer):
    """A char* the library allocated, as str; freed."""
    try:
        return ctypes.cast(pointer, ctypes.c_char_p).value.decode("utf-8")
    finally:
        library().sf_free(pointer)


def scenario_set(doc, assignment):
    """DOC (a scenario as a dict) with one --set KEY=VALUE applied by the
    runtime's own rules, those of `sparsefuse simulate --set`."""
    out = ctypes.c_void_p()
    # surrogateescape: bytes that are not UTF-8 reach the runtime, which names them.
    check(library().sf_scenario_set(json.dumps(doc).encode("utf-8"), assignment.encode("utf-8", "surrogateescape"),
                                    ctypes.byref(out)))
    return json.loads(take_text(out))


class Communicator:
    """The process's communicator: MPI under mpirun, else one rank alone.
    Create one per process, before any session, and close it last."""

    def __init__(self, timeout_s=60.0):
        self._handle = ctypes.c_void_p()
        check(library().sf_comm_create(float(timeout_s), ctypes.byref(self._handle)))
        self.rank = library().sf_comm_rank(self._handle)
        self.size = library().sf_comm_size(self._handle)

    @property
    def handle(self):
        return self._handle

    def broadcast_text(self, text, root=0):
        """ROOT's TEXT on every rank (others pass None)."""
        out = ctypes.c_void_p()
        data = text.encode("utf-8") if text is not None else None
        check(library().sf_comm_broadcast_text(self._handle, root, data, ctypes.byref(out)))
        return take_text(out)

    def allreduce_sum(self, values):
        """The element-wise sum of every rank's VALUES (floats), as a list."""
        data = (ctypes.c_double * len(values))(*values)
        check(library().sf_comm_allreduce_sum(self._handle, data, len(values)))
        return list(data)

    def close(self):
        if self._handle:
            library().sf_comm_destroy(self._handle)
            self._handle = ctypes.c_void_p()


class FlushProbe:
    """The engine's flush of a bucket sent dense as pairs, measured at each
    gradient-ready hook of a profiled training loop (runtime/flush_probe.h):
    the profiler calls hook(index, gradient) at each hook and
    begin_iteration()/end_iteration() around each iteration. NAMES: the
    model's parameter names, which a hook's index is into; MAX_ELEMENTS: the
    largest probe tensor (a hook's is min(its gradient's elements, it)),
    above every one-dimensional parameter of the models profiled.
    end_iteration() also writes every hook's average back into the gradient
    it was given (the same values), as the runtime writes its averages into
    p.grad, and times that."""

    def __init__(self, names, max_elements=4096):
        self.names, self.max_elements = list(names), int(max_elements)
        self._order = []  # the hooks' parameter indices, in the first iteration (which the probe learns)
        self._gradients = []  # this iteration's, in hook order: end_iteration writes the averages back into them
        self._iterations = 0
        self._handle = ctypes.c_void_p()
        check(library().sf_flush_probe_create(len(self.names), self.max_elements, ctypes.byref(self._handle)))
        hook = library().sf_flush_probe_hook

        # Bound once: it runs inside every backward step being timed.
        def probe_hook(index, gradient):
            if self._iterations == 1:
                self._order.append(index)
            g = gradient.detach()
            if not g.is_contiguous():
                g = g.contiguous()
            self._gradients.append(g)
            check(hook(self._handle, ctypes.c_void_p(g.data_ptr()), g.numel()))
        self.hook = probe_hook

    def begin_iteration(self):
        self._iterations += 1
        self._gradients = []
        check(library().sf_flush_probe_begin_iteration(self._handle))

    def end_iteration(self):
        """After the optimizer's step, outside the phases the profiler times."""
        n = len(self._gradients)
        pointers = (ctypes.c_void_p * n)(*[g.data_ptr() for g in self._gradients])
        check(library().sf_flush_probe_end_iteration(self._handle, pointers, n))
        self._gradients = []

    def summary(self, comm):
        """The per-hook medians averaged over COMM's ranks (as result.json's
        per-bucket figures are), as a trace's "runtime_flush" object
        (common/trace.h). Collective: every rank calls it."""
        n = len(self.names)
        hooks, bookkeeping, write_back = ctypes.c_int(), ctypes.c_double(), ctypes.c_double()
        elements, samples = (ctypes.c_int64 * n)(), (ctypes.c_int64 * 3)()
        flush, kernel = (ctypes.c_double * n)(), (ctypes.c_double * n)()
        check(library().sf_flush_probe_summary(self._handle, n, ctypes.byref(hooks), elements, flush, kernel,
                                               ctypes.byref(bookkeeping), ctypes.byref(write_back), samples))
        h = hooks.value
        sums = comm.allreduce_sum(list(flush[:h]) + list(kernel[:h]) + [write_back.value] + list(samples))
        flush = (ctypes.c_double * h)(*[x / comm.size for x in sums[:h]])
        kernel = (ctypes.c_double * h)(*[x / comm.size for x in sums[h:2 * h]])
        check(library().sf_flush_probe_bookkeeping(h, flush, kernel, ctypes.byref(bookkeeping)))
        tensors = [{"name": self.names[self._order[k]], "elements": elements[k], "flush_us": flush[k],
                    "kernel_us": kernel[k]} for k in range(h)]
        return {"bookkeeping_us": bookkeeping.value, "max_elements": self.max_elements, "flushes": int(sums[-3]),
                "kernels": int(sums[-2]), "write_back_us": sums[2 * h] / comm.size, "write_backs": int(sums[-1]),
                "method": "runtime/flush_probe.h: at each gradient-ready hook of the profiled backward, the "
                          "gradient copied in as the runtime copies it, then a flush of that hook's tensor "
                          "(min(its elements, max_elements)) in a bucket sent dense as pairs (engine "
                          "iterations) or pack_dense alone (kernel iterations), alternating; per tensor the "
                          f"medians, averaged over {comm.size} ranks; bookkeeping = the median over the tensors "
                          "of flush - kernel; write_back = every tensor's average written into its gradient "
                          "after the optimizer's step, as the runtime writes the averages (the median "
                          "iteration, averaged over the ranks)",
                "tensors": tensors}

    def close(self):
        if self._handle:
            library().sf_flush_probe_destroy(self._handle)
            self._handle = ctypes.c_void_p()
