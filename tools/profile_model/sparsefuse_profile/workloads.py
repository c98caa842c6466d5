"""What to train: a model, synthetic inputs of its shape, a loss and an
optimizer, resolved from --model (a seed name, torchvision:NAME, or
FILE.py:FACTORY with --input shapes)."""
import importlib.util
import os

import torch
from torch import nn
from torch.nn import functional as F

from sparsefuse_profile import cifar_resnet, transformers
from sparsefuse_profile.errors import InputError


class Workload:
    """model: the nn.Module (on the target device); next_inputs(): the
    positional arguments of its next forward; loss(output) -> scalar, for the
    inputs next_inputs last returned; optimizer: "adam" or "sgd".

    Synthetic data is a fresh random batch every iteration (SYNTHETIC: a
    function returning (inputs, loss)), never one batch repeated: trained on
    one batch, a model memorises it within a few steps (ResNet-50 CIFAR at
    batch 1: loss 0.00000 from the second step), its gradients underflow
    through denormal floats, which the CPU computes on slowly (one backward
    pass took 2.2 times as long), to exact zeros, and sparsifiers then select
    from zeros: neither the timing nor the compression would be a training
    run's."""

    def __init__(self, name, description, model, optimizer, input_description, synthetic=None, batches=None,
                 loss=None):
        self.name = name
        self.description = description
        self.model = model
        self.optimizer = optimizer
        self.input_description = input_description
        self._synthetic = synthetic
        self._batches = batches  # a user's data: an iterator of forward arguments, cycled
        self.loss = loss  # a user's data: one loss for every batch; synthetic: each batch's, set by next_inputs

    def next_inputs(self):
        """The forward's positional arguments for the next iteration: a new
        synthetic batch (and its loss), or the user's next batch."""
        if self._synthetic is None:
            return next(self._batches)
        inputs, self.loss = self._synthetic()
        return inputs


# Seed models: name -> (kind, builder(device, size), default batch, default size, optimizer, description).
# The batches are those of the analytic traces (the seed papers' set-ups).
SEEDS = {
    "bert-base": ("bert", transformers.bert_base, 4, 384, "adam",
                  "BERT-base (NVIDIA layout, vocab 30,528) with SQuAD QA head; pooler has no gradient"),
    "bert-large": ("bert", transformers.bert_large, 4, 384, "adam",
                   "BERT-large (NVIDIA layout, vocab 30,528) with SQuAD QA head; pooler has no gradient"),
    "gpt2-large": ("gpt2", transformers.gpt2_large, 2, 1024, "adam",
                   "GPT-2 large (GPT2LMHeadModel layout, 36 x 1280), LM head tied to wte"),
    "vit-large": ("vit", transformers.vit_large, 32, 224, "adam",
                  "ViT-L/16 (ViTForImageClassification layout, separate q/k/v), 1000 classes"),
    "resnet50": ("torchvision", "resnet50", 32, 224, "sgd", "ResNet-50 (torchvision), 1000 classes"),
    "resnet50-cifar100": ("cifar", cifar_resnet.CifarResNet50, 32, 32, "sgd",
                          "ResNet-50 for CIFAR-100 (3x3 stem, no maxpool), 100 classes"),
    "resnet152": ("torchvision", "resnet152", 32, 224, "sgd", "ResNet-152 (torchvision), 1000 classes"),
    "vgg16": ("torchvision", "vgg16", 32, 224, "sgd", "VGG-16 without BN (torchvision), 1000 classes"),
}
SEQUENCE_LIMIT = {"bert": 512, "gpt2": 1024}  # position-embedding rows


def default_batch(spec):
    return SEEDS[spec][2] if spec in SEEDS else 32


def _torchvision_model(name, device):
    import torchvision
    known = torchvision.models.list_models(module=torchvision.models)
    if name not in known:
        raise InputError(f"--model: unknown torchvision classifier \"{name}\"; expected one of "
                         f"{', '.join(sorted(known))}")
    return torchvision.models.get_model(name, weights=None).to(device)


def build_seed_model(name, device, size=None):
    """The seed model NAME (parameters on DEVICE; "meta" allocates nothing).
    SIZE is the image size for ViT (it sets the position-embedding rows)."""
    kind, builder = SEEDS[name][0], SEEDS[name][1]
    if kind == "torchvision":
        return _torchvision_model(builder, device)
    if kind == "vit":
        return builder(image=size or SEEDS[name][3], device=device)
    return builder(device=device)


