"""PyTorch's own top-k on the GPU, timed like `profile-kernels` times ours:
CUDA events around the whole call (|g|, torch.topk, and the host
synchronisation the result needs), median of 10 after 2 warm-ups. The seed
systems compress with torch.topk, so this is what their compression costs on
the same GPU. Run by tools/device_check (step torch_topk)."""
import statistics

import torch


def time_us(fn, reps=10):
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3)
    return statistics.median(times)


def main():
    print(f"# torch {torch.__version__} on {torch.cuda.get_device_name(0)}")
    print(f"{'n':>12} {'density':>8} {'torch.topk_us':>14}")
    gen = torch.Generator(device="cuda").manual_seed(1)
    for n in (1_000, 10_000, 100_000, 1_000_000, 10_000_000, 25_557_032, 100_000_000):
        g = torch.randn(n, device="cuda", generator=gen) * 1e-3
        for density in (0.001, 0.01, 0.1):
            k = max(1, int(n * density))

            def call():
                values, indices = torch.topk(g.abs(), k, sorted=False)
                torch.cuda.current_stream().synchronize()  # as a caller sizing the next step would
            print(f"{n:>12} {density:>8} {time_us(call):>14.1f}")


if __name__ == "__main__":
    main()
