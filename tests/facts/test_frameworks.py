"""Fact tests for questions/frameworks.yaml (CPU build of PyTorch, small tensors).

transformers, Lightning, DeepSpeed and Megatron are not installed; these tests show the
PyTorch behaviour that the frameworks' code relies on.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class AdapterBlock(nn.Module):
    """A frozen linear layer with a small trainable low-rank adapter (LoRA-style)."""

    def __init__(self, d: int = 16, r: int = 2) -> None:
        super().__init__()
        self.base = nn.Linear(d, d).requires_grad_(False)
        self.down = nn.Linear(d, r, bias=False)
        self.up = nn.Linear(r, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + self.up(self.down(x))


def test_input_require_grads_hook_restores_adapter_grads_under_reentrant() -> None:
    torch.manual_seed(0)
    emb = nn.Embedding(10, 16).requires_grad_(False)
    block = AdapterBlock()
    ids = torch.tensor([[1, 2, 3, 4]])

    # Without the hook: the frozen embedding's output does not require grad, so a reentrant
    # checkpoint warns and the adapter inside it receives no gradient.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = checkpoint(block, emb(ids), use_reentrant=True)
    assert any("None of the inputs have requires_grad=True" in str(w.message) for w in caught)
    assert not out.requires_grad and block.down.weight.grad is None

    # The same kind of hook as transformers' enable_input_require_grads(): a forward hook on
    # the input embeddings that marks their output as requiring grad.
    def make_inputs_require_grads(module, inputs, output):  # type: ignore[no-untyped-def]
        output.requires_grad_(True)

    handle = emb.register_forward_hook(make_inputs_require_grads)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "None of the inputs" warning any more
        out = checkpoint(block, emb(ids), use_reentrant=True)
    out.sum().backward()
    handle.remove()
    assert block.down.weight.grad is not None and block.up.weight.grad is not None
    # the embedding itself stays frozen: only its output is marked
    assert emb.weight.grad is None and not emb.weight.requires_grad
