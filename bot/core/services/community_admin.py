"""The engine's use cases for a community's admins and its members' data: /config (show or
change a setting, pause, resume, post now, the members' questions queue), /forget-me, the
CSV export and the list of communities. bot/core/engine.py builds it as `engine.admin`."""

from __future__ import annotations

import logging
from typing import Protocol

from bot.core import wording
from bot.core.errors import InvalidInput, NotFound
from bot.core.rules.community import CONFIG_ALIASES, CommunityConfig, parse_setting
from bot.core.rules.numbers import ascii_int
from bot.core.rules.text import clean_name
from bot.core.services.base import EngineBase, Shared
from bot.core.services.boards import Boards, FlaggedTx
from bot.core.services.fsrs_community import config_pair
from bot.core.services.outbox import AlertsTx, Outbox
from bot.core.services.practice import Practice
from bot.core.services.rounds import Rounds
from bot.core.units import (
    UnitsOfWork,
    WithAnswers,
    WithCommunities,
    WithFsrs,
    WithLinks,
    WithMembers,
    WithOutbox,
    WithPlatform,
)
from bot.core.values import (
    AlreadyOpen,
    ChannelRef,
    CommunityRef,
    ConfigCard,
    ConfirmForget,
    Forgotten,
    Notice,
    QuestionCard,
    SuggestionDecided,
    SuggestionQueue,
    UserRef,
    letter,
)

log = logging.getLogger(__name__)

# What the store notes when the bot is removed from a community: whether the removal paused its
# rounds (an invitation back resumes them) or an admin had paused them before (they stay paused).
REMOVAL_PAUSED = "paused-by-removal"
ADMIN_PAUSED = "paused-before"


class CommunityAdminPort(
    AlertsTx,
    FlaggedTx,
    WithCommunities,
    WithMembers,
    WithAnswers,
    WithOutbox,
    WithPlatform,
    WithLinks,
    WithFsrs,
    Protocol,
):
    """The features CommunityAdmin's units of work touch."""


