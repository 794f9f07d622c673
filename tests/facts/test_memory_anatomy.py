"""Fact tests for questions/memory-anatomy.yaml (torch 2.13, CPU, small tensors).

Activation memory is measured as the bytes of tensors autograd saves for backward,
seen through torch.autograd.graph.saved_tensors_hooks, one count per storage (data_ptr).
"""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from tests.facts.support import LiveBytes, SavedMeter, held_output_bytes, make_stack, param_ptrs, run_chain


def nbytes(ts: list[torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in ts)


def test_checkpointing_leaves_parameter_gradient_and_optimizer_memory_unchanged() -> None:
    sizes = {}
    for ckpt in (False, True):
        model = make_stack()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        x = torch.randn(8, 16, 32, generator=torch.Generator().manual_seed(1))
        with SavedMeter(ignore=param_ptrs(model)) as m:
            out = run_chain(model, x, ckpt)
            activations = m.live
            out.square().mean().backward()
        opt.step()
        params = list(model.parameters())
        state = [v for p in params for v in opt.state[p].values() if v.dim() > 0]
        sizes[ckpt] = (activations, nbytes(params), nbytes([p.grad for p in params]), nbytes(state))
    (act0, p0, g0, s0), (act1, p1, g1, s1) = sizes[False], sizes[True]
    # activations saved for backward shrink ninefold (each block keeps its input, not its
    # input plus two 4x-wide hidden tensors) ...
    assert act0 == 9 * act1
    assert (p0, g0, s0) == (p1, g1, s1)  # ... weights, gradients and AdamW state do not
    assert g0 == p0 and s0 == 2 * p0


def test_adamw_keeps_two_fp32_values_per_parameter() -> None:
    model = make_stack(n=1)
    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters())
    model(torch.randn(2, 32)).sum().backward()
    opt.step()
    per_param = {k: v for p in model.parameters() for k, v in opt.state[p].items() if v.dim() > 0}
    assert sorted(per_param) == ["exp_avg", "exp_avg_sq"]  # momentum and variance
    state_bytes = sum(
        v.numel() * v.element_size() for p in model.parameters() for v in opt.state[p].values() if v.dim() > 0
    )
    assert state_bytes == 8 * n_params


def test_sgd_momentum_keeps_one_fp32_value_per_parameter() -> None:
    model = make_stack(n=1)
    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.randn(2, 32)).sum().backward()
    opt.step()
    state = [v for p in model.parameters() for v in opt.state[p].values()]
    assert sum(v.numel() * v.element_size() for v in state) == 4 * n_params


def activation_bytes(model: nn.Module, x: torch.Tensor) -> int:
    with SavedMeter(ignore=param_ptrs(model)) as m:
        out = model(x)
        live = m.live
    del out
    return live


def test_saved_activation_bytes_grow_linearly_with_batch_and_sequence() -> None:
    model = make_stack(n=2)
    base = activation_bytes(model, torch.randn(2, 16, 32))
    assert activation_bytes(model, torch.randn(4, 16, 32)) == 2 * base  # batch x2
    assert activation_bytes(model, torch.randn(2, 32, 32)) == 2 * base  # sequence x2
    assert activation_bytes(model, torch.randn(8, 64, 32)) == 16 * base
    # the global batch does not count: four accumulated micro-batches of 2 hold, at their
    # highest, what one micro-batch holds, a quarter of what a batch of 8 holds in one go
    whole = torch.randn(8, 16, 32)
    with SavedMeter(ignore=param_ptrs(model)) as m:
        model(whole).square().mean().backward()
    at_once = m.peak
    with SavedMeter(ignore=param_ptrs(model)) as m:
        for micro in (c.clone() for c in whole.chunk(4)):  # own storage, as a loader's batch has
            (model(micro).square().mean() / 4).backward()
        accumulated = m.peak
    # (each peak also holds the model output that the loss's square keeps)
    micro_output = 2 * 16 * 32 * 4
    assert accumulated == base + micro_output and at_once == 4 * accumulated
    # nor does the optimizer: its state lives beside the activations, not in them
    for opt in (torch.optim.SGD(model.parameters(), lr=0.1), torch.optim.AdamW(model.parameters())):
        opt.step()  # state created (AdamW's two fp32 moments), activations of the next step the same
        assert activation_bytes(model, torch.randn(2, 16, 32)) == base