def _logits(output):
    # Inception v3 and GoogLeNet return a named tuple with the main logits in training mode.
    return output.logits if hasattr(output, "logits") else output


def _classification(batch, image, classes, device, gen):
    """A random batch of images and labels, and its loss."""
    images = torch.randn(batch, 3, image, image, generator=gen).to(device)
    labels = torch.randint(0, classes, (batch,), generator=gen).to(device)
    return [images], lambda out: F.cross_entropy(_logits(out), labels)


def _classes(model):
    heads = [m for m in model.modules() if isinstance(m, nn.Linear)]
    if not heads:
        raise InputError("--model: cannot find the classifier's output Linear to size the labels")
    return heads[-1].out_features


def seed_or_torchvision(spec, batch, seq_len, image_size, device, gen):
    if spec.startswith("torchvision:"):
        name = spec[len("torchvision:"):]
        model = _torchvision_model(name, device)
        image = image_size or 224
        classes = _classes(model)
        return Workload(name, f"torchvision {name}, {classes} classes", model, "sgd", f"{image}x{image} image",
                        lambda: _classification(batch, image, classes, device, gen))
    if spec not in SEEDS:
        raise InputError(f"--model: unknown model \"{spec}\"; expected one of {', '.join(SEEDS)}, "
                         "torchvision:NAME or FILE.py:FACTORY")
    kind, _, _, default_size, optimizer, description = SEEDS[spec]
    if kind in ("bert", "gpt2"):
        if image_size is not None:
            raise InputError(f"--image-size: {spec} takes token sequences; use --seq-len")
        seq = seq_len or default_size
        if not 1 <= seq <= SEQUENCE_LIMIT[kind]:
            raise InputError(f"--seq-len: expected 1..{SEQUENCE_LIMIT[kind]} for {spec}, got {seq}")
        model = build_seed_model(spec, device)
        if kind == "bert":
            def squad_batch():
                ids = torch.randint(0, 30528, (batch, seq), generator=gen).to(device)
                types = torch.randint(0, 2, (batch, seq), generator=gen).to(device)
                mask = torch.ones(batch, seq, dtype=torch.int64).to(device)
                starts = torch.randint(0, seq, (batch,), generator=gen).to(device)
                ends = torch.randint(0, seq, (batch,), generator=gen).to(device)

                def loss(out):  # SQuAD: start and end position cross-entropy
                    return (F.cross_entropy(out[0], starts) + F.cross_entropy(out[1], ends)) / 2
                return [ids, types, mask], loss
            return Workload(spec, description, model, optimizer, f"sequence length {seq}", squad_batch)

        def lm_batch():
            ids = torch.randint(0, 50257, (batch, seq), generator=gen).to(device)

            def loss(logits):  # next-token prediction on the input itself
                return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
            return [ids], loss
        return Workload(spec, description, model, optimizer, f"sequence length {seq}", lm_batch)
    if seq_len is not None:
        raise InputError(f"--seq-len: {spec} takes images; use --image-size")
    image = image_size or default_size
    if kind == "vit" and image % 16:
        raise InputError(f"--image-size: expected a multiple of the 16-pixel patch for {spec}, got {image}")
    model = build_seed_model(spec, device, image)
    classes = _classes(model)
    return Workload(spec, description, model, optimizer, f"{image}x{image} image",
                    lambda: _classification(batch, image, classes, device, gen))


def parse_input(text):
    """SHAPE[:float32] or SHAPE:int64:HIGH, SHAPE per sample as AxBxC."""
    parts = text.split(":")
    form = "expected SHAPE (per sample, e.g. 3x32x32), SHAPE:float32 or SHAPE:int64:HIGH"
    try:
        shape = [int(d) for d in parts[0].split("x")]
    except ValueError:
        raise InputError(f"--input \"{text}\": {form}") from None
    if any(d < 1 for d in shape):
        raise InputError(f"--input \"{text}\": dimensions must be >= 1; {form}")
    if len(parts) == 1 or parts[1:] == ["float32"]:
        return shape, "float32", None
    if len(parts) == 3 and parts[1] == "int64" and parts[2].isdigit() and int(parts[2]) >= 1:
        return shape, "int64", int(parts[2])
    raise InputError(f"--input \"{text}\": {form}")


def _floating_outputs(output):
    if torch.is_tensor(output):
        return [output] if output.is_floating_point() else []
    if isinstance(output, dict):
        output = list(output.values())
    if isinstance(output, (list, tuple)):
        return [t for o in output for t in _floating_outputs(o)]
    return []


