"""Discord's own text: slash-command and option descriptions as Discord shows them, and the
replies only Discord gives (a command outside a server, a refused interaction). The sentences
every platform shares are in bot/core/wording."""

from __future__ import annotations

HELP_ANSWERING_DISCORD = (
    "Answer the daily question with its buttons, or reply to it mentioning the bot with a letter or a choice's text."
)


# Slash command and option descriptions as Discord shows them (at most 100 characters each).
COMMANDS = {
    "quiz": "A private practice question (optionally on one topic).",
    "review": "Your missed questions, when they are due again.",
    "score": "Your points, rank, accuracy, streaks and reviews due.",
    "leaderboard": "This week's board, all time, or an ISO week such as 2026-W48.",
    "demo": "Measure activation checkpointing: peak memory with and without it.",
    "forget-me": "Delete everything stored about you in this server.",
    "config": "Show or change the daily round's settings, or decide suggested questions (Manage Server).",
    "suggest": "Write a question for this server's bank; the admins approve it.",
    "help": "What this bot does and its commands.",
}
OPTIONS = {
    "topic": "Only questions on this topic.",
    "scope": "week (default), all, or an ISO week such as 2026-W48.",
    "confirm": "True deletes at once; without it you are told what would be deleted.",
    "setting": "What to show or change.",
    "value": "The new value (a channel defaults to this one).",
    "layers": "Blocks in the model (1-512).",
    "tokens": "Tokens per batch (1-65536).",
    "width": "Hidden width (8-4096).",
    "repeat": "Timed runs per strategy (1-20).",
    "strategies": "Comma-separated: none, block, sqrt, selective, selective-attn, offload, budget.",
    "model": "blocks, chain, transformer (GPT-style) or hf-gpt2 (Hugging Face's GPT-2).",
    "heads": "Attention heads of the transformer models (1-64; divides the width).",
    "demo_batch": "Sequences per batch for the transformer models (1-256).",
    "budgets": "Memory budgets for the budget strategy, 0 to 1, comma-separated (default 1,0.5,0.2,0).",
    "kernels": "Whose attention kernels the estimate traces: cuda (default) or cpu.",
    "preset": "A published model shape.",
    "batch": "Batch size (1-512).",
    "seq": "Sequence length (1-131072).",
    "gpu_gib": "GPU memory to fit in, GiB.",
    "plan_model": "The model to plan for (our transformer, GPT-2 sizes, Llama shapes, PyTorch's planner test model).",
    "plan_gpu_gib": "The GPU's memory in GiB (default 24).",
    "dtype": "fp32 (default), bf16-autocast (fp32 weights) or bf16 (bf16 weights).",
    "optimizer": "adamw (default), adam, sgd, or adapters (frozen base, LoRA adapters trained).",
    "shards": "FSDP shards dividing parameters, gradients and optimizer state (default 1).",
    "margin_gib": "GiB kept for the CUDA context and fragmentation (default 10% of the GPU).",
}
DEMO_COMMANDS = {
    "checkpoint": "Run a small model with and without checkpointing and measure peak memory.",
    "estimate": "Estimate peak memory of a large model without allocating it.",
    "plan": "What to checkpoint so a model's training step fits in N GiB (planned without a GPU).",
}
GUILD_ONLY = "Use this command in a server channel: scores and settings belong to a server."
NEEDS_MANAGE_SERVER = "Only members with the Manage Server permission can use /config."
FEEDBACK_DMS_CLOSED = (
    "Your answer is recorded. I could not send you the feedback privately because your direct messages "
    "are closed; the buttons on the question answer privately."
)
# An interaction's answer Discord refused: said privately where the member still waits.
ANSWER_FORBIDDEN = (
    "I could not show my answer here: the bot may not post in this channel. An admin can give it "
    "View Channels, Send Messages, Embed Links and Attach Files here."
)
ANSWER_FAILED = "Discord did not take my answer just now; please try again in a moment."


def closes_line(when: str) -> str:
    """`when`: the platform's own rendering of the closing time (a Discord timestamp)."""
    return f"Closes {when}."