class UnfusedAttention(nn.Module):
    def __init__(self, h: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(h, 3 * h)
        self.proj = nn.Linear(h, h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(h // self.heads)
        probs = scores.softmax(dim=-1)  # (b, heads, s, s)
        return self.proj((probs @ v).transpose(1, 2).reshape(b, s, h))


def test_unfused_attention_saves_a_tensor_quadratic_in_sequence_length() -> None:
    torch.manual_seed(0)
    b, h, a = 2, 32, 4
    attn = UnfusedAttention(h, a)
    f = {s: activation_bytes(attn, torch.randn(b, s, h)) for s in (16, 32)}
    # f(s) = linear(s) + quadratic(s); f(2s) - 2 f(s) = 2 * quadratic(s)
    quadratic = (f[32] - 2 * f[16]) // 2
    assert quadratic == b * a * 16 * 16 * 4  # one fp32 (b, a, s, s) softmax output
    assert f[32] > 2 * f[16]
    # and that s x s tensor is the softmax's output, kept once for softmax's backward and
    # for the multiply by V (one storage, two saves)
    square: list[tuple[str, int]] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        if t.shape[-2:] == (16, 16):
            square.append((type(t.grad_fn).__name__, t.untyped_storage().data_ptr()))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        attn(torch.randn(b, 16, h))
    assert len(square) == 2 and len({ptr for _, ptr in square}) == 1
    assert square[0][0].startswith(("SoftmaxBackward", "SafeSoftmaxBackward"))


def test_checkpointed_layer_keeps_only_its_input() -> None:
    model = make_stack(n=3)
    b, s, h = 4, 16, 32
    unit = b * s * h * 4  # one fp32 (b, s, h) tensor
    x = torch.randn(b, s, h)
    input_ptrs: list[int] = []

    def run() -> torch.Tensor:
        t = x
        for layer in model:
            input_ptrs.append(t.untyped_storage().data_ptr())
            t = checkpoint(layer, t, use_reentrant=False)
        return t

    with SavedMeter(ignore=param_ptrs(model)) as m:
        out = run()
        assert m.live == 3 * unit  # one input per layer crosses the saved-tensor hooks ...
        assert set(m.refs) == set(input_ptrs)  # ... and it is each layer's own input
    assert out.requires_grad
    # The hooks above cannot see what checkpoint might keep in its own store, so count the
    # op outputs still alive after forward too: besides the result, only the inputs of
    # layers 2 and 3 (layer 1's input x was made before the meter) survive; nothing from
    # inside a layer does.
    out, held = held_output_bytes(lambda: run_chain(model, x, ckpt=True))
    assert held == 2 * unit
    _, held_plain = held_output_bytes(lambda: run_chain(model, x, ckpt=False))
    assert held_plain > 4 * held


def test_autocast_saves_16_bit_activations_and_a_16_bit_weight_copy() -> None:
    torch.manual_seed(0)
    lin = nn.Linear(64, 64, bias=False)
    x = torch.randn(8, 64, requires_grad=True)  # as inside a model: the input needs a gradient
    with SavedMeter(ignore=param_ptrs(lin)) as m, torch.autocast("cpu", dtype=torch.bfloat16):
        out = torch.relu(lin(x))
    saved = set(m.shapes)
    assert ((8, 64), torch.bfloat16) in saved  # activations stored in 2 bytes
    assert ((64, 64), torch.bfloat16) in saved  # plus a bf16 copy of the fp32 weight
    assert all(dtype == torch.bfloat16 for _, dtype in saved)
    assert lin.weight.dtype == torch.float32  # the fp32 weight stays too
    assert out.dtype == torch.bfloat16
    # the parameter's gradient flows back through the cast and lands in fp32, full size
    out.float().sum().backward()
    assert lin.weight.grad is not None and lin.weight.grad.dtype == torch.float32


def test_saved_activations_peak_at_end_of_forward_and_are_freed_during_backward() -> None:
    model = make_stack(n=4)
    x = torch.randn(4, 16, 32)
    during_forward: list[int] = []
    during_backward: list[int] = []
    with SavedMeter(ignore=param_ptrs(model)) as m:
        h = x
        for layer in model:
            h = layer(h)
            during_forward.append(m.live)
            h.register_hook(lambda g: during_backward.append(m.live) or g)
        h.sum().backward()
        after = m.live
    assert during_forward == sorted(during_forward)  # grows layer by layer
    assert m.peak == during_forward[-1]  # highest when forward ends
    assert during_backward == sorted(during_backward, reverse=True)  # falls as backward runs
    assert during_backward[-1] < m.peak and after == 0


# ----------------------------------------------------------------------------- GPT-2's peak at the loss

#: GPT-2 small scaled down with its proportions kept: vocabulary / width = 64 (50,257 / 768 is 65)
#: and 5 * heads * tokens / width = 80 (the attention share of a layer, as 12 * 1,024 / 768 gives).
GPT2_SCALED = {"vocab_size": 4096, "n_embd": 64, "n_layer": 12, "n_head": 4, "n_positions": 256}
GPT2_BATCH, GPT2_TOKENS = 2, 256


class PeakComposition(LiveBytes):
    """LiveBytes that also keeps, at each new peak, the sizes of the storages then alive and
    whether backward had started."""

    def __init__(self, ignore: set[int]) -> None:
        super().__init__(ignore=ignore)
        self.in_backward = False
        self.at_peak: list[int] = []
        self.peak_in_backward = False
        self.forward_peak = 0
        self.at_forward_peak: list[int] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        before = self.peak
        out = super().__torch_dispatch__(func, types, args, kwargs)
        if self.peak > before:
            self.at_peak = sorted((entry[0] for entry in self.refs.values()), reverse=True)
            self.peak_in_backward = self.in_backward
            if not self.in_backward:
                self.forward_peak, self.at_forward_peak = self.peak, self.at_peak
        return out


def _gpt2_checkpointed_step(chunks: int | None) -> tuple[PeakComposition, int]:
    """One fp32 training step of a scaled GPT-2 (transformers) with every block checkpointed
    (non-reentrant), the loop holding its outputs through backward. chunks=None: the model's own
    loss (labels=ids). chunks=n: the LM head and loss over n slices of the tokens, each slice
    checkpointed so that only one slice's logits exist at a time in backward too."""
    transformers = __import__("pytest").importorskip("transformers")
    import torch.nn.functional as F
    from torch.utils.checkpoint import checkpoint
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    torch.manual_seed(0)
    config = transformers.GPT2Config(**GPT2_SCALED, bos_token_id=0, eos_token_id=0)
    config._attn_implementation = "eager"
    model = transformers.GPT2LMHeadModel(config).train()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # 5.x: an alias of activation_checkpointing_enable
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    ids = torch.randint(0, GPT2_SCALED["vocab_size"], (GPT2_BATCH, GPT2_TOKENS))
    logits_bytes = GPT2_BATCH * GPT2_TOKENS * GPT2_SCALED["vocab_size"] * 4
    meter = PeakComposition(ignore=param_ptrs(model))
    with meter:
        if chunks is None:
            outputs = model(input_ids=ids, labels=ids, use_cache=False)
            loss = outputs.loss
        else:
            hidden = model.transformer(input_ids=ids, use_cache=False).last_hidden_state
            inputs, targets = hidden[:, :-1].flatten(0, 1), ids[:, 1:].flatten()

            def piece(h: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
                return F.cross_entropy(model.lm_head(h), t, reduction="sum")

            step = -(-inputs.shape[0] // chunks)
            loss = (
                sum(
                    checkpoint(piece, inputs[i : i + step], targets[i : i + step], use_reentrant=False)
                    for i in range(0, inputs.shape[0], step)
                )
                / inputs.shape[0]
            )
        meter.in_backward = True
        loss.backward()
    return meter, logits_bytes


def test_checkpointed_gpt2_peaks_in_the_loss_backward_on_logits_sized_tensors() -> None:
    meter, logits_bytes = _gpt2_checkpointed_step(chunks=None)
    vocab_sized = [n for n in meter.at_peak if n == logits_bytes]
    assert meter.peak_in_backward  # the peak comes after forward ends
    assert len(vocab_sized) == 4  # logits, the saved log-probabilities and their two gradients at once
    assert sum(vocab_sized) > 0.9 * meter.peak  # over 90% of the peak
    # all the rest (checkpoints, the blocks' recompute, gradients) is smaller than one batch x
    # tokens x vocabulary tensor
    assert meter.peak - sum(vocab_sized) < logits_bytes
    # forward's own peak holds two of them (the logits and the saved log-probabilities) and stays
    # near half of the step's
    assert [n for n in meter.at_forward_peak if n == logits_bytes] == [logits_bytes] * 2
    assert meter.forward_peak < 0.6 * meter.peak


def test_chunked_loss_lowers_a_checkpointed_gpt2_peak_more_than_block_changes_can() -> None:
    whole, logits_bytes = _gpt2_checkpointed_step(chunks=None)
    chunked, _ = _gpt2_checkpointed_step(chunks=8)
    head = sum(n for n in whole.at_peak if n == logits_bytes)
    # what any change to the blocks' checkpointing could still take off the peak: everything
    # live at it besides the logits-sized tensors
    blocks_at_most = whole.peak - head
    assert whole.peak - chunked.peak > 2 * blocks_at_most  # the chunked loss saves more than that, twice over
    assert chunked.peak < whole.peak / 2
    assert all(n < logits_bytes for n in chunked.at_peak)  # no whole-batch logits left at the new peak


def test_gpt2_small_estimate_at_batch_1_peaks_after_the_activations_are_freed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """mem-estimate-peak-in-optimizer-step: the estimate's own trace (fake tensors, CUDA
    kernels) peaks once every gradient is live, at the end of backward, with the optimizer
    step reaching (not passing) that level; the peak's temporaries were allocated in
    backward and no activation is alive at it."""
    from demos import estimate as E
    from demos.memory import BACKWARD, FORWARD, OPTIMIZER, LiveTensorMeter
    from demos.models import PRESETS

    meters: list[LiveTensorMeter] = []
    exit_ = LiveTensorMeter.__exit__

    def keep(self: LiveTensorMeter, *args: object) -> None:
        meters.append(self)
        exit_(self, *args)

    monkeypatch.setattr(LiveTensorMeter, "__exit__", keep)
    cfg = PRESETS["gpt2-small"]
    b, _ = E.measure_training_step(cfg, 1, 128, False, fake=True, kernels="cuda")
    samples = meters[-1]._samples
    peak = max(live for live, _ in samples)
    assert {phase for live, phase in samples if live == peak} == {BACKWARD}
    in_optimizer = max(live for live, phase in samples if phase == OPTIMIZER)
    assert peak - 1024 < in_optimizer <= peak  # the update comes level, never higher
    assert b.activations_bytes < 1024 and b.gradients_bytes == b.parameters_bytes
    wte_grads = 2 * cfg.vocab * cfg.width * 4  # two tied-embedding gradients (+ a scalar or so)
    assert wte_grads <= b.temporaries_bytes < wte_grads + 1024
    assert FORWARD in {phase for _, phase in samples}
