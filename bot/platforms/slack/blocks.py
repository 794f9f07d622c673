"""Block Kit's pieces as every Slack layout uses them: a message (its fallback text escaped like
its blocks), sections, context lines, buttons, cut to Slack's limits. Layout only: the sentences
come from bot.core.wording."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Block = dict[str, Any]
# Slack's limits: 3000 characters in a section's text, 150 in a header, 50 blocks a message,
# 100 blocks in a view, 75 characters on a button.
SECTION_MAX = 3000
TEXT_MAX = 3900
MAX_BLOCKS = 50


@dataclass(frozen=True)
class SlackMessage:
    """What is sent: the notification/fallback text (escaped like the blocks: Slack reads it as
    mrkdwn too, so a member named `<!channel>` would notify the channel) and the blocks."""

    text: str
    blocks: list[Block] = field(default_factory=list)


def escape(text: str) -> str:
    """Slack's three control characters in mrkdwn (user and bank text never becomes a link
    or a mention by accident)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def cut(text: str, limit: int) -> str:
    """`text`, at most `limit` characters (an ellipsis where it was cut)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def section(text: str, raw: bool = False) -> Block:
    body = text if raw else escape(text)
    return {"type": "section", "text": {"type": "mrkdwn", "text": cut(body, SECTION_MAX)}}


def bold(text: str) -> Block:
    return section(f"*{escape(text)}*", raw=True)


def context(text: str) -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": cut(escape(text), SECTION_MAX)}]}


def code(lines: list[str]) -> Block:
    body = "\n".join(lines).replace("```", "'''")
    return section(f"```{escape(body)}```", raw=True)


def message(text: str, blocks: list[Block]) -> SlackMessage:
    """A message of these blocks (at most Slack's 50), `text` its escaped fallback."""
    return SlackMessage(cut(escape(text), TEXT_MAX), blocks[:MAX_BLOCKS])


def plain(text: str) -> SlackMessage:
    """A message of one section."""
    return message(text, [section(text)])


def button(action_id: str, text: str, style: str | None = None) -> Block:
    """A button whose value is its action id."""
    made: Block = {
        "type": "button",
        "action_id": action_id,
        "value": action_id,
        "text": {"type": "plain_text", "text": cut(text, 75)},
    }
    if style:
        made["style"] = style
    return made


def web_link(label: str, link: str | None) -> list[Block]:
    """The signed web link as a Slack link (its token is never read as mrkdwn)."""
    return [section(f"<{link}|{escape(label)}>", raw=True)] if link else []
