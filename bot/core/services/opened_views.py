"""The forms (Slack's modals) the bot opened: noted when opened, so that a submission for a
form the bot never opened, or opened for someone else, is refused. Who it was opened for is
kept as the salted hash /forget-me uses for forgotten answers (`_forget_key`), never the
member's id; rows go after VIEW_MEMORY. bot/core/engine.py builds it as `engine.views`."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Protocol

from bot.core.records import OpenedView
from bot.core.services.base import EngineBase
from bot.core.units import WithViews
from bot.core.values import UserRef

log = logging.getLogger(__name__)

# Slack keeps a modal open for at most a few hours; a day covers it.
VIEW_MEMORY = timedelta(days=1)


class OpenedViewsPort(WithViews, Protocol):
    """The features OpenedViews's units of work touch."""


class OpenedViews(EngineBase[OpenedViewsPort]):
    """view_opened and view_submitted."""

    def view_opened(self, user: UserRef, view_id: str, callback_id: str, reply_url: str | None = None) -> None:
        """Note a form the bot opened for `user` (and where its answer may be sent back)."""
        with self.store.write() as tx:
            tx.views.add_view(
                view_id, user.community_id, self._forget_key(user), callback_id, reply_url, self.now(), VIEW_MEMORY
            )

    def view_submitted(self, user: UserRef, view_id: str, callback_id: str) -> OpenedView | None:
        """The form if the bot opened it for `user` with this callback (within VIEW_MEMORY), else None."""
        since = self.now() - VIEW_MEMORY
        with self.store.read() as tx:
            found = tx.views.find_view(view_id, user.community_id, self._forget_key(user), callback_id, since)
        if found is None:
            log.info("a submission of view %.40r that this bot did not open for its member", view_id)
        return found
