#!/usr/bin/python3
"""Generates the built-in model traces in traces/ (format "sparsefuse-trace/1").

Python 3 standard library only. The output is deterministic: all timing
arithmetic is exact (fractions.Fraction) and rounded once, at the end.

Usage:
  /usr/bin/python3 tools/gen_traces.py                 # all models into traces/
  /usr/bin/python3 tools/gen_traces.py --out DIR       # all models into DIR
  /usr/bin/python3 tools/gen_traces.py --out DIR vgg16 # selected models

Each model is described as a list of parameterised ops in PyTorch
registration order (the order of model.named_parameters()). The trace lists
the tensors in reverse of that order, which is the order in which gradients
are produced during backward. Timing is analytic (FLOP counts at one assumed
sustained throughput); traces/README.md documents the method.
"""
import argparse
import json
import os
import sys
from fractions import Fraction

FORMAT = "sparsefuse-trace/1"
GENERATOR = "tools/gen_traces.py"

# --- Assumptions of the analytic timing model (documented in traces/README.md)
SUSTAINED_TFLOPS = 100          # mixed-precision training on an A100/H100-class GPU
FLOPS_PER_NS = SUSTAINED_TFLOPS * 1000  # 1 TFLOP/s = 1e3 FLOP/ns
ELEMENTWISE_FLOPS = 10          # per output element: norms, bias adds, lookups, token concat
MIN_TENSOR_BACKWARD_NS = 2000   # kernel-launch granularity: >= 2 us per tensor
MEMORY_GBYTES_PER_S = 2000      # optimizer step is memory bound
ADAM_BYTES_PER_PARAM = 28       # read p, g, m, v; write p, m, v (fp32)
SGD_BYTES_PER_PARAM = 20        # read p, g, buf; write p, buf (fp32)

METHOD = (
    "Analytic, not measured: per-sample forward FLOPs of every parameterised op "
    "(Linear 2*tokens*in*out, conv 2*Cin*Cout*kh*kw*Hout*Wout/groups, "
    f"{ELEMENTWISE_FLOPS} FLOPs per output element for norms, bias adds, embedding lookups "
    "and token concat, attention score/context matmuls 4*T^2*hidden charged to the layer's "
    "query/key/value ops, a tied LM head charged to the embedding) times batch size at "
    f"{SUSTAINED_TFLOPS} TFLOP/s sustained give forward times, backward is 2x forward per op "
    "played in the listed tensor order with each op's time split equally over its tensors "
    f"and at least {MIN_TENSOR_BACKWARD_NS // 1000} us per tensor, and the optimizer step "
    "is parameters-with-gradient times bytes per parameter (Adam 28 B, SGD with momentum "
    f"20 B) at {MEMORY_GBYTES_PER_S} GB/s."
)


class Op:
    """A parameterised op (one nn.Module owning parameters directly).

    tensors: [(full name, shape)] in registration order.
    fwd_flops: forward FLOPs per sample.
    bwd_flops: backward FLOPs per sample; defaults to 2 * fwd_flops. Only the
        GPT-2 tied embedding overrides it (its LM-head share runs elsewhere).
    has_grad: False for ops whose parameters get no gradient (BERT pooler in
        SQuAD fine-tuning).
    """

    def __init__(self, tensors, fwd_flops, bwd_flops=None, has_grad=True):
        self.tensors = tensors
        self.fwd_flops = Fraction(fwd_flops)
        self.bwd_flops = Fraction(2 * self.fwd_flops if bwd_flops is None else bwd_flops)
        self.has_grad = has_grad


def elementwise(elements):
    return ELEMENTWISE_FLOPS * elements


def linear(name, tokens, n_in, n_out, bias=True, extra_flops=0):
    """nn.Linear: weight [out, in] (+ bias [out]) applied to `tokens` rows."""
    tensors = [(name + ".weight", [n_out, n_in])]
    flops = 2 * tokens * n_in * n_out + Fraction(extra_flops)
    if bias:
        tensors.append((name + ".bias", [n_out]))
        flops += elementwise(tokens * n_out)
    return Op(tensors, flops)


def conv1d_gpt2(name, tokens, n_in, n_out, extra_flops=0):
    """Hugging Face GPT-2 Conv1D: a Linear whose weight is stored [in, out]."""
    flops = 2 * tokens * n_in * n_out + elementwise(tokens * n_out) + Fraction(extra_flops)
    return Op([(name + ".weight", [n_in, n_out]), (name + ".bias", [n_out])], flops)


