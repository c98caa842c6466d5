"""Hand-checked cases for sparsefuse_profile's pure parts: statistics,
ordering, gradient-less tensors, forward shares, the CUDA clock's
arithmetic with a stand-in for torch.cuda (no GPU needed), and synthetic
workloads drawing a fresh batch every iteration.

usage: check_units.py PACKAGE_DIR
"""
import sys
import types
import unittest

sys.path.insert(0, sys.argv.pop(1))
from sparsefuse_profile import clocks, tracefile  # noqa: E402
from sparsefuse_profile.profiler import Iteration  # noqa: E402


class Stats(unittest.TestCase):
    def test_median_and_iqr(self):
        self.assertEqual(tracefile.median_ns([5, 1, 3]), 3)
        self.assertEqual(tracefile.median_ns([1, 2, 3, 10]), 2)  # 2.5 rounds half to even
        # Inclusive quartiles of 1..5 are 2 and 4.
        self.assertEqual(tracefile.spread_ns([1, 2, 3, 4, 5]), 2)
        self.assertEqual(tracefile.spread_ns([7]), 0)
        # IQR 2, median 3: 2 / 1.349 / 3; one far outlier moves it little.
        self.assertAlmostEqual(tracefile.robust_cv([1, 2, 3, 4, 5]), 0.494193, places=6)
        self.assertAlmostEqual(tracefile.robust_cv([1, 2, 3, 4, 500]), 0.494193, places=6)


def _workload():
    return types.SimpleNamespace(name="m", description="d")


class Build(unittest.TestCase):
    # Parameters in registration order: a.weight, a.bias, b.weight (no gradient), c.weight.
    names = ["a.weight", "a.bias", "b.weight", "c.weight"]
    shapes = [(2, 3), (2,), (4,), (3, 3)]
    owners = [0, 0, 1, 2]

    def iterations(self):
        # c.weight is ready first; a.weight before a.bias (not reverse registration).
        raw = [(10, 50, 5, {3: 10, 0: 30, 1: 40}, {0: 8, 1: 2, 2: 4}),
               (12, 54, 6, {3: 12, 0: 33, 1: 44}, {0: 9, 1: 2, 2: 5}),
               (11, 52, 7, {3: 11, 0: 31, 1: 41}, {0: 7, 1: 2, 2: 3})]
        return [Iteration(f, b, o, r, m) for f, b, o, r, m in raw]

    def test_order_and_medians(self):
        order, without = tracefile.measured_order(self.names, self.iterations())
        self.assertEqual(order, [3, 0, 1])
        self.assertEqual(without, [2])
        self.assertEqual(tracefile.order_differences(order), [1, 2])  # reverse registration: 3, 1, 0
        t = tracefile.build(_workload(), self.names, self.shapes, self.owners, self.iterations(), {}, 4)
        listed = [(x["name"], x["ready_ns"], x.get("has_grad", True)) for x in t["tensors"]]
        # b.weight follows c.weight (its reverse-registration predecessor), at c's ready time.
        self.assertEqual(listed, [("c.weight", 11, True), ("b.weight", 11, False), ("a.weight", 31, True),
                                  ("a.bias", 41, True)])
        self.assertEqual((t["forward_ns"], t["backward_ns"], t["optimizer_ns"]), (11, 52, 6))
        self.assertEqual(t["iteration_ns"], 70)  # totals 65, 72, 70
        self.assertEqual(t["tensors"][2]["ready_spread_ns"], 2)  # 30, 31, 33: quartiles 30.5, 32
        # Module 0 (median 8 ns) split over a.weight and a.bias.
        shares = {x["name"]: x["forward_ns"] for x in t["tensors"]}
        self.assertEqual((shares["a.weight"], shares["a.bias"], shares["b.weight"]), (4, 4, 2))

    def test_a_cv_beyond_the_readers_limit_is_clamped_and_recorded(self):
        its = self.iterations()
        its[0].optimizer = 5000  # totals 5060, 72, 70: median 72, IQR (5060 - 71) inclusive quartiles
        provenance = {}
        t = tracefile.build(_workload(), self.names, self.shapes, self.owners, its, provenance, 4)
        self.assertEqual(t["iteration_cv"], 10.0)
        raw = tracefile.robust_cv([5060, 72, 70])
        self.assertGreater(raw, 10.0)
        self.assertEqual(provenance["iteration_cv_unclamped"], raw)

    def test_gradient_in_some_iterations_only_is_an_error(self):
        its = self.iterations()
        del its[1].ready[0]
        with self.assertRaises(ValueError):
            tracefile.measured_order(self.names, its)


class FakeEvent:
    log = []

    def __init__(self, enable_timing):
        assert enable_timing
        self.at = None

    def record(self):
        self.at = len(FakeEvent.log) * 1.25  # ms: each event 1.25 ms after the previous
        FakeEvent.log.append(self)

    def elapsed_time(self, other):
        return other.at - self.at


class CudaClock(unittest.TestCase):
    def test_events_and_one_synchronize(self):
        synced = []
        fake = types.SimpleNamespace(cuda=types.SimpleNamespace(Event=FakeEvent, synchronize=lambda: synced.append(1)))
        clock = clocks.CudaClock(fake)
        a, b, c = clock.mark(), clock.mark(), clock.mark()
        clock.finish()
        self.assertEqual(synced, [1])
        self.assertEqual(clock.ns(a, c), 2_500_000)
        self.assertEqual(clock.ns(b, c), 1_250_000)


class SyntheticBatches(unittest.TestCase):
    def test_every_iteration_draws_a_new_batch_and_its_own_loss(self):
        import torch
        from sparsefuse_profile import workloads
        gen = torch.Generator().manual_seed(3)
        w = workloads.from_file("tests/profile_model/tiny_model.py:make", ["16:int64:100", "32"], 2,
                                torch.device("cpu"), gen)
        first = [t.clone() for t in w.next_inputs()]
        second = w.next_inputs()
        self.assertEqual([tuple(t.shape) for t in second], [(2, 16), (2, 32)])
        self.assertFalse(torch.equal(first[0], second[0]) or torch.equal(first[1], second[1]))
        w.model(*second)  # the tiny model takes them
        # A seed classifier's loss follows the current batch's labels: one
        # output (random logits) scored against each draw's labels differs.
        w = workloads.seed_or_torchvision("torchvision:resnet18", 4, None, 32, torch.device("cpu"), gen)
        logits = torch.randn(4, 1000, generator=torch.Generator().manual_seed(5))
        losses = set()
        for _ in range(3):
            w.next_inputs()
            losses.add(round(float(w.loss(logits)), 6))
        self.assertGreater(len(losses), 1)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=1)
