"""Timestamps for one iteration. mark() returns an opaque token; after
finish(), ns(a, b) is the time from token a to token b in nanoseconds.

CPU: the monotonic clock, read when mark() is called (the work is synchronous).
CUDA: an event recorded on the current (compute) stream, so the time is when
the GPU reaches that point, not when the host enqueued it; finish()
synchronizes once per iteration, after all marks are recorded.
"""
import time


class CpuClock:
    kind = "cpu"
    method = "time.monotonic_ns() on the host around synchronous CPU work"

    def mark(self):
        return time.monotonic_ns()

    def finish(self):
        pass

    def ns(self, a, b):
        return b - a


class CudaClock:
    kind = "cuda"
    method = "CUDA events recorded on the compute stream, read after one synchronize per iteration"

    def __init__(self, torch_module):
        self._torch = torch_module

    def mark(self):
        event = self._torch.cuda.Event(enable_timing=True)
        event.record()  # on the current stream: autograd sets it for each node it runs
        return event

    def finish(self):
        self._torch.cuda.synchronize()

    def ns(self, a, b):
        return int(round(a.elapsed_time(b) * 1e6))  # elapsed_time is in ms
