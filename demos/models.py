"""Small models for the demos, built in code (no weights are downloaded).

- ``blocks``: residual transformer-style feed-forward blocks
  (LayerNorm, d -> 4d, GELU, 4d -> d, dropout, plus the residual).
- ``chain``: N layers of Linear + tanh, the setting of Chen et al. (2016).
- ``transformer``: a GPT-style decoder (token and position embeddings, pre-norm blocks of
  causal attention through ``scaled_dot_product_attention`` and a GELU MLP, a final norm
  and a next-token cross-entropy head), no dropout. The blocks are the checkpointed stack.
- :class:`TransformerLM`: a decoder-only language model (GPT-2 or Llama style) for the
  estimate presets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

MODEL_KINDS = ("blocks", "chain", "transformer", "hf-gpt2")
#: Models whose input is token ids (batch x tokens) rather than a tokens x width tensor.
TOKEN_MODELS = frozenset({"transformer", "hf-gpt2"})
DEMO_VOCAB = 512


class FeedForwardBlock(nn.Module):
    """x + Dropout(W2 GELU(W1 LayerNorm(x)))."""

    def __init__(self, width: int, dropout: float = 0.1) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = x + self.dropout(self.down(F.gelu(self.up(self.norm(x)))))
        return out


class ChainLayer(nn.Module):
    """tanh(W x + b)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.linear = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.linear(x))


def build_model(kind: str, layers: int, width: int, heads: int = 4) -> nn.Sequential:
    """A stack of ``layers`` layers of the given kind (initialised from the current RNG)."""
    if kind == "blocks":
        return nn.Sequential(*(FeedForwardBlock(width) for _ in range(layers)))
    if kind == "chain":
        return nn.Sequential(*(ChainLayer(width) for _ in range(layers)))
    if kind == "transformer":
        cfg = demo_transformer_config(layers, width, heads, 1 << 20)
        return nn.Sequential(*(DecoderBlock(cfg) for _ in range(layers)))
    raise ValueError(f"unknown model {kind!r}")


def demo_transformer_config(layers: int, width: int, heads: int, tokens: int) -> TransformerConfig:
    """The ``transformer`` demo's architecture: GPT-2 style at the requested size."""
    return TransformerConfig("demo", DEMO_VOCAB, layers, width, heads, heads, 4 * width, "gpt2", tokens, False)


class DemoNet(nn.Module):
    """A checkpointable ``body`` between an optional ``stem`` and a loss ``head``.

    ``blocks`` and ``chain`` have no stem and the loss ``mean(out**2)``; ``transformer``
    embeds token ids and ends in a next-token cross-entropy. Strategies wrap the body only.
    """

    def __init__(self, kind: str, body: nn.Sequential, stem: nn.Module | None, head: nn.Module | None) -> None:
        super().__init__()
        self.kind = kind
        self.body = body
        self.stem = stem
        self.head = head

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return x if self.stem is None else self.stem(x)

    def loss(self, hidden: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        if self.head is None:
            return hidden.pow(2).mean()
        logits: torch.Tensor = self.head(hidden)
        return F.cross_entropy(logits[:, :-1].flatten(0, 1), x[:, 1:].flatten())


class TokenStem(nn.Module):
    """Token plus learned position embeddings."""

    def __init__(self, vocab: int, width: int, positions: int) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(positions, width)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(ids.shape[1], device=ids.device)
        out: torch.Tensor = self.tokens(ids) + self.positions(pos)
        return out


def build_net(kind: str, layers: int, width: int, heads: int = 4, tokens: int = 1024) -> DemoNet:
    """The demo's whole model of ``kind`` (not ``hf-gpt2``, see :mod:`demos.hf`)."""
    body = build_model(kind, layers, width, heads)
    if kind != "transformer":
        return DemoNet(kind, body, None, None)
    stem = TokenStem(DEMO_VOCAB, width, tokens)
    head = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, DEMO_VOCAB, bias=False))
    return DemoNet(kind, body, stem, head)


def demo_input(
    kind: str, tokens: int, width: int, batch: int, seed: int, device: torch.device | None = None
) -> torch.Tensor:
    """The demo's input batch: token ids for token models, else a tokens x width tensor."""
    gen = torch.Generator().manual_seed(seed)
    if kind in TOKEN_MODELS:
        x = torch.randint(0, DEMO_VOCAB, (batch, tokens), generator=gen)
    else:
        x = torch.randn(tokens, width, generator=gen)
    return x if device is None else x.to(device)


# -- decoder-only language models for the estimate -----------------------------------


@dataclass(frozen=True)
class TransformerConfig:
    """Architecture of a decoder-only transformer language model."""

    name: str
    vocab: int
    layers: int
    width: int
    heads: int
    kv_heads: int
    ffn: int
    style: str  # "gpt2" (LayerNorm, GELU MLP, learned positions) or "llama"
    max_seq: int
    tied_embeddings: bool
    source: str = "demos"  # "demos": TransformerLM below; "hf": transformers' GPT2LMHeadModel


