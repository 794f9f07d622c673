"""Validate `/demo` requests from chat before anything runs: names, numbers and bounds.

The demos' own parsers (demos/checkpoint.py, demos/estimate.py, demos/plan.py) are the truth: every name here
matches theirs and every value accepted here is accepted there (tests/test_demo_request.py
says so). A question's `demo:` field is a `/demo` request too, held to tighter bounds: by the
demo's own cost model it runs in seconds on a CPU worker (`quick_problem`)."""

from __future__ import annotations

import math
import re

from bot.core import wording
from bot.core.errors import InvalidInput
from bot.core.rules.numbers import ascii_int
from bot.core.values import DemoRequest

DEMOS = ("checkpoint", "estimate", "plan")
STRATEGIES = ("none", "block", "sqrt", "selective", "selective-attn", "offload", "budget")
MODELS = ("blocks", "chain", "transformer", "hf-gpt2")
PRESETS = ("gpt2-small", "gpt2-medium", "gpt2-large", "llama-1b", "hf-gpt2")
KERNELS = ("cuda", "cpu")
# demos/plan.py's presets, dtypes and optimizers (tests/test_demo_request.py compares them)
PLAN_MODELS = ("transformer", "hf-gpt2", "gpt2-medium", "gpt2-large", "llama-1b", "llama-7b", "torch-sac-test")
PLAN_DTYPES = ("fp32", "bf16-autocast", "bf16")
PLAN_OPTIMIZERS = ("adamw", "adam", "sgd", "adapters")
# each plan model's longest sequence (its position table; demos/plan_models.py max_seq), and the default model
PLAN_MAX_SEQ = {
    "transformer": 256,
    "hf-gpt2": 1024,
    "gpt2-medium": 1024,
    "gpt2-large": 1024,
    "llama-1b": 131072,
    "llama-7b": 4096,
    "torch-sac-test": 1024,
}
PLAN_DEFAULT_MODEL = "hf-gpt2"
HF_STRATEGIES = ("none", "block", "offload")  # hf-gpt2's block is transformers' gradient_checkpointing_enable
MAX_BUDGETS = 6  # budgets per request (one compile each)
# Bounds a chat user may ask for; the worker's own estimate refuses what does not fit or finish.
INT_BOUNDS: dict[str, dict[str, tuple[int, int]]] = {
    "checkpoint": {
        "layers": (1, 512),
        "tokens": (1, 65536),
        "width": (8, 4096),
        "heads": (1, 64),
        "batch": (1, 256),
        "repeat": (1, 20),
    },
    "estimate": {"batch": (1, 512), "seq": (1, 131072)},
    "plan": {"batch": (1, 512), "seq": (1, 131072), "shards": (1, 4096)},
}
FLOAT_BOUNDS: dict[str, dict[str, tuple[float, float]]] = {
    "estimate": {"gpu-gib": (1.0, 4096.0)},
    "plan": {"gpu-gib": (1.0, 4096.0), "margin-gib": (0.0, 4096.0)},
}
CHOICES: dict[str, dict[str, tuple[str, ...]]] = {
    "checkpoint": {"model": MODELS, "device": ("auto", "cpu", "cuda")},
    "estimate": {"preset": PRESETS, "kernels": KERNELS},
    "plan": {"model": PLAN_MODELS, "dtype": PLAN_DTYPES, "optimizer": PLAN_OPTIMIZERS},
}
LISTS: dict[str, tuple[str, ...]] = {"checkpoint": ("strategies", "budgets"), "estimate": (), "plan": ()}

# The demo's defaults (demos/checkpoint.py MODEL_DEFAULTS: layers, tokens, width, heads, batch).
MODEL_DEFAULTS: dict[str, tuple[int, int, int, int, int]] = {
    "blocks": (9, 512, 128, 4, 1),
    "chain": (16, 2048, 128, 4, 1),
    "transformer": (4, 256, 128, 4, 4),
    "hf-gpt2": (2, 128, 768, 12, 2),
}
DEFAULT_STRATEGIES = ("none", "block", "sqrt", "selective")
DEFAULT_BUDGETS = (1.0, 0.5, 0.2, 0.0)
DEFAULT_REPEAT = 3
# The demo's CPU cost model (demos/checkpoint.py ASSUMED_FLOPS["cpu"], COMPILE_S["cpu"]).
CPU_FLOPS = 2.0e10
COMPILE_S = 4.0
# A question's demo must cost at most this by that model (which is pessimistic: the default
# blocks run is 3.8 s by it, the transformer's 6.8 s, each about 2 s of work on 2 cores).
QUICK_SECONDS = 20.0
DEMO_VOCAB, GPT2_VOCAB = 512, 50257
_NUMBER = re.compile(r"[0-9]+(\.[0-9]*)?|\.[0-9]+")