def norm(name, channels, output_elements):
    """LayerNorm or BatchNorm: weight + bias [channels]."""
    return Op([(name + ".weight", [channels]), (name + ".bias", [channels])],
              elementwise(output_elements))


def conv2d(name, c_in, c_out, k, out_hw, bias=False, groups=1):
    """nn.Conv2d: weight [out, in/groups, k, k] (+ bias), output out_hw x out_hw."""
    tensors = [(name + ".weight", [c_out, c_in // groups, k, k])]
    flops = Fraction(2 * c_in * c_out * k * k * out_hw * out_hw, groups)
    if bias:
        tensors.append((name + ".bias", [c_out]))
        flops += elementwise(c_out * out_hw * out_hw)
    return Op(tensors, flops)


def embedding(name, rows, dim, tokens):
    return Op([(name + ".weight", [rows, dim])], elementwise(tokens * dim))


def attention_qkv(prefix, tokens, hidden):
    """Separate query/key/value Linears. The parameter-free score (Q K^T) and
    context (P V) matmuls, 2 * 2 * T^2 * hidden FLOPs, are charged to these
    three ops equally: in backward they run just before the q/k/v weight
    gradients, so this delays those tensors as the real kernels would."""
    core = Fraction(4 * tokens * tokens * hidden, 3)
    return [linear(f"{prefix}.{p}", tokens, hidden, hidden, extra_flops=core)
            for p in ("query", "key", "value")]


# --------------------------------------------------------------------------
# Architectures. Each returns (ops in registration order, description).

def bert_squad(num_layers, hidden, intermediate, seq):
    """NVIDIA DeepLearningExamples BertForQuestionAnswering (the seed code's
    model): vocabulary padded to 30,528 (a multiple of 8), LinearActivation
    modules named `dense_act` (intermediate and pooler), QA head Linear(hidden, 2)."""
    vocab, max_pos, types = 30528, 512, 2
    T = seq
    ops = [
        embedding("bert.embeddings.word_embeddings", vocab, hidden, T),
        embedding("bert.embeddings.position_embeddings", max_pos, hidden, T),
        embedding("bert.embeddings.token_type_embeddings", types, hidden, T),
        norm("bert.embeddings.LayerNorm", hidden, T * hidden),
    ]
    for i in range(num_layers):
        p = f"bert.encoder.layer.{i}"
        ops += attention_qkv(f"{p}.attention.self", T, hidden)
        ops += [
            linear(f"{p}.attention.output.dense", T, hidden, hidden),
            norm(f"{p}.attention.output.LayerNorm", hidden, T * hidden),
            linear(f"{p}.intermediate.dense_act", T, hidden, intermediate),
            linear(f"{p}.output.dense", T, intermediate, hidden),
            norm(f"{p}.output.LayerNorm", hidden, T * hidden),
        ]
    # The pooler runs in forward (on the first token) but its output is unused
    # by the QA loss, so its parameters never receive a gradient.
    pooler = linear("bert.pooler.dense_act", 1, hidden, hidden)
    pooler.has_grad = False
    ops.append(pooler)
    ops.append(linear("qa_outputs", T, hidden, 2))
    return ops


def gpt2_lm(num_layers, hidden, seq):
    """Hugging Face GPT2LMHeadModel with lm_head tied to transformer.wte."""
    vocab, n_pos = 50257, 1024
    T, H = seq, hidden
    lm_head = 2 * T * H * vocab
    # The tied LM-head matmul is charged to wte for forward timing. In backward
    # it runs first (it is the last forward op), so its time is played by a
    # tensor-less op at the start of backward; wte itself becomes ready only
    # at the very end, after the embedding-lookup gradient is accumulated.
    wte = Op([("transformer.wte.weight", [vocab, H])], elementwise(T * H) + lm_head,
             bwd_flops=2 * elementwise(T * H))
    ops = [wte, embedding("transformer.wpe", n_pos, H, T)]
    for i in range(num_layers):
        p = f"transformer.h.{i}"
        ops += [
            norm(f"{p}.ln_1", H, T * H),
            conv1d_gpt2(f"{p}.attn.c_attn", T, H, 3 * H, extra_flops=4 * T * T * H),
            conv1d_gpt2(f"{p}.attn.c_proj", T, H, H),
            norm(f"{p}.ln_2", H, T * H),
            conv1d_gpt2(f"{p}.mlp.c_fc", T, H, 4 * H),
            conv1d_gpt2(f"{p}.mlp.c_proj", T, 4 * H, H),
        ]
    ops.append(norm("transformer.ln_f", H, T * H))
    ops.append(Op([], 0, bwd_flops=2 * lm_head))  # LM-head backward (see above)
    return ops


def vit_classifier(num_layers, hidden, intermediate, image, patch, classes):
    """Hugging Face ViTForImageClassification (separate q/k/v, no pooler)."""
    grid = image // patch
    T = grid * grid + 1  # patches + [CLS]
    H = hidden
    ops = [
        # ViTEmbeddings registers its own parameters before its submodule.
        Op([("vit.embeddings.cls_token", [1, 1, H])], elementwise(H)),
        Op([("vit.embeddings.position_embeddings", [1, T, H])], elementwise(T * H)),
        conv2d("vit.embeddings.patch_embeddings.projection", 3, H, patch, grid, bias=True),
    ]
    for i in range(num_layers):
        p = f"vit.encoder.layer.{i}"
        ops += attention_qkv(f"{p}.attention.attention", T, H)
        ops += [
            linear(f"{p}.attention.output.dense", T, H, H),
            linear(f"{p}.intermediate.dense", T, H, intermediate),
            linear(f"{p}.output.dense", T, intermediate, H),
            norm(f"{p}.layernorm_before", H, T * H),
            norm(f"{p}.layernorm_after", H, T * H),
        ]
    ops.append(norm("vit.layernorm", H, T * H))
    ops.append(linear("classifier", 1, H, classes))  # on the [CLS] token only
    return ops


def torchvision_resnet(blocks, classes=1000, image=224):
    """torchvision ResNet with Bottleneck blocks (stride on the 3x3 conv)."""
    ops = []
    hw = image // 2  # conv1: 7x7 stride 2
    ops.append(conv2d("conv1", 3, 64, 7, hw))
    ops.append(norm("bn1", 64, 64 * hw * hw))
    hw //= 2  # maxpool 3x3 stride 2
    c_in = 64
    for stage, (n, planes) in enumerate(zip(blocks, (64, 128, 256, 512))):
        for b in range(n):
            stride = 2 if (stage > 0 and b == 0) else 1
            out_hw = hw // stride
            p = f"layer{stage + 1}.{b}"
            ops += [
                conv2d(f"{p}.conv1", c_in, planes, 1, hw),
                norm(f"{p}.bn1", planes, planes * hw * hw),
                conv2d(f"{p}.conv2", planes, planes, 3, out_hw),
                norm(f"{p}.bn2", planes, planes * out_hw * out_hw),
                conv2d(f"{p}.conv3", planes, 4 * planes, 1, out_hw),
                norm(f"{p}.bn3", 4 * planes, 4 * planes * out_hw * out_hw),
            ]
            if b == 0:  # downsample: 1x1 conv (stride) + BN
                ops += [
                    conv2d(f"{p}.downsample.0", c_in, 4 * planes, 1, out_hw),
                    norm(f"{p}.downsample.1", 4 * planes, 4 * planes * out_hw * out_hw),
                ]
            c_in, hw = 4 * planes, out_hw
    ops.append(linear("fc", 1, c_in, classes))
    return ops


def cifar_resnet50():
    """weiaicunzai/pytorch-cifar100 ResNet-50 (the seed code's CIFAR model).

    Same bottlenecks as torchvision, but conv1 is a 3x3 stride-1 conv with no
    maxpool (32x32 input stays 32x32 into conv2_x), and the module names are
    that repository's: conv1 = Sequential(conv, BN, ReLU); each block has
    residual_function = Sequential(conv1x1, BN, ReLU, conv3x3, BN, ReLU,
    conv1x1, BN) and shortcut = Sequential(conv1x1, BN) when needed."""
    hw = 32
    ops = [conv2d("conv1.0", 3, 64, 3, hw), norm("conv1.1", 64, 64 * hw * hw)]
    c_in = 64
    for stage, (n, planes) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512))):
        for b in range(n):
            stride = 2 if (stage > 0 and b == 0) else 1
            out_hw = hw // stride
            p = f"conv{stage + 2}_x.{b}"
            r = f"{p}.residual_function"
            ops += [
                conv2d(f"{r}.0", c_in, planes, 1, hw),
                norm(f"{r}.1", planes, planes * hw * hw),
                conv2d(f"{r}.3", planes, planes, 3, out_hw),
                norm(f"{r}.4", planes, planes * out_hw * out_hw),
                conv2d(f"{r}.6", planes, 4 * planes, 1, out_hw),
                norm(f"{r}.7", 4 * planes, 4 * planes * out_hw * out_hw),
            ]
            if stride != 1 or c_in != 4 * planes:
                ops += [
                    conv2d(f"{p}.shortcut.0", c_in, 4 * planes, 1, out_hw),
                    norm(f"{p}.shortcut.1", 4 * planes, 4 * planes * out_hw * out_hw),
                ]
            c_in, hw = 4 * planes, out_hw
    ops.append(linear("fc", 1, c_in, 100))
    return ops


