"""Answers: the two ways a member answers, one entry point each. A click on an answer button
(`click`) and a line of text (`line`: a bare letter for a practice question, `daily b` for the
channel's round, a reply to a question post or in its thread, any of them ending in how sure
the member was). Each platform makes one of these calls per event; Slack asks for the member's
refreshed Home with the answer (`home=True`), still one call.

Rounds decides and scores (bot/core/services/rounds.py); Confidence records how sure (confidence.py);
Boards reads the Home (boards.py). This service only composes them."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Literal, overload

from bot.core import wording
from bot.core.errors import InvalidInput
from bot.core.rules import choices as codec
from bot.core.rules.confidence_rules import split_confidence
from bot.core.services.boards import Boards
from bot.core.services.confidence import Confidence
from bot.core.services.rounds import Rounds
from bot.core.values import (
    AlreadyAnswered,
    AnswerFeedback,
    AnswerWithHome,
    ChannelRef,
    ConfidenceNoted,
    HomeCard,
    Notice,
    RoundClosed,
    UserRef,
)

log = logging.getLogger(__name__)

Answered = AnswerFeedback | AlreadyAnswered | RoundClosed


class Answers:
    """One entry point per kind of input: a click, a line of text."""

    def __init__(self, rounds: Rounds, confidence: Confidence, boards: Boards) -> None:
        self.rounds = rounds
        self.confidence = confidence
        self.boards = boards

    @overload
    def click(self, user: UserRef, custom_id: str, home: Literal[False] = False) -> Answered: ...

    @overload
    def click(self, user: UserRef, custom_id: str, home: Literal[True]) -> AnswerWithHome: ...

    def click(self, user: UserRef, custom_id: str, home: bool = False) -> Answered | AnswerWithHome:
        """A click on an answer button: its id says the round and the shown choice."""
        decoded = codec.decode_answer(custom_id)
        if decoded is None:
            raise InvalidInput(wording.NOT_AN_ANSWER_BUTTON)
        answered = self.rounds.answer(user, *decoded)
        return self._with_home(user, answered) if home else answered

    @overload
    def line(
        self,
        user: UserRef,
        channel: ChannelRef | None,
        text: str,
        *,
        reply_to: str | None = None,
        event_id: str | None = None,
        home: Literal[False] = False,
    ) -> Answered | Notice | None: ...

    @overload
    def line(
        self,
        user: UserRef,
        channel: ChannelRef | None,
        text: str,
        *,
        reply_to: str | None = None,
        event_id: str | None = None,
        home: Literal[True],
    ) -> AnswerWithHome | None: ...

    def line(
        self,
        user: UserRef,
        channel: ChannelRef | None,
        text: str,
        *,
        reply_to: str | None = None,
        event_id: str | None = None,
        home: bool = False,
    ) -> Answered | Notice | AnswerWithHome | None:
        """A line of text that may answer (Rounds.answer_text decides which round, if any:
        `reply_to` is the platform's reference of the post replied to or threaded under) and
        may end in how sure the member was (`b sure`, `daily b unsure`), recorded with it.
        None when the line is not an answer (it is then chat)."""
        rest, sure = split_confidence(text)
        answered = self.rounds.answer_text(user, channel, rest if sure is not None else text, reply_to, event_id)
        if sure is not None and isinstance(answered, AnswerFeedback):
            noted = self.confidence.confide(user, answered.round_id, sure)
            if isinstance(noted, ConfidenceNoted):
                answered = replace(answered, noted=noted)
        if answered is None or not home:
            return answered
        return self._with_home(user, answered)

    def _with_home(self, user: UserRef, answered: Answered | Notice) -> AnswerWithHome:
        """The feedback and, after a scored first answer, the member's Home as it is now. The
        Home is read after the answer is committed: a failure there is logged and the feedback
        still comes back (with no Home)."""
        if not isinstance(answered, AnswerFeedback):
            return AnswerWithHome(answered, None)
        try:
            card: HomeCard | None = self.boards.home(user)
        except Exception:
            log.exception("the Home of %s after answering round %s", user.user_id, answered.round_id)
            card = None
        return AnswerWithHome(answered, card)