def _surrogate_loss(output):
    """A scalar output is the loss; otherwise the mean square of every
    floating-point output (any loss gives the same backward graph shape)."""
    if torch.is_tensor(output) and output.dim() == 0:
        return output
    tensors = _floating_outputs(output)
    if not tensors:
        raise InputError("--model: the factory's model returned no floating-point tensor to take a loss of")
    return sum(t.float().square().mean() for t in tensors)


def _load_callable(spec, option):
    """FILE.py:NAME -> (path, name, the callable), importing FILE."""
    path, _, name = spec.rpartition(":")
    if not path.endswith(".py") or not name.isidentifier():
        raise InputError(f"{option} \"{spec}\": expected FILE.py:NAME")
    if not os.path.isfile(path):
        raise InputError(f"{option}: {path}: no such file")
    module_spec = importlib.util.spec_from_file_location("sparsefuse_user_" + name, path)
    module = importlib.util.module_from_spec(module_spec)
    try:
        module_spec.loader.exec_module(module)
    except Exception as e:  # the user's file: any failure is bad input
        raise InputError(f"{option}: {path}: importing it raised {type(e).__name__}: {e}") from None
    if not callable(getattr(module, name, None)):
        raise InputError(f"{option}: {path} has no callable \"{name}\"")
    return path, name, getattr(module, name)


def _user_batches(spec, batch, device):
    """--data FILE.py:FUNC: FUNC(batch) returns an iterable of batches, each a
    tensor or a tuple/list of tensors (the forward's positional arguments).
    Every batch is checked here; returns an endless cycle over them and their count."""
    path, name, func = _load_callable(spec, "--data")
    try:
        source = list(func(batch))
    except Exception as e:
        raise InputError(f"--data: {path}:{name}({batch}) raised {type(e).__name__}: {e}") from None
    if not source:
        raise InputError(f"--data: {path}:{name}({batch}) yielded no batch")
    batches = []
    for k, item in enumerate(source):
        args = [item] if torch.is_tensor(item) else item
        if not isinstance(args, (list, tuple)) or not args or not all(torch.is_tensor(a) for a in args):
            raise InputError(f"--data: {path}:{name}: batch {k} is {type(item).__name__}; expected a tensor or "
                             "a tuple of tensors (the forward's positional arguments)")
        batches.append([a.to(device) for a in args])  # moved once, outside the timed iterations

    def cycle():
        while True:
            yield from batches
    return cycle(), len(batches)


def from_file(spec, inputs_text, batch, device, gen, data=None):
    if data and inputs_text:
        raise InputError("--input: not with --data (the data gives the inputs)")
    if not inputs_text and not data:
        raise InputError(f"--input: required with --model {spec} (per-sample shape, e.g. --input 3x32x32), "
                         "or --data FILE.py:FUNC")
    shapes = [parse_input(t) for t in inputs_text]
    path, factory, make = _load_callable(spec, "--model")
    try:
        model = make()
    except Exception as e:
        raise InputError(f"--model: {path}:{factory}() raised {type(e).__name__}: {e}") from None
    if not isinstance(model, nn.Module):
        raise InputError(f"--model: {path}:{factory}() returned {type(model).__name__}, expected a torch.nn.Module")
    model = model.to(device)
    if data:
        batches, count = _user_batches(data, batch, device)
        return Workload(factory, f"{os.path.basename(path)}:{factory}", model, "sgd",
                        f"{count} batches from {os.path.basename(data)}", batches=batches, loss=_surrogate_loss)

    def random_batch():
        tensors = []
        for shape, dtype, high in shapes:
            if dtype == "int64":
                tensors.append(torch.randint(0, high, [batch] + shape, generator=gen).to(device))
            else:
                tensors.append(torch.randn([batch] + shape, generator=gen).to(device))
        return tensors, _surrogate_loss
    described = ", ".join(inputs_text)
    return Workload(factory, f"{os.path.basename(path)}:{factory}", model, "sgd", f"inputs {described} per sample",
                    random_batch)


def resolve(args, device, gen):
    if args.model.endswith(".py") or ".py:" in args.model:
        if args.seq_len is not None or args.image_size is not None:
            raise InputError("--seq-len/--image-size: not for FILE.py:FACTORY models; give --input shapes")
        return from_file(args.model, args.input, args.batch, device, gen, args.data)
    if args.input or args.data:
        raise InputError(f"{'--input' if args.input else '--data'}: only for FILE.py:FACTORY models")
    return seed_or_torchvision(args.model, args.batch, args.seq_len, args.image_size, device, gen)