def torchvision_vgg16():
    """torchvision VGG-16 without BN: features.N are conv(3x3, bias) / ReLU /
    maxpool modules, classifier = Linear, ReLU, Dropout, Linear, ReLU, Dropout, Linear."""
    cfg = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M",
           512, 512, 512, "M"]
    ops, index, c_in, hw = [], 0, 3, 224
    for v in cfg:
        if v == "M":
            hw //= 2
            index += 1
        else:
            ops.append(conv2d(f"features.{index}", c_in, v, 3, hw, bias=True))
            c_in = v
            index += 2  # conv + ReLU
    ops += [
        linear("classifier.0", 1, 512 * 7 * 7, 4096),
        linear("classifier.3", 1, 4096, 4096),
        linear("classifier.6", 1, 4096, 1000),
    ]
    return ops


# name -> (builder, batch, optimizer bytes/param, optimizer name, input,
#          expected tensors, expected parameters, description)
MODELS = {
    "bert-base": (lambda: bert_squad(12, 768, 3072, 384), 4, ADAM_BYTES_PER_PARAM, "Adam",
                  "sequence length 384", 201, 109488386,
                  "BERT-base (NVIDIA layout, vocab 30,528) with SQuAD QA head, sequence 384; "
                  "pooler has no gradient"),
    "bert-large": (lambda: bert_squad(24, 1024, 4096, 384), 4, ADAM_BYTES_PER_PARAM, "Adam",
                   "sequence length 384", 393, 335150082,
                   "BERT-large (NVIDIA layout, vocab 30,528) with SQuAD QA head, sequence 384; "
                   "pooler has no gradient"),
    "gpt2-large": (lambda: gpt2_lm(36, 1280, 1024), 2, ADAM_BYTES_PER_PARAM, "Adam",
                   "sequence length 1024", 436, 774030080,
                   "GPT-2 large (Hugging Face GPT2LMHeadModel, 36 x 1280), sequence 1024; "
                   "LM head tied to wte, so wte is ready last"),
    "vit-large": (lambda: vit_classifier(24, 1024, 4096, 224, 16, 1000), 32,
                  ADAM_BYTES_PER_PARAM, "Adam", "224x224 image, 197 tokens", 392, 304326632,
                  "ViT-L/16 (Hugging Face ViTForImageClassification, separate q/k/v), "
                  "224x224 (197 tokens), 1000 classes"),
    "resnet50": (lambda: torchvision_resnet((3, 4, 6, 3)), 32, SGD_BYTES_PER_PARAM,
                 "SGD with momentum", "224x224 image", 161, 25557032,
                 "ResNet-50 (torchvision), ImageNet 224x224, 1000 classes"),
    "resnet50-cifar100": (cifar_resnet50, 32, SGD_BYTES_PER_PARAM, "SGD with momentum",
                          "32x32 image", 161, 23705252,
                          "ResNet-50 for CIFAR-100 (weiaicunzai/pytorch-cifar100: 3x3 stem, "
                          "no maxpool), 32x32, 100 classes"),
    "resnet152": (lambda: torchvision_resnet((3, 8, 36, 3)), 32, SGD_BYTES_PER_PARAM,
                  "SGD with momentum", "224x224 image", 467, 60192808,
                  "ResNet-152 (torchvision), ImageNet 224x224, 1000 classes"),
    "vgg16": (torchvision_vgg16, 32, SGD_BYTES_PER_PARAM, "SGD with momentum",
              "224x224 image", 32, 138357544,
              "VGG-16 without BN (torchvision), ImageNet 224x224, 1000 classes"),
}