PRESETS: dict[str, TransformerConfig] = {
    "gpt2-small": TransformerConfig("gpt2-small", 50257, 12, 768, 12, 12, 3072, "gpt2", 1024, True),
    "gpt2-medium": TransformerConfig("gpt2-medium", 50257, 24, 1024, 16, 16, 4096, "gpt2", 1024, True),
    "gpt2-large": TransformerConfig("gpt2-large", 50257, 36, 1280, 20, 20, 5120, "gpt2", 1024, True),
    # Llama 3.2 1B: RMSNorm, SwiGLU, grouped-query attention, rotary positions.
    "llama-1b": TransformerConfig("llama-1b", 128256, 16, 2048, 32, 8, 8192, "llama", 131072, True),
    # Hugging Face's GPT2LMHeadModel(GPT2Config()): GPT-2 small with dropout 0.1 (transformers needed).
    "hf-gpt2": TransformerConfig("hf-gpt2", 50257, 12, 768, 12, 12, 3072, "gpt2", 1024, True, "hf"),
}


class RMSNorm(nn.Module):
    """Root-mean-square layer norm (Llama's), with a learned scale."""

    def __init__(self, width: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class Attention(nn.Module):
    """Causal self-attention, GPT-2's (biases) or Llama's (rotary, grouped key/value heads)."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.heads = cfg.heads
        self.kv_heads = cfg.kv_heads
        self.head_dim = cfg.width // cfg.heads
        bias = cfg.style == "gpt2"
        self.q = nn.Linear(cfg.width, cfg.heads * self.head_dim, bias=bias)
        self.kv = nn.Linear(cfg.width, 2 * cfg.kv_heads * self.head_dim, bias=bias)
        self.out = nn.Linear(cfg.heads * self.head_dim, cfg.width, bias=bias)
        self.rotary = cfg.style == "llama"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q = self.q(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k, v = self.kv(x).view(b, s, 2, self.kv_heads, self.head_dim).unbind(2)
        k, v = k.transpose(1, 2), v.transpose(1, 2)
        if self.rotary:
            pos = torch.arange(s, device=x.device, dtype=x.dtype)
            inv = 1.0 / (
                500000.0 ** (torch.arange(0, self.head_dim, 2, device=x.device, dtype=x.dtype) / self.head_dim)
            )
            ang = torch.outer(pos, inv).repeat(1, 2)
            q, k = _rotate(q, ang.cos(), ang.sin()), _rotate(k, ang.cos(), ang.sin())
        if self.kv_heads != self.heads:
            rep = self.heads // self.kv_heads
            k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        out: torch.Tensor = self.out(y.transpose(1, 2).reshape(b, s, -1))
        return out


class MLP(nn.Module):
    """The block's feed-forward: GPT-2's GELU MLP or Llama's gated SwiGLU."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.gated = cfg.style == "llama"
        bias = not self.gated
        self.up = nn.Linear(cfg.width, (2 if self.gated else 1) * cfg.ffn, bias=bias)
        self.down = nn.Linear(cfg.ffn, cfg.width, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.up(x)
        if self.gated:
            gate, up = h.chunk(2, dim=-1)
            h = F.silu(gate) * up
        else:
            h = F.gelu(h, approximate="tanh")
        out: torch.Tensor = self.down(h)
        return out


class DecoderBlock(nn.Module):
    """One pre-norm transformer block: attention, then the MLP, each with its residual."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        norm: type[nn.Module] = RMSNorm if cfg.style == "llama" else nn.LayerNorm
        self.norm1 = norm(cfg.width)
        self.attn = Attention(cfg)
        self.norm2 = norm(cfg.width)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        out: torch.Tensor = x + self.mlp(self.norm2(x))
        return out


class TransformerLM(nn.Module):
    """Token ids -> mean cross-entropy of next-token prediction."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab, cfg.width)
        self.pos = nn.Embedding(cfg.max_seq, cfg.width) if cfg.style == "gpt2" else None
        self.blocks = nn.ModuleList(DecoderBlock(cfg) for _ in range(cfg.layers))
        self.norm: nn.Module = RMSNorm(cfg.width) if cfg.style == "llama" else nn.LayerNorm(cfg.width)
        self.head = nn.Linear(cfg.width, cfg.vocab, bias=False)
        if cfg.tied_embeddings:
            self.head.weight = self.embed.weight

    def forward(self, ids: torch.Tensor, checkpoint_blocks: bool = False) -> torch.Tensor:
        from torch.utils.checkpoint import checkpoint

        x = self.embed(ids)
        if self.pos is not None:
            x = x + self.pos(torch.arange(ids.shape[1], device=ids.device))
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False) if checkpoint_blocks else block(x)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten())


def parameter_bytes(model: nn.Module) -> int:
    """Bytes of the model's distinct parameters (tied weights counted once)."""
    seen: set[int] = set()
    total = 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel() * p.element_size()
    return total


def segments_for(layers: int) -> int:
    """round(sqrt(N)) segments, at least one."""
    return max(1, round(math.sqrt(layers)))
