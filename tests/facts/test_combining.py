"""Fact tests for questions/combining.yaml.

Each test runs on the CPU build of PyTorch with small tensors and asserts the behaviour a
question rests on. Saved-for-backward memory is measured with saved_tensors_hooks, counting
unique storages by data_ptr (never process RSS).
"""

from __future__ import annotations

import copy
import inspect
import math

import torch
from torch import nn
from torch.autograd.graph import save_on_cpu, saved_tensors_hooks
from torch.distributed.algorithms._checkpoint import checkpoint_wrapper as cw_module
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
    CheckpointImpl,
    CheckpointWrapper,
    apply_activation_checkpointing,
    checkpoint_wrapper,
    offload_wrapper,
)
from torch.utils.checkpoint import checkpoint

from tests.facts.support import Block, SavedBytes

# ----------------------------------------------------------------------------- helpers


def relu_block(d: int = 16) -> Block:
    return Block(d, act=torch.relu)


def _grads(model: nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


# ----------------------------------------------------------------------------- tests


def test_apply_activation_checkpointing_wraps_children_in_place() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(relu_block(), relu_block(), nn.Linear(16, 1))
    reference = copy.deepcopy(model)

    returned = apply_activation_checkpointing(
        model, checkpoint_wrapper_fn=checkpoint_wrapper, check_fn=lambda m: isinstance(m, Block)
    )
    assert returned is None  # it edits the model in place
    assert type(model) is nn.Sequential  # the root is never wrapped
    assert isinstance(model[0], CheckpointWrapper) and isinstance(model[1], CheckpointWrapper)
    assert isinstance(model[2], nn.Linear)  # check_fn said no
    # checkpoint_wrapper's default implementation is the non-reentrant one
    assert model[0].checkpoint_impl is CheckpointImpl.NO_REENTRANT
    default = inspect.signature(checkpoint_wrapper).parameters["checkpoint_impl"].default
    assert default is CheckpointImpl.NO_REENTRANT

    # even a check_fn that accepts everything leaves the root's type alone
    other = nn.Sequential(relu_block(), relu_block())
    apply_activation_checkpointing(other, check_fn=lambda m: True)
    assert type(other) is nn.Sequential

    x = torch.randn(8, 16)
    model(x).sum().backward()
    reference(x).sum().backward()
    # the wrapped blocks ran twice (forward + recompute), the plain ones once
    inner = model[0]._checkpoint_wrapped_module
    assert inner.calls == 2 and reference[0].calls == 1
    # same parameters, same gradients (state_dict names drop the wrapper's prefix)
    wrapped_params = dict(zip(model.state_dict().keys(), model.parameters(), strict=True))
    for name, p in zip(reference.state_dict().keys(), reference.parameters(), strict=True):
        torch.testing.assert_close(wrapped_params[name].grad, p.grad, rtol=0, atol=0)


def test_checkpoint_wrapper_state_dict_keys_match_unwrapped_model() -> None:
    torch.manual_seed(0)
    plain = nn.Sequential(relu_block(), nn.Linear(16, 1))
    wrapped = copy.deepcopy(plain)
    apply_activation_checkpointing(wrapped, check_fn=lambda m: isinstance(m, Block))
    assert isinstance(wrapped[0], CheckpointWrapper)
    # the wrapper's prefix is stripped, so names and checkpoints stay interchangeable
    assert list(wrapped.state_dict().keys()) == list(plain.state_dict().keys())
    fresh = nn.Sequential(relu_block(), nn.Linear(16, 1))
    fresh.load_state_dict(wrapped.state_dict())  # strict load into an unwrapped model
    wrapped.load_state_dict(plain.state_dict())  # and back into the wrapped one


def test_save_on_cpu_moves_saved_tensors_to_cpu_and_keeps_gradients() -> None:
    params = inspect.signature(save_on_cpu.__init__).parameters
    assert params["pin_memory"].default is False
    assert params["device_type"].default == "cuda"
    assert issubclass(save_on_cpu, saved_tensors_hooks)

    hooks = save_on_cpu()
    t = torch.randn(4, 4)
    device, packed = hooks.pack_hook(t)
    assert device == t.device and packed.device.type == "cpu"
    assert packed.dtype == t.dtype  # stored as it was: no cast to 16 bits
    torch.testing.assert_close(hooks.unpack_hook((device, packed)), t, rtol=0, atol=0)
    # backward gets a copy moved back to the device recorded at pack time; this CPU build
    # has no CUDA, so the meta device stands in for it (the real move is shown by
    # test_offloading.py::test_on_a_gpu_offloading_spends_copies_and_host_memory_not_compute)
    back = hooks.unpack_hook((torch.device("meta"), packed))
    assert back.device.type == "meta" and back.shape == t.shape and back.dtype == t.dtype

    torch.manual_seed(0)
    model = nn.Sequential(relu_block(), relu_block())
    x = torch.randn(8, 16)
    model(x).sum().backward()
    expected = _grads(model)
    model.zero_grad()
    with save_on_cpu():
        out = model(x)
    out.sum().backward()
    got = _grads(model)
    for name in expected:
        torch.testing.assert_close(got[name], expected[name], rtol=0, atol=0)


def test_offload_wrapper_stores_instead_of_recomputing(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    used: list[bool] = []
    real = cw_module.save_on_cpu

    def recording_save_on_cpu(pin_memory: bool = False, **kw):  # type: ignore[no-untyped-def]
        used.append(pin_memory)
        return real(pin_memory=pin_memory, **kw)

    monkeypatch.setattr(cw_module, "save_on_cpu", recording_save_on_cpu)
    torch.manual_seed(0)
    block = relu_block()
    reference = copy.deepcopy(block)
    off = offload_wrapper(block)
    x = torch.randn(8, 16)
    off(x).sum().backward()
    reference(x).sum().backward()
    assert used == [True]  # offload_wrapper uses save_on_cpu(pin_memory=True)
    assert block.calls == 1  # offloading: no recompute in backward
    for name, p in reference.named_parameters():
        torch.testing.assert_close(dict(block.named_parameters())[name].grad, p.grad)

    ckpt_block = relu_block()
    checkpoint_wrapper(ckpt_block)(x).sum().backward()
    assert ckpt_block.calls == 2  # checkpointing: the forward runs again


def test_mixed_precision_and_checkpointing_stack() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(*[relu_block(32) for _ in range(4)])
    x32 = torch.randn(16, 32, requires_grad=True)

    def measure(dtype: torch.dtype, ckpt: bool) -> SavedBytes:
        m = copy.deepcopy(model).to(dtype)
        x = x32.detach().to(dtype).requires_grad_()
        with SavedBytes(exclude=m) as saved:
            h = x
            for block in m:
                h = checkpoint(block, h, use_reentrant=False) if ckpt else block(h)
        return saved

    fp32, bf16 = measure(torch.float32, False), measure(torch.bfloat16, False)
    fp32_ck, bf16_ck = measure(torch.float32, True), measure(torch.bfloat16, True)
    # 16-bit tensors: the same number of stored tensors, each half the bytes
    assert bf16.count == fp32.count and bf16.nbytes * 2 == fp32.nbytes
    # checkpointing: fewer stored tensors (only each block's input)
    assert fp32_ck.count == 4 < fp32.count
    # both together: fewer tensors and half the bytes each
    assert bf16_ck.count == fp32_ck.count and bf16_ck.nbytes * 2 == fp32_ck.nbytes
    assert bf16_ck.nbytes < min(bf16.nbytes, fp32_ck.nbytes)

    # bf16 autocast on the fp32 model instead: the residual stream stays fp32, so the block
    # inputs checkpointing keeps are not halved (the question's prompt rules autocast out)
    with SavedBytes(exclude=model) as ac_ck, torch.autocast("cpu", dtype=torch.bfloat16):
        h = x32
        for block in model:
            h = checkpoint(block, h, use_reentrant=False)
    assert h.dtype is torch.float32
    assert ac_ck.count == fp32_ck.count and ac_ck.nbytes == fp32_ck.nbytes


def test_gradient_accumulation_matches_full_batch_and_scales_saved_bytes() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(relu_block(), nn.Linear(16, 1)).double()
    data, target = torch.randn(32, 16, dtype=torch.double), torch.randn(32, 1, dtype=torch.double)
    loss_fn = nn.MSELoss()

    full = copy.deepcopy(model)
    with SavedBytes(exclude=full) as full_saved:
        out = full(data)
    loss_fn(out, target).backward()

    acc = copy.deepcopy(model)
    micro = 4
    micro_saved = []
    for xb, yb in zip(data.chunk(micro), target.chunk(micro), strict=True):
        xb = xb.clone()  # its own storage, so only the micro-batch's bytes are counted
        with SavedBytes(exclude=acc) as saved:
            out = checkpoint(acc, xb, use_reentrant=False)
        (loss_fn(out, yb) / micro).backward()  # scale so the sum equals the full-batch mean
        micro_saved.append(saved.nbytes)

    for (_, p_full), (_, p_acc) in zip(full.named_parameters(), acc.named_parameters(), strict=True):
        torch.testing.assert_close(p_acc.grad, p_full.grad, rtol=1e-12, atol=1e-12)

    # without checkpointing, saved bytes are proportional to the micro-batch size
    plain = copy.deepcopy(model)
    with SavedBytes(exclude=plain) as one_micro:
        plain(data[:8].clone())
    assert one_micro.nbytes * micro == full_saved.nbytes
    # checkpointing the micro-batch shrinks it further
    assert max(micro_saved) < one_micro.nbytes


def test_cpu_offload_policy_is_recomputed_in_eager_sac() -> None:
    import functools

    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    from tests.facts.support import OpCounter

    assert {"MUST_CPU_OFFLOAD", "PREFER_CPU_OFFLOAD"} <= set(CheckpointPolicy.__members__)
    torch.manual_seed(0)
    w1 = torch.randn(16, 16, requires_grad=True)
    w2 = torch.randn(16, 16, requires_grad=True)

    def f(x: torch.Tensor) -> torch.Tensor:
        return torch.relu(torch.relu(x @ w1) @ w2)

    def mm_backward_count(policy: CheckpointPolicy | None) -> int:
        x = torch.randn(8, 16, requires_grad=True)
        if policy is None:
            y = checkpoint(f, x, use_reentrant=False)
        else:

            def choose(ctx, op, *args, **kwargs):  # type: ignore[no-untyped-def]
                return policy if op == torch.ops.aten.mm.default else CheckpointPolicy.PREFER_RECOMPUTE

            ctx_fn = functools.partial(create_selective_checkpoint_contexts, choose)
            y = checkpoint(f, x, use_reentrant=False, context_fn=ctx_fn)
        with OpCounter() as counter:
            y.sum().backward()
        return counter.ops["mm"]

    plain = mm_backward_count(None)
    assert mm_backward_count(CheckpointPolicy.MUST_SAVE) == plain - 2  # both matmuls kept
    # eager SAC keeps only *_SAVE outputs: the offload values fall to recompute, like plain AC
    assert mm_backward_count(CheckpointPolicy.MUST_CPU_OFFLOAD) == plain
    assert mm_backward_count(CheckpointPolicy.PREFER_CPU_OFFLOAD) == plain


# ----------------------------------------------------------------------------- FSDP2 (issue 22)


def _two_blocks() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(*(nn.Sequential(nn.Linear(8, 8), nn.Tanh()) for _ in range(2)))


def _fsdp2_gathers_per_step(tmp_path, checkpointed: bool, reshard_after_forward: bool) -> int:  # type: ignore[no-untyped-def]
    """Parameter gathers FSDP2 schedules in one step of two fully_shard blocks, on one gloo
    rank: the collective itself is a no-op there, but every unshard that would all-gather
    records one AllGatherResult, on the same code path as on many ranks."""
    import torch.distributed as dist
    from torch.distributed._composable import checkpoint as composable_checkpoint
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.fsdp._fully_shard import _fsdp_param_group as param_group

    store = f"file://{tmp_path}/pg-{checkpointed}-{reshard_after_forward}"
    dist.init_process_group("gloo", init_method=store, rank=0, world_size=1)
    gathers = 0
    original = param_group.AllGatherResult

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal gathers
        gathers += 1
        return original(*args, **kwargs)

    param_group.AllGatherResult = counting  # type: ignore[misc]
    try:
        model = _two_blocks()
        runs = [0]
        for block in model:
            block[0].register_forward_pre_hook(lambda *_: runs.__setitem__(0, runs[0] + 1))
            if checkpointed:
                composable_checkpoint(block)
            fully_shard(block, reshard_after_forward=reshard_after_forward)
        fully_shard(model)
        gathers = 0
        model(torch.randn(4, 8)).sum().backward()
        assert runs[0] == (4 if checkpointed else 2)  # the recompute did run each block again
        return gathers
    finally:
        param_group.AllGatherResult = original  # type: ignore[misc]
        dist.destroy_process_group()


def test_fsdp2_recompute_adds_no_parameter_gather(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # reshard_after_forward=True: one gather per block for forward, one before its backward;
    # the recompute runs between that gather and the post-backward reshard and adds none
    assert _fsdp2_gathers_per_step(tmp_path, checkpointed=False, reshard_after_forward=True) == 4
    assert _fsdp2_gathers_per_step(tmp_path, checkpointed=True, reshard_after_forward=True) == 4
    # reshard_after_forward=False keeps the gathered parameters through backward: one per block
    assert _fsdp2_gathers_per_step(tmp_path, checkpointed=True, reshard_after_forward=False) == 2


def _saved_activations(run, params) -> dict[int, tuple[tuple[int, ...], torch.dtype]]:  # type: ignore[no-untyped-def]
    """What autograd saves while `run()` executes, one entry per storage, parameters left out."""
    ignore = {p.untyped_storage().data_ptr() for p in params}
    seen: dict[int, tuple[tuple[int, ...], torch.dtype]] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        key = t.untyped_storage().data_ptr()
        if key not in ignore:
            seen[key] = (tuple(t.shape), t.dtype)
        return t

    with saved_tensors_hooks(pack, lambda t: t):
        run()
    return seen


def test_autocast_loss_keeps_float32_log_probabilities() -> None:
    torch.manual_seed(0)
    head = nn.Linear(64, 1000, bias=False)  # an LM head: width 64, vocabulary 1,000
    hidden = torch.randn(32, 64, requires_grad=True)
    targets = torch.randint(0, 1000, (32,))

    def vocab_sized(autocast: bool, loss_inside: bool = True) -> list[torch.dtype]:
        logits: list[torch.Tensor] = []

        def step() -> None:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                logits.append(head(hidden))
                if loss_inside:
                    torch.nn.functional.cross_entropy(logits[0], targets)
            if not loss_inside:
                torch.nn.functional.cross_entropy(logits[0], targets)

        saved = _saved_activations(step, head.parameters())
        assert logits[0].dtype == (torch.bfloat16 if autocast else torch.float32)
        return [dtype for shape, dtype in saved.values() if shape == (32, 1000)]

    # under autocast the matmul's output is bf16, yet the loss keeps one fp32 (tokens x vocabulary)
    # tensor, as many bytes as the fp32 run keeps; the bf16 logits themselves are not saved
    assert vocab_sized(autocast=True) == [torch.float32]
    assert vocab_sized(autocast=False) == [torch.float32]
    # the upcast is autocast's doing: the same bf16 logits given to the loss after the region
    # closes leave it bf16 log-probabilities (why the prompt puts the loss inside the region)
    assert vocab_sized(autocast=True, loss_inside=False) == [torch.bfloat16]


class _LoRALinear(nn.Module):
    """A frozen Linear plus a trainable rank-r adapter: base(x) + B(A(x))."""

    def __init__(self, width: int = 256, rank: int = 8, out: int | None = None) -> None:
        super().__init__()
        out = width if out is None else out
        self.base = nn.Linear(width, out).requires_grad_(False)
        self.A = nn.Linear(width, rank, bias=False)
        self.B = nn.Linear(rank, out, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + self.B(self.A(x))


def _mlp_block_saved_bytes(adapted: set[str] | None) -> int:
    """Bytes autograd saves for LayerNorm -> fc1 (d -> 4d) -> GELU -> fc2 (4d -> d), d=256,
    batch 64, the input needing a gradient. adapted=None: full fine-tuning (all trainable);
    otherwise every weight frozen and a rank-8 adapter on the linears named."""
    torch.manual_seed(0)
    d = 256

    def linear(name: str, width: int, out: int) -> nn.Module:
        if adapted is None:
            return nn.Linear(width, out)
        if name in adapted:
            return _LoRALinear(width, rank=8, out=out)
        return nn.Linear(width, out).requires_grad_(False)

    norm = nn.LayerNorm(d).requires_grad_(adapted is None)
    block = nn.Sequential(norm, linear("fc1", d, 4 * d), nn.GELU(), linear("fc2", 4 * d, d))
    x = torch.randn(64, d, requires_grad=True)
    saved = _saved_activations(lambda: block(x), block.parameters())
    return sum(math.prod(shape) * torch.empty((), dtype=dtype).element_size() for shape, dtype in saved.values())


def test_lora_adapter_saves_the_full_width_input_a_frozen_linear_does_not() -> None:
    torch.manual_seed(0)
    layer = _LoRALinear(width=256, rank=8)
    x = torch.randn(32, 256, requires_grad=True)  # the gradient flows on to earlier layers
    frozen = _saved_activations(lambda: layer.base(x), layer.parameters())
    adapted = _saved_activations(lambda: layer(x), layer.parameters())
    trainable = nn.Linear(256, 256)
    full = _saved_activations(lambda: trainable(x), trainable.parameters())
    assert frozen == {}  # the frozen layer alone keeps no activation (its input gradient needs W)
    assert sorted(adapted.values()) == [((32, 8), torch.float32), ((32, 256), torch.float32)]  # x and A(x)
    assert x.untyped_storage().data_ptr() in adapted  # the very input, as full fine-tuning keeps it
    assert list(full.values()) == [((32, 256), torch.float32)]
    # x is saved for A's gradient even when x itself needs none (a frozen embedding's output)
    x_frozen = x.detach()
    assert x_frozen.untyped_storage().data_ptr() in _saved_activations(lambda: layer(x_frozen), layer.parameters())
    # in an MLP block, adapting every linear keeps about what full fine-tuning keeps (the full-width
    # inputs plus rank-8 slivers); a linear left frozen without an adapter keeps no input, so less
    full_bytes = _mlp_block_saved_bytes(None)
    both_bytes = _mlp_block_saved_bytes({"fc1", "fc2"})
    fc1_only_bytes = _mlp_block_saved_bytes({"fc1"})
    assert full_bytes < both_bytes < 1.01 * full_bytes
    assert fc1_only_bytes < 0.65 * full_bytes