def product(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def round_ns(x):
    return int(round(Fraction(x)))  # Fraction rounds half to even: exact and portable


def build_trace(model):
    build, batch, opt_bytes, opt_name, input_desc, want_tensors, want_params, desc = MODELS[model]
    ops = build()

    # Inventory checks: fail loudly if the architecture code drifts.
    all_tensors = [t for op in ops for t in op.tensors]
    names = [n for n, _ in all_tensors]
    if len(set(names)) != len(names):
        raise SystemExit(f"{model}: duplicate tensor names")
    params = sum(product(s) for _, s in all_tensors)
    if len(all_tensors) != want_tensors or params != want_params:
        raise SystemExit(f"{model}: inventory has {len(all_tensors)} tensors / {params} "
                         f"parameters, expected {want_tensors} / {want_params}")

    def ns(flops):
        return Fraction(flops) * batch / FLOPS_PER_NS

    # Backward: ops in reverse registration order, tensors within an op in
    # reverse registration order (bias before weight). Exact times first.
    rows = []  # (name, shape, exact ready, exact forward share, has_grad)
    clock = Fraction(0)
    for op in reversed(ops):
        n = len(op.tensors)
        if n == 0:
            clock += ns(op.bwd_flops)  # tensor-less op (GPT-2 LM head backward)
            continue
        share_bwd = max(Fraction(MIN_TENSOR_BACKWARD_NS), ns(op.bwd_flops) / n)
        share_fwd = ns(op.fwd_flops) / n
        for name, shape in reversed(op.tensors):
            if op.has_grad:
                clock += share_bwd
            rows.append((name, shape, clock, share_fwd, op.has_grad))
    if not rows[-1][4]:
        raise SystemExit(f"{model}: last tensor must have a gradient")

    forward_exact = sum(ns(op.fwd_flops) for op in ops)
    forward_ns = round_ns(forward_exact)
    backward_ns = round_ns(clock)

    tensors = []
    cum_fwd = Fraction(0)
    prev_fwd_rounded = 0
    for name, shape, ready, share_fwd, has_grad in rows:
        # Cumulative rounding: every tensor is within 1 ns of its exact share
        # and the shares add up to forward_ns exactly.
        cum_fwd += share_fwd
        fwd_rounded = round_ns(cum_fwd)
        t = {"name": name, "shape": shape, "elements": product(shape),
             "ready_ns": round_ns(ready), "forward_ns": fwd_rounded - prev_fwd_rounded}
        prev_fwd_rounded = fwd_rounded
        if not has_grad:
            t["has_grad"] = False
        tensors.append(t)
    assert prev_fwd_rounded == forward_ns
    assert tensors[-1]["ready_ns"] == backward_ns

    grad_params = sum(t["elements"] for t in tensors if t.get("has_grad", True))
    optimizer_ns = round_ns(Fraction(grad_params * opt_bytes) / MEMORY_GBYTES_PER_S)  # B / (B/ns)

    return {
        "format": FORMAT,
        "model": model,
        "description": desc,
        "batch_size": batch,
        "dtype": "float32",
        "provenance": {
            "kind": "analytic",
            "method": METHOD,
            "sustained_tflops": SUSTAINED_TFLOPS,
            "memory_bandwidth_gbytes_per_s": MEMORY_GBYTES_PER_S,
            "generator": GENERATOR,
            "input": input_desc,
            "optimizer": opt_name,
            "optimizer_bytes_per_param": opt_bytes,
            "min_tensor_backward_ns": MIN_TENSOR_BACKWARD_NS,
            "elementwise_flops_per_element": ELEMENTWISE_FLOPS,
        },
        "forward_ns": forward_ns,
        "backward_ns": backward_ns,
        "optimizer_ns": optimizer_ns,
        "tensors": tensors,
    }


def render(trace):
    """2-space indented JSON with one tensor object per line (diff friendly)."""
    def dump(v):
        return json.dumps(v, ensure_ascii=False, separators=(", ", ": "))

    lines = ["{"]
    keys = [k for k in trace if k != "tensors"]
    for k in keys:
        lines.append(f"  {dump(k)}: {dump(trace[k])},")
    lines.append('  "tensors": [')
    body = [f"    {dump(t)}" for t in trace["tensors"]]
    lines.append(",\n".join(body))
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(here, os.pardir, "traces"),
                        help="output directory (default: traces/ next to tools/)")
    parser.add_argument("models", nargs="*", help=f"models (default: all of {', '.join(MODELS)})")
    args = parser.parse_args(argv)
    for m in args.models:
        if m not in MODELS:
            parser.error(f"unknown model {m!r}")
    os.makedirs(args.out, exist_ok=True)
    for model in args.models or MODELS:
        trace = build_trace(model)
        path = os.path.join(args.out, model + ".json")
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(render(trace))
        print(f"{model}: {len(trace['tensors'])} tensors, "
              f"{sum(t['elements'] for t in trace['tensors'])} parameters, "
              f"forward {trace['forward_ns'] / 1e6:.3f} ms, "
              f"backward {trace['backward_ns'] / 1e6:.3f} ms, "
              f"optimizer {trace['optimizer_ns'] / 1e6:.3f} ms -> {os.path.normpath(path)}")


if __name__ == "__main__":
    main(sys.argv[1:])
