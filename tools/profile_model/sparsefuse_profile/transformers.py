"""BERT (NVIDIA layout, SQuAD head), GPT-2 (LM head tied to wte) and ViT in
plain PyTorch, with exactly the parameter names, shapes and registration
order of the analytic traces (tools/gen_traces.py). Every layer takes a
`device` so inventories can be built on the meta device without memory.

Only the structure matters for timing: dropout is omitted (its cost is
small and it would make runs differ), and attention is the plain
softmax(QK^T/sqrt(d))V of these models.
"""
import math

import torch
from torch import nn
from torch.nn import functional as F


def _attention(q, k, v, heads, mask=None, causal=False):
    b, t, h = q.shape
    d = h // heads

    def split(x):
        return x.view(b, t, heads, d).transpose(1, 2)

    q, k, v = split(q), split(k), split(v)
    scores = q @ k.transpose(-1, -2) / math.sqrt(d)
    if causal:
        future = torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
    if mask is not None:
        scores = scores + mask
    context = scores.softmax(-1) @ v
    return context.transpose(1, 2).reshape(b, t, h)


class _SelfQKV(nn.Module):
    """Separate query/key/value Linears (BERT's attention.self, ViT's attention.attention)."""

    def __init__(self, hidden, device):
        super().__init__()
        self.query = nn.Linear(hidden, hidden, device=device)
        self.key = nn.Linear(hidden, hidden, device=device)
        self.value = nn.Linear(hidden, hidden, device=device)


# --------------------------------------------------------------------- BERT
class _BertEmbeddings(nn.Module):
    def __init__(self, vocab, hidden, max_pos, types, device):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden, device=device)
        self.position_embeddings = nn.Embedding(max_pos, hidden, device=device)
        self.token_type_embeddings = nn.Embedding(types, hidden, device=device)
        self.LayerNorm = nn.LayerNorm(hidden, eps=1e-12, device=device)

    def forward(self, ids, types):
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        x = self.word_embeddings(ids) + self.position_embeddings(pos) + self.token_type_embeddings(types)
        return self.LayerNorm(x)


class _DenseNorm(nn.Module):
    """BERT's *Output modules: dense, then LayerNorm over the residual sum."""

    def __init__(self, n_in, hidden, device):
        super().__init__()
        self.dense = nn.Linear(n_in, hidden, device=device)
        self.LayerNorm = nn.LayerNorm(hidden, eps=1e-12, device=device)

    def forward(self, x, residual):
        return self.LayerNorm(self.dense(x) + residual)


class _LinearActivation(nn.Module):
    """NVIDIA's LinearActivation: a Linear with GELU, named `dense_act`."""

    def __init__(self, n_in, n_out, device, activation=F.gelu):
        super().__init__()
        self.dense_act = nn.Linear(n_in, n_out, device=device)
        self.activation = activation

    def forward(self, x):
        return self.activation(self.dense_act(x))


class _BertAttention(nn.Module):
    def __init__(self, hidden, heads, device):
        super().__init__()
        self.self = _SelfQKV(hidden, device)
        self.output = _DenseNorm(hidden, hidden, device)
        self.heads = heads

    def forward(self, x, mask):
        s = self.self
        context = _attention(s.query(x), s.key(x), s.value(x), self.heads, mask=mask)
        return self.output(context, x)


class _BertLayer(nn.Module):
    def __init__(self, hidden, intermediate, heads, device):
        super().__init__()
        self.attention = _BertAttention(hidden, heads, device)
        self.intermediate = _LinearActivation(hidden, intermediate, device)
        self.output = _DenseNorm(intermediate, hidden, device)

    def forward(self, x, mask):
        a = self.attention(x, mask)
        return self.output(self.intermediate(a), a)


class _BertEncoder(nn.Module):
    def __init__(self, layers, hidden, intermediate, heads, device):
        super().__init__()
        self.layer = nn.ModuleList(_BertLayer(hidden, intermediate, heads, device) for _ in range(layers))

    def forward(self, x, mask):
        for layer in self.layer:
            x = layer(x, mask)
        return x


class _BertModel(nn.Module):
    def __init__(self, layers, hidden, intermediate, heads, device):
        super().__init__()
        self.embeddings = _BertEmbeddings(30528, hidden, 512, 2, device)
        self.encoder = _BertEncoder(layers, hidden, intermediate, heads, device)
        self.pooler = _LinearActivation(hidden, hidden, device, activation=torch.tanh)

    def forward(self, ids, types, mask):
        x = self.encoder(self.embeddings(ids, types), mask)
        pooled = self.pooler(x[:, 0])
        return x, pooled


class BertForQuestionAnswering(nn.Module):
    """SQuAD fine-tuning: the pooler runs in forward but its output is not
    used by the loss, so its parameters receive no gradient (as in the seed code)."""

    def __init__(self, layers, hidden, intermediate, heads, device=None):
        super().__init__()
        self.bert = _BertModel(layers, hidden, intermediate, heads, device)
        self.qa_outputs = nn.Linear(hidden, 2, device=device)

    def forward(self, ids, types, attention_mask):
        mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        sequence, _unused_pooled = self.bert(ids, types, mask)
        start, end = self.qa_outputs(sequence).split(1, dim=-1)
        return start.squeeze(-1), end.squeeze(-1)


def bert_base(device=None):
    return BertForQuestionAnswering(12, 768, 3072, 12, device)


def bert_large(device=None):
    return BertForQuestionAnswering(24, 1024, 4096, 16, device)


# -------------------------------------------------------------------- GPT-2
class Conv1D(nn.Module):
    """GPT-2's Conv1D: a Linear whose weight is stored [in, out]."""

    def __init__(self, n_in, n_out, device):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out, device=device))
        self.bias = nn.Parameter(torch.zeros(n_out, device=device))
        if self.weight.device.type != "meta":
            nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).view(*x.shape[:-1], -1)