def parse_demo(text: str) -> DemoRequest:
    """`checkpoint layers=16 strategies=none,block` -> the demo module and its CLI arguments."""
    words = text.split()
    if not words or words[0] not in DEMOS:
        raise InvalidInput(wording.DEMO_USAGE)
    name, args = words[0], []
    seen: set[str] = set()
    for word in words[1:]:
        key, sep, value = word.partition("=")
        key = key.lower().replace("_", "-")
        if not sep or not value:
            raise InvalidInput(wording.demo_not_key_value(word[:40]))
        if key in seen:
            raise InvalidInput(wording.demo_twice(key[:30]))
        seen.add(key)
        args += [f"--{key}", _checked_value(name, key, value)]
    request = DemoRequest(module=f"demos.{name}", args=tuple(args))
    if name == "checkpoint":
        _check_combination(_options(request))
    if name == "plan":
        _check_plan(_options(request))
    return request


def _checked_value(name: str, key: str, value: str) -> str:
    """Demo `name`'s setting `key=value` as its command line takes it; a sentence when the demo
    has no such setting or the value is out of its bounds."""
    if key in INT_BOUNDS[name]:
        low, high = INT_BOUNDS[name][key]
        whole = ascii_int(value)
        if whole is None or not low <= whole <= high:
            raise InvalidInput(wording.demo_whole_number(key, low, high, value[:20]))
        return str(whole)
    if key in FLOAT_BOUNDS.get(name, {}):
        low_f, high_f = FLOAT_BOUNDS[name][key]
        number = float(value) if _NUMBER.fullmatch(value) else math.nan
        if not low_f <= number <= high_f:
            raise InvalidInput(wording.demo_number(key, low_f, high_f, value[:20]))
    elif key in CHOICES[name]:
        if value not in CHOICES[name][key]:
            raise InvalidInput(wording.demo_one_of(key, CHOICES[name][key], value[:20]))
    elif key == "strategies" and name == "checkpoint":
        unknown = [s for s in value.split(",") if s not in STRATEGIES]
        if unknown:
            raise InvalidInput(wording.demo_unknown_strategy(unknown[0][:20], STRATEGIES))
    elif key == "budgets" and name == "checkpoint":
        parts = value.split(",")
        bad = [p for p in parts if not _NUMBER.fullmatch(p) or not 0.0 <= float(p) <= 1.0]
        if bad or len(parts) > MAX_BUDGETS:
            raise InvalidInput(wording.demo_budgets((bad or [value])[0][:20], MAX_BUDGETS))
    else:
        known = sorted([*INT_BOUNDS[name], *FLOAT_BOUNDS.get(name, {}), *CHOICES[name], *LISTS[name]])
        raise InvalidInput(wording.demo_unknown_setting(key[:30], known))
    return value


def _check_combination(options: dict[str, str]) -> None:
    """What the demo refuses about settings together: attention heads that do not divide the
    width; a strategy hf-gpt2 cannot run."""
    model = options.get("model", "blocks")
    if model not in ("transformer", "hf-gpt2"):
        return
    _, _, width, heads, _ = MODEL_DEFAULTS[model]
    width, heads = int(options.get("width", width)), int(options.get("heads", heads))
    if width % heads:
        raise InvalidInput(wording.demo_heads_divide(width, heads, model))
    if model == "hf-gpt2":
        other = [s for s in options.get("strategies", "").split(",") if s and s not in HF_STRATEGIES]
        if other:
            raise InvalidInput(wording.demo_hf_strategies(other[0], HF_STRATEGIES))


def _check_plan(options: dict[str, str]) -> None:
    """What the planner refuses together: a sequence longer than the model's, a margin that
    leaves none of the GPU's memory (default 24 GiB) to plan in."""
    model = options.get("model", PLAN_DEFAULT_MODEL)
    if "seq" in options and int(options["seq"]) > PLAN_MAX_SEQ[model]:
        raise InvalidInput(wording.demo_plan_seq(int(options["seq"]), model, PLAN_MAX_SEQ[model]))
    gpu = float(options.get("gpu-gib", "24"))
    if "margin-gib" in options and float(options["margin-gib"]) >= gpu:
        raise InvalidInput(wording.demo_margin(float(options["margin-gib"]), gpu))