class CommunityAdmin(EngineBase[CommunityAdminPort]):
    """/forget-me, /config and the export."""

    def __init__(
        self,
        shared: Shared,
        store: UnitsOfWork[CommunityAdminPort],
        rounds: Rounds,
        outbox: Outbox,
        boards: Boards,
        practice: Practice,
    ) -> None:
        super().__init__(shared, store)
        self.rounds = rounds
        self.outbox = outbox
        self.boards = boards
        self.practice = practice

    # --------------------------------------------------------- forget, config

    def forget_me(self, user: UserRef, confirm: bool = False) -> ConfirmForget | Forgotten:
        """Delete a user's data in this community, only once they confirm. A daily round they
        answered that is still open keeps only a salted hash of who they were, so that their
        first answer stays final; it goes when the round closes."""
        name = clean_name(user.display_name)
        now = self.now()
        with self.store.write() as tx:
            community = tx.communities.find_community(user.platform, user.community_id)
            member_id = tx.members.find_member(community.id, user.user_id) if community else None
            answers = 0 if member_id is None else tx.answers.answer_count(member_id)
            if not confirm:
                return ConfirmForget(user=name, answers=answers)
            if member_id is not None:
                tx.members.mark_forgotten(tx.members.open_daily_answered_by(member_id, now), self._forget_key(user))
                tx.members.delete_member(member_id, wording.FORGOTTEN_MEMBER)
            if community is not None:  # someone who only asked for demos has no member row
                tx.members.forget_user(community.id, user.user_id, wording.FORGOTTEN_MEMBER)
                # every link they were sent stops opening
                self._revoke_links(tx, community.id, user, ("member", "admin"))
        log.info("forgot a member of %s/%s (%s answers)", user.platform, user.community_id, answers)
        return Forgotten(user=name, answers_deleted=answers)

    def config(
        self,
        community: CommunityRef,
        key: str | None = None,
        value: str | None = None,
        admin: UserRef | None = None,
        asker: UserRef | None = None,
    ) -> ConfigCard:
        """Show the community's settings (and what an admin should know), or change one. The
        admin page's link is in the card only for `admin` (the member asking, when the platform
        says they may configure), and names them: a member who may only look never gets it,
        whichever platform asked. `asker` without `admin`: the platform says the member asking
        may not configure, so an admin link they were sent before is revoked."""
        with self.store.write() as tx:
            current = self._community(tx, community)
            link = self._admin_link_for(tx, current.id, admin, asker)
            alerts = tuple(self.outbox.alerts(tx, tx.outbox.undelivered(current.id)))
            alerts += self.boards.flag_alerts(tx, current.id)
            if key is None:
                return ConfigCard(
                    community=current.name,
                    settings=(*current.as_pairs(), config_pair(tx, current.id)),
                    alerts=alerts,
                    link=link,
                )
            updated = tx.communities.change_setting(current.id, parse_setting(key, value))
            fsrs = config_pair(tx, current.id)
        return ConfigCard(
            community=updated.name,
            settings=(*updated.as_pairs(), fsrs),
            changed=key.strip().lower().replace("-", "_"),
            link=link,
        )

    def configure(
        self,
        community: CommunityRef,
        key: str | None = None,
        value: str | None = None,
        admin: UserRef | None = None,
        asker: UserRef | None = None,
    ) -> ConfigCard | QuestionCard | AlreadyOpen | Notice | SuggestionQueue | SuggestionDecided:
        """`/config ...` as typed in chat: show, a setting (short names allowed: time, window),
        pause, resume, post-now (open today's round in the configured channel now), or the
        members' questions: suggestions, approve N, note N TEXT, reject N, remove QUESTION-ID.
        `admin`: the member asking, when they may configure (the settings card then carries
        their admin link); `asker`: who asked (see `config`). `web rotate` revokes every link
        to the community's pages."""
        word = (key or "show").strip().lower()
        if word == "show":
            return self.config(community, admin=admin, asker=asker)
        if word == "web" and (value or "").strip().lower() == "rotate":
            return self.rotate_links(community, admin)
        if word == "pause":
            return self.config(community, "paused", "on", admin, asker)
        if word == "resume":
            return self.config(community, "paused", "off", admin, asker)
        if word in ("post-now", "post_now", "postnow"):
            with self.store.read() as tx:
                current = tx.communities.find_community(community.platform, community.community_id)
            if current is None or current.channel_id is None:
                return Notice(wording.NO_CHANNEL_SET)
            return self.rounds.open_daily(ChannelRef(community.platform, community.community_id, current.channel_id))
        if word in ("suggestions", "approve", "reject", "note", "remove"):
            return self._queue_command(community, word, value)
        return self.config(community, CONFIG_ALIASES.get(word, word), value, admin, asker)

    def rotate_links(self, community: CommunityRef, admin: UserRef | None = None) -> ConfigCard:
        """`/config web rotate`: advance the community's link version, so every link to its
        pages signed before (members' and admins') gets 403; the card carries the asking
        admin's new link."""
        with self.store.write() as tx:
            current = self._community(tx, community)
            tx.links.advance_link_version(current.id, "")
            link = self._admin_link_for(tx, current.id, admin, None)
            fsrs = config_pair(tx, current.id)
        log.info("rotated the web links of %s/%s", community.platform, community.community_id)
        return ConfigCard(community=current.name, settings=(*current.as_pairs(), fsrs), changed="web_links", link=link)

    def config_refused(self, user: UserRef, refusal: str) -> Notice:
        """The platform refused `user` a /config (they may not configure): the refusal, and
        any admin link they were sent before stops opening (their own member link still does)."""
        with self.store.write() as tx:
            community = tx.communities.find_community(user.platform, user.community_id)
            if community is not None:
                self._admin_link_for(tx, community.id, None, user)
        return Notice(refusal)

    def _admin_link_for(
        self, tx: CommunityAdminPort, community_id: int, admin: UserRef | None, asker: UserRef | None
    ) -> str | None:
        """The admin link for `admin`; without one, `asker` may not configure: their earlier
        admin link is revoked (a member who never had one changes nothing)."""
        if admin is not None:
            return self._admin_link(admin, tx, community_id)
        if asker is not None and self._revoke_links(tx, community_id, asker, ("admin",)):
            log.info("revoked an admin link in %s/%s: the member lost the right", asker.platform, asker.community_id)
        return None

    def _queue_command(
        self, community: CommunityRef, word: str, value: str | None
    ) -> SuggestionQueue | SuggestionDecided | Notice:
        """`/config suggestions`, `/config approve|reject N`, `/config note N TEXT`,
        `/config remove QUESTION-ID`."""
        if word == "suggestions":
            return self.practice.suggestion_queue(community)
        target, _, rest = (value or "").strip().partition(" ")
        if word == "remove":
            if not target:
                raise InvalidInput(wording.SAY_WHICH_QUESTION)
            return self.practice.remove_question(community, target)
        number = ascii_int(target.lstrip("#"))
        if number is None:
            raise InvalidInput(wording.say_which_suggestion(word))
        with self.store.read() as tx:  # the number members and admins see is the community's own
            found = tx.communities.find_community(community.platform, community.community_id)
            suggestion_id = tx.suggestions.suggestion_by_number(found.id, number) if found else None
        if suggestion_id is None:
            raise NotFound(wording.no_such_suggestion(number))
        return self.practice.decide_suggestion(community, suggestion_id, word, rest.strip() or None)

    # ------------------------------------------------- removed and invited back

    @staticmethod
    def _removal_key(community: CommunityRef) -> str:
        return f"removed:{community.platform}:{community.community_id}"[:100]

    def bot_removed(self, community: CommunityRef) -> ConfigCard:
        """The bot was removed (a Discord server kicked it, a Slack workspace uninstalled it):
        the community's rounds pause, nothing is deleted, and the store notes whether this
        removal paused them or an admin had already, so that an invitation back resumes only
        what the removal paused."""
        now = self.now()
        key = self._removal_key(community)
        with self.store.write() as tx:
            current = self._community(tx, community)
            if not current.paused:
                current = tx.communities.set_paused(current.id, True)
                tx.platform.state_put(key, REMOVAL_PAUSED, now)
            elif tx.platform.state_get(key) != REMOVAL_PAUSED:
                tx.platform.state_put(key, ADMIN_PAUSED, now)
        log.info("removed from %s/%s: paused", community.platform, community.community_id)
        return ConfigCard(community=current.name, settings=current.as_pairs(), changed="paused")

    def bot_returned(self, community: CommunityRef) -> ConfigCard:
        """The bot was invited back (or joins for the first time): rounds resume only when its
        removal paused them; a community an admin had paused stays paused."""
        now = self.now()
        key = self._removal_key(community)
        with self.store.write() as tx:
            current = self._community(tx, community)
            resumed = current.paused and tx.platform.state_get(key) == REMOVAL_PAUSED
            if resumed:
                current = tx.communities.set_paused(current.id, False)
            if tx.platform.state_get(key):
                tx.platform.state_put(key, "", now)
        log.info(
            "back in %s/%s: %s",
            community.platform,
            community.community_id,
            "resumed" if resumed else ("still paused by an admin" if current.paused else "running"),
        )
        return ConfigCard(community=current.name, settings=current.as_pairs(), changed="paused" if resumed else None)

    def communities(self) -> list[tuple[CommunityRef, CommunityConfig]]:
        """Every community the bot knows, with its settings (for the scheduler)."""
        with self.store.read() as tx:
            return tx.communities.all()

    def export_rows(self, community: CommunityRef) -> list[dict[str, object]]:
        """Every answer in a community, one dict each (for CSV export); choices as shown."""
        with self.store.read() as tx:
            config = tx.communities.find_community(community.platform, community.community_id)
            if config is None:
                raise NotFound(wording.no_community_on(community.platform, community.community_id))
            rows = tx.answers.export(config.id)
        return [
            {
                "answered_at": r.answered_at.isoformat(),
                "week": r.week,
                "user_id": r.user_id,
                "user": r.display_name,
                "kind": r.kind,
                "question": r.question_id,
                "choice": letter(r.choice),
                "correct": r.correct,
                "points": r.points,
            }
            for r in rows
        ]