class _GPT2Attention(nn.Module):
    def __init__(self, hidden, heads, device):
        super().__init__()
        self.c_attn = Conv1D(hidden, 3 * hidden, device)
        self.c_proj = Conv1D(hidden, hidden, device)
        self.heads = heads

    def forward(self, x):
        q, k, v = self.c_attn(x).split(x.shape[-1], dim=-1)
        return self.c_proj(_attention(q, k, v, self.heads, causal=True))


class _GPT2MLP(nn.Module):
    def __init__(self, hidden, device):
        super().__init__()
        self.c_fc = Conv1D(hidden, 4 * hidden, device)
        self.c_proj = Conv1D(4 * hidden, hidden, device)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class _GPT2Block(nn.Module):
    def __init__(self, hidden, heads, device):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden, device=device)
        self.attn = _GPT2Attention(hidden, heads, device)
        self.ln_2 = nn.LayerNorm(hidden, device=device)
        self.mlp = _GPT2MLP(hidden, device)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class _GPT2Model(nn.Module):
    def __init__(self, layers, hidden, heads, device):
        super().__init__()
        self.wte = nn.Embedding(50257, hidden, device=device)
        self.wpe = nn.Embedding(1024, hidden, device=device)
        self.h = nn.ModuleList(_GPT2Block(hidden, heads, device) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden, device=device)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        x = self.wte(ids) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.ln_f(x)


class GPT2LMHeadModel(nn.Module):
    """The LM head is a matmul with transformer.wte.weight (tied), so it is
    not a parameter of its own, and wte's gradient is complete only at the
    end of backward."""

    def __init__(self, layers, hidden, heads, device=None):
        super().__init__()
        self.transformer = _GPT2Model(layers, hidden, heads, device)

    def forward(self, ids):
        return F.linear(self.transformer(ids), self.transformer.wte.weight)


def gpt2_large(device=None):
    return GPT2LMHeadModel(36, 1280, 20, device)


# ---------------------------------------------------------------------- ViT
class _PatchEmbeddings(nn.Module):
    def __init__(self, hidden, patch, device):
        super().__init__()
        self.projection = nn.Conv2d(3, hidden, patch, stride=patch, device=device)

    def forward(self, images):
        return self.projection(images).flatten(2).transpose(1, 2)


class _ViTEmbeddings(nn.Module):
    def __init__(self, hidden, tokens, patch, device):
        super().__init__()
        # Registered before the patch embedding, as in Hugging Face's ViTEmbeddings.
        self.cls_token = nn.Parameter(torch.zeros(1, 1, hidden, device=device))
        self.position_embeddings = nn.Parameter(torch.zeros(1, tokens, hidden, device=device))
        self.patch_embeddings = _PatchEmbeddings(hidden, patch, device)

    def forward(self, images):
        x = self.patch_embeddings(images)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)
        return x + self.position_embeddings


class _ViTSelfAttention(nn.Module):
    def __init__(self, hidden, heads, device):
        super().__init__()
        self.attention = _SelfQKV(hidden, device)
        self.output = _Dense(hidden, hidden, device)
        self.heads = heads

    def forward(self, x):
        a = self.attention
        return self.output(_attention(a.query(x), a.key(x), a.value(x), self.heads))


class _Dense(nn.Module):
    def __init__(self, n_in, n_out, device):
        super().__init__()
        self.dense = nn.Linear(n_in, n_out, device=device)

    def forward(self, x):
        return self.dense(x)


class _ViTLayer(nn.Module):
    """Registration order of Hugging Face's ViTLayer: attention, intermediate,
    output, then layernorm_before and layernorm_after (pre-norm in forward)."""

    def __init__(self, hidden, intermediate, heads, device):
        super().__init__()
        self.attention = _ViTSelfAttention(hidden, heads, device)
        self.intermediate = _Dense(hidden, intermediate, device)
        self.output = _Dense(intermediate, hidden, device)
        self.layernorm_before = nn.LayerNorm(hidden, eps=1e-12, device=device)
        self.layernorm_after = nn.LayerNorm(hidden, eps=1e-12, device=device)

    def forward(self, x):
        x = x + self.attention(self.layernorm_before(x))
        return x + self.output(F.gelu(self.intermediate(self.layernorm_after(x))))


class _ViTEncoder(nn.Module):
    def __init__(self, layers, hidden, intermediate, heads, device):
        super().__init__()
        self.layer = nn.ModuleList(_ViTLayer(hidden, intermediate, heads, device) for _ in range(layers))

    def forward(self, x):
        for layer in self.layer:
            x = layer(x)
        return x


class _ViTModel(nn.Module):
    def __init__(self, layers, hidden, intermediate, heads, tokens, patch, device):
        super().__init__()
        self.embeddings = _ViTEmbeddings(hidden, tokens, patch, device)
        self.encoder = _ViTEncoder(layers, hidden, intermediate, heads, device)
        self.layernorm = nn.LayerNorm(hidden, eps=1e-12, device=device)

    def forward(self, images):
        return self.layernorm(self.encoder(self.embeddings(images)))


class ViTForImageClassification(nn.Module):
    def __init__(self, layers, hidden, intermediate, heads, image, patch, classes, device=None):
        super().__init__()
        tokens = (image // patch) ** 2 + 1
        self.vit = _ViTModel(layers, hidden, intermediate, heads, tokens, patch, device)
        self.classifier = nn.Linear(hidden, classes, device=device)

    def forward(self, images):
        return self.classifier(self.vit(images)[:, 0])


def vit_large(image=224, device=None):
    return ViTForImageClassification(24, 1024, 4096, 16, image, 16, 1000, device)