def question_demo_text(field: str) -> str:
    """A question's `demo:` field as a `/demo` request: `layers=4 strategies=none,block` is
    `checkpoint layers=4 strategies=none,block`; one naming its demo stays as written."""
    text = " ".join(field.split())
    first = text.split(" ", 1)[0] if text else ""
    return text if first in DEMOS else f"checkpoint {text}".strip()


def _options(request: DemoRequest) -> dict[str, str]:
    return {request.args[i].removeprefix("--"): request.args[i + 1] for i in range(0, len(request.args) - 1, 2)}


def cpu_seconds(request: DemoRequest) -> float:
    """What the demo's own cost model says a checkpoint run takes on a CPU worker: its steps'
    FLOPs at the assumed CPU throughput, plus a compile per budget (an upper bound of the
    demo's figure; tests/test_demo_request.py compares the two). 0 for the estimate, which
    allocates nothing and runs no step."""
    if request.module != "demos.checkpoint":
        return 0.0
    options = _options(request)
    model = options.get("model", "blocks")
    layers, tokens, width, heads, batch = MODEL_DEFAULTS[model]
    layers = int(options.get("layers", layers))
    tokens = int(options.get("tokens", tokens))
    width = int(options.get("width", width))
    batch = int(options.get("batch", batch))
    if model == "blocks":
        flops = 50.0 * layers * tokens * width * width
    elif model == "chain":
        flops = 6.5 * layers * tokens * width * width
    else:
        vocab = GPT2_VOCAB if model == "hf-gpt2" else DEMO_VOCAB
        flops = 6.0 * batch * tokens * (layers * (12.0 * width * width + 2.0 * tokens * width) + width * vocab)
    strategies = list(dict.fromkeys(["none", *options["strategies"].split(",")])) if "strategies" in options else []
    if not strategies:
        strategies = ["none", "block"] if model == "hf-gpt2" else list(DEFAULT_STRATEGIES)
    budgets = len(options["budgets"].split(",")) if "budgets" in options else len(DEFAULT_BUDGETS)
    runs = sum(budgets if s == "budget" else 1 for s in strategies)
    steps = runs * (int(options.get("repeat", DEFAULT_REPEAT)) + 2)
    compiles = budgets if "budget" in strategies else 0
    return steps * flops / CPU_FLOPS + compiles * COMPILE_S


def quick_problem(request: DemoRequest) -> str | None:
    """Why a question's demo may not be offered under its reveal (anyone may click it), or None:
    it must run on any worker (no CUDA-only strategy or device, no extra package) in seconds."""
    options = _options(request)
    if options.get("device") == "cuda" or "offload" in options.get("strategies", "").split(","):
        return wording.QUESTION_DEMO_CUDA
    if options.get("model") == "hf-gpt2" or options.get("preset") == "hf-gpt2":
        return wording.QUESTION_DEMO_HF
    seconds = cpu_seconds(request)
    if seconds > QUICK_SECONDS:
        return wording.question_demo_too_slow(seconds, QUICK_SECONDS)
    return None


def parse_question_demo(field: str) -> DemoRequest:
    """A question's `demo:` field, validated as chat's `/demo` and held to the quick bounds."""
    request = parse_demo(question_demo_text(field))
    problem = quick_problem(request)
    if problem:
        raise InvalidInput(problem)
    return request


# A "see it run" button under a reveal: `sb1:dm:<round>` (strict: no sign, no leading zero).
DEMO_BUTTON_PREFIX = "sb1:dm:"
_DEMO_BUTTON = re.compile(r"sb1:dm:([1-9][0-9]{0,17})")


def encode_demo_button(round_id: int) -> str:
    if round_id < 1:
        raise ValueError(f"no demo button for round {round_id}")
    return f"{DEMO_BUTTON_PREFIX}{round_id}"


def decode_demo_button(text: object) -> int | None:
    """The round of a "see it run" button's id, or None for anything not exactly one of ours."""
    if not isinstance(text, str) or len(text) > 40:
        return None
    match = _DEMO_BUTTON.fullmatch(text)
    return int(match.group(1)) if match else None
