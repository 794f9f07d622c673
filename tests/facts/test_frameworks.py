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


def test_hf_training_forward_turns_the_cache_off_and_warns() -> None:
    """transformers 5.23: use_cache=True in the config, checkpointing on, train mode: the model's
    forward logs the warning and returns no cache; eval mode builds one."""
    import io
    import logging

    transformers = __import__("pytest").importorskip("transformers")
    from transformers.utils import logging as hf_logging

    config = transformers.LlamaConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64, use_cache=True,
    )  # fmt: skip
    model = transformers.LlamaForCausalLM(config)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # 5.23 renames the call; it still works
        model.gradient_checkpointing_enable()
    model.train()
    hf_logging.warning_once.cache_clear()  # "once" per process: another test may have logged it
    log = io.StringIO()
    handler = logging.StreamHandler(log)
    hf_logging.get_logger("transformers").addHandler(handler)
    # demos/hf.py (and other tests) quiet transformers to errors for the process: hear warnings here
    verbosity = hf_logging.get_verbosity()  # type: ignore[no-untyped-call]
    hf_logging.set_verbosity_warning()  # type: ignore[no-untyped-call]
    try:
        ids = torch.randint(0, 64, (2, 8))
        out = model(ids, labels=ids)
    finally:
        hf_logging.set_verbosity(verbosity)  # type: ignore[no-untyped-call]
        hf_logging.get_logger("transformers").removeHandler(handler)
    assert out.past_key_values is None
    assert "`use_cache=True` is incompatible with gradient checkpointing. Setting `use_cache=False`." in log.getvalue()
    out.loss.backward()
    assert model.model.layers[0].mlp.up_proj.weight.grad is not None
    model.eval()
    with torch.no_grad():
        assert model(ids).past_key_values is not None
