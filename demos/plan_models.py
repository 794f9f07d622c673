"""The models ``python -m demos.plan`` plans for, built from their configs (nothing downloaded).

Each preset builds a model, names its stack of layers (the checkpointable units) by the
expression a user's code would write (``model.transformer.h``), and gives the training
loss of a batch of token ids. Built under ``FakeTensorMode`` nothing is allocated.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from demos.models import TransformerConfig, TransformerLM, build_net


@dataclass(frozen=True)
class Preset:
    """A model to plan for: its shape, the batch it is planned at by default, and its origin."""

    name: str
    family: str  # "demo", "hf", "llama", "torch-test"
    layers: int
    width: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    max_seq: int
    batch: int
    seq: int
    dropout: float
    about: str
    optimizer: str = "adamw"
    tied: bool = True  # the output projection shares the token embedding


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "transformer",
            "demo",
            4,
            128,
            4,
            4,
            512,
            512,
            256,
            4,
            256,
            0.0,
            "the checkpoint demo's own GPT-style transformer (4 layers, width 128)",
        ),
        Preset(
            "hf-gpt2",
            "hf",
            12,
            768,
            12,
            12,
            3072,
            50257,
            1024,
            8,
            1024,
            0.1,
            "Hugging Face GPT2LMHeadModel(GPT2Config()), 124M parameters (transformers needed)",
        ),
        Preset(
            "gpt2-medium",
            "hf",
            24,
            1024,
            16,
            16,
            4096,
            50257,
            1024,
            8,
            1024,
            0.1,
            "Hugging Face GPT-2 medium shape, 355M parameters (transformers needed)",
        ),
        Preset(
            "gpt2-large",
            "hf",
            36,
            1280,
            20,
            20,
            5120,
            50257,
            1024,
            8,
            1024,
            0.1,
            "Hugging Face GPT-2 large shape, 774M parameters (transformers needed)",
        ),
        Preset(
            "llama-1b",
            "llama",
            16,
            2048,
            32,
            8,
            8192,
            128256,
            131072,
            4,
            2048,
            0.0,
            "a Llama-style decoder at Llama 3.2 1B's shape (RMSNorm, SwiGLU, GQA, rotary)",
        ),
        Preset(
            "llama-7b",
            "llama",
            32,
            4096,
            32,
            32,
            11008,
            32000,
            4096,
            1,
            4096,
            0.0,
            "a Llama-style decoder at Llama 2 7B's shape",
            tied=False,
        ),
        Preset(
            "torch-sac-test",
            "torch-test",
            4,
            768,
            12,
            12,
            3072,
            8192,
            1024,
            8,
            1024,
            0.1,
            "PyTorch's planner test model (test_sac_ilp.py: common_dtensor.Transformer, "
            "4 layers, dim 768, vocab 8,192, dropout 0.1; loss output.sum(), Adam)",
            "adam",
        ),
    )
}


@dataclass
class Built:
    """A built model: its layers, where user code finds them, and its loss."""

    model: nn.Module
    layers: list[nn.Module]
    layers_expr: str
    loss: Callable[[torch.Tensor], torch.Tensor]
    source: str
    hf: bool = False
    #: The shape of an output the training loop still holds from the previous step while the
    #: next forward runs (``output = model(inp)`` in a loop), or None.
    loop_output: tuple[int, ...] | None = None


def needs_transformers(preset: Preset) -> bool:
    return preset.family == "hf"


def transformers_missing() -> bool:
    return importlib.util.find_spec("transformers") is None


def build(preset: Preset, layers: int | None = None, width: int | None = None, vocab: int | None = None) -> Built:
    """Build ``preset`` (optionally at another depth, width or vocabulary; heads are kept)."""
    n = layers if layers is not None else preset.layers
    d = width if width is not None else preset.width
    v = vocab if vocab is not None else preset.vocab
    ffn = preset.ffn * d // preset.width
    if preset.family == "demo":
        net = build_net("transformer", n, d, preset.heads, preset.max_seq)

        def demo_loss(ids: torch.Tensor) -> torch.Tensor:
            return net.loss(net.body(net.embed(ids)), ids)

        return Built(net, list(net.body), "model.body", demo_loss, "demos.models (kind transformer)")
    if preset.family == "hf":
        from demos.hf import build_gpt2, gpt2_loss

        # CUDA's fused attention (demos.hf): HF's sdpa path with dropout takes the CPU's math kernel
        model = build_gpt2(n, d, preset.heads, preset.max_seq, kernels="cuda")
        if v != preset.vocab:
            model.resize_token_embeddings(v)  # type: ignore[operator]

        def hf_loss(ids: torch.Tensor) -> torch.Tensor:
            return gpt2_loss(model, ids)

        blocks = model.transformer.h  # type: ignore[union-attr]
        assert isinstance(blocks, nn.ModuleList)
        return Built(model, list(blocks), "model.transformer.h", hf_loss, "transformers GPT2LMHeadModel", hf=True)
    if preset.family == "llama":
        cfg = TransformerConfig(
            preset.name, v, n, d, preset.heads, preset.kv_heads, ffn, "llama", preset.max_seq, preset.tied
        )
        lm = TransformerLM(cfg)
        return Built(lm, list(lm.blocks), "model.blocks", lm, "demos.models.TransformerLM (llama style)")
    if preset.family == "torch-test":
        model, source = _sac_test_model(n, d, preset.heads, v, preset.max_seq, preset.dropout)

        def sum_loss(ids: torch.Tensor) -> torch.Tensor:
            # the test's loop: ``output = model(inp); output.sum().backward()`` keeps the logits alive
            output = model(ids)
            loss: torch.Tensor = output.sum()
            setattr(loss, "_logits", output)  # noqa: B010 - as the loop's variable does
            return loss

        blocks = model.layers
        assert isinstance(blocks, nn.ModuleList)
        built = Built(model, list(blocks), "model.layers", sum_loss, source)
        built.loop_output = (-1, -1, v)  # batch and sequence filled in by the planner
        return built
    raise ValueError(f"unknown family {preset.family!r}")


def _sac_test_model(layers: int, dim: int, heads: int, vocab: int, seq: int, dropout: float) -> tuple[nn.Module, str]:
    """PyTorch's own ``common_dtensor.Transformer`` when importable, else the same architecture here.

    torch's module imports ``torch.testing._internal.common_utils``, which needs the
    ``expecttest`` package; without it the rebuild below (same modules, shapes and ops) is used.
    """
    try:
        from torch.testing._internal.distributed._tensor.common_dtensor import ModelArgs, Transformer
    except ImportError:
        args = _SacTestArgs(layers, heads, vocab, seq, dim, dropout)
        return SacTestTransformer(args), "demos.plan_models.SacTestTransformer (common_dtensor's architecture)"
    margs = ModelArgs(n_layers=layers, n_heads=heads, vocab_size=vocab, max_seq_len=seq, dim=dim, dropout_p=dropout)
    return Transformer(margs), "torch.testing._internal.distributed._tensor.common_dtensor.Transformer"


# -- common_dtensor's test Transformer, rebuilt for environments without expecttest ---------


@dataclass(frozen=True)
class _SacTestArgs:
    n_layers: int
    n_heads: int
    vocab_size: int
    max_seq_len: int
    dim: int
    dropout_p: float


class _SacAttention(nn.Module):
    def __init__(self, a: _SacTestArgs) -> None:
        super().__init__()
        self.n_heads = a.n_heads
        self.head_dim = a.dim // a.n_heads
        self.dropout_p = a.dropout_p
        self.wq = nn.Linear(a.dim, a.dim, bias=False)
        self.wk = nn.Linear(a.dim, a.dim, bias=False)
        self.wv = nn.Linear(a.dim, a.dim, bias=False)
        self.wo = nn.Linear(a.dim, a.dim, bias=False)
        self.resid_dropout = nn.Dropout(a.dropout_p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q, k, v = (w(x).view(b, s, self.n_heads, self.head_dim).transpose(1, 2) for w in (self.wq, self.wk, self.wv))
        p = self.dropout_p if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, None, p, True)
        out: torch.Tensor = self.resid_dropout(self.wo(y.transpose(1, 2).reshape(b, s, -1)))
        return out


class _SacFeedForward(nn.Module):
    def __init__(self, dim: int, hidden: int, dropout: float) -> None:
        super().__init__()
        self.w1 = nn.Linear(dim, hidden)
        self.gelu = nn.GELU()
        self.w2 = nn.Linear(hidden, dim)
        self.resid_dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.resid_dropout(self.w2(self.gelu(self.w1(x))))
        return out


class SacTestBlock(nn.Module):
    """One block of common_dtensor's test Transformer: layer norms, attention and feed-forward."""

    def __init__(self, a: _SacTestArgs) -> None:
        super().__init__()
        self.attention_norm = nn.LayerNorm(a.dim)
        self.attention = _SacAttention(a)
        self.ffn_norm = nn.LayerNorm(a.dim)
        self.feed_forward = _SacFeedForward(a.dim, 4 * a.dim, a.dropout_p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x + self.attention(self.attention_norm(x))
        out: torch.Tensor = h + self.feed_forward(self.ffn_norm(h))
        return out


class SacTestTransformer(nn.Module):
    """Token and position embeddings, dropout, blocks, LayerNorm, a tied output projection."""

    def __init__(self, a: _SacTestArgs) -> None:
        super().__init__()
        self.tok_embeddings = nn.Embedding(a.vocab_size, a.dim)
        self.pos_embeddings = nn.Embedding(a.max_seq_len, a.dim)
        self.dropout = nn.Dropout(a.dropout_p)
        self.layers = nn.ModuleList(SacTestBlock(a) for _ in range(a.n_layers))
        self.norm = nn.LayerNorm(a.dim)
        self.output = nn.Linear(a.dim, a.vocab_size, bias=False)
        self.output.weight = self.tok_embeddings.weight

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.tok_embeddings(tokens) + self.pos_embeddings(torch.arange(tokens.shape[1], device=tokens.device))
        h = self.dropout(h)
        for layer in self.layers:
            h = layer(h)
        out: torch.Tensor = self.output(self.norm(h)).float()
        return out


def scaled_shape(preset: Preset, factor: int) -> tuple[int, int, int, int]:
    """(width, vocab, seq, batch) divided by ``factor``, keeping heads and the ratios of the layer's shapes."""
    head_dim = preset.width // preset.heads
    width = max(preset.heads * max(1, head_dim // factor), preset.heads)
    vocab = max(64, math.ceil(preset.vocab / factor))
    seq = max(16, preset.seq // factor)
    return width, vocab, seq, preset.batch
