"""Hugging Face's GPT-2 (``transformers``, random weights, nothing downloaded).

``transformers`` is imported inside these functions only, so the rest of ``demos`` (and
the bot) never needs it. Its own ``gradient_checkpointing_enable()`` is the ``block``
strategy: the switch people flip when they fine-tune.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from demos.strategies import PhaseSink, _marking

#: Strategies the Hugging Face model runs (its layers take keyword arguments).
HF_STRATEGIES = ("none", "block", "offload")
HF_VOCAB = 50257


def build_gpt2(
    layers: int | None = None,
    width: int | None = None,
    heads: int | None = None,
    positions: int = 1024,
    kernels: str = "cpu",
) -> nn.Module:
    """``GPT2LMHeadModel(GPT2Config(...))``: the defaults (GPT-2 small) unless sized.

    ``kernels="cuda"``: attention traced as CUDA's fused kernels allocate it (for estimates).
    """
    from transformers import GPT2Config, GPT2LMHeadModel
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]

    sized: dict[str, Any] = {"n_positions": max(positions, 1024)}
    if layers is not None:
        sized["n_layer"] = layers
    if width is not None:
        sized["n_embd"] = width
    if heads is not None:
        sized["n_head"] = heads
    config = GPT2Config(**sized)
    if kernels == "cuda":
        _register_cuda_like_attention()
        config._attn_implementation = CUDA_LIKE_ATTENTION
    else:
        config._attn_implementation = "sdpa"
    model: nn.Module = GPT2LMHeadModel(config)
    return model


def set_checkpointing(model: nn.Module, on: bool, sink: PhaseSink | None = None) -> None:
    """Flip the model's own gradient checkpointing; ``sink`` hears of each recomputation."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # 5.x: an alias of activation_checkpointing_enable
        if on:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})  # type: ignore[operator]
        else:
            model.gradient_checkpointing_disable()  # type: ignore[operator]
    if on and sink is not None:

        def marked(fn: Callable[..., Any], *args: Any) -> Any:
            return checkpoint(_marking(fn, sink), *args, use_reentrant=False)

        for module in model.modules():
            if getattr(module, "gradient_checkpointing", False):
                setattr(module, "_gradient_checkpointing_func", marked)  # noqa: B010


def gpt2_loss(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """The model's own next-token loss of ``ids`` (``labels=ids``), as a training loop gets it.

    A loop writes ``outputs = model(...); outputs.loss.backward()``, so ``outputs`` and
    its logits (batch x tokens x vocabulary floats) stay alive through backward; the
    returned loss holds the logits the same way until the caller drops it. It holds the
    logits, not ``outputs``: ``outputs.loss`` is the loss itself, and that reference cycle
    kept the logits alive until garbage collection ran.
    """
    outputs = model(input_ids=ids, labels=ids, use_cache=False)
    loss: torch.Tensor = outputs.loss
    setattr(loss, "_logits", outputs.logits)  # noqa: B010 - as the loop's variable does
    return loss


#: The attention implementation registered for ``kernels="cuda"`` (see :func:`build_gpt2`).
CUDA_LIKE_ATTENTION = "demos_cuda_like_sdpa"


def _register_cuda_like_attention() -> None:
    """Attention as CUDA's fused kernels allocate it, for a CPU trace.

    On the CPU, ``scaled_dot_product_attention`` with dropout falls back to the math path
    and keeps the s x s attention weights; CUDA's flash and memory-efficient kernels apply
    dropout inside the kernel and keep only the output and a log-sum-exp per row. The fused
    CPU kernel without dropout allocates what CUDA's kernels allocate.
    """
    from transformers import AttentionInterface
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    def cuda_like(
        module: nn.Module,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        attention_mask: torch.Tensor | None,
        dropout: float = 0.0,  # noqa: ARG001 - transformers' signature; the demo runs without dropout
        **kwargs: Any,
    ) -> Any:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=0.0, **kwargs)

    AttentionInterface.register(CUDA_LIKE_ATTENTION, cuda_like)
