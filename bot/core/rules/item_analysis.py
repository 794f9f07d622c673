"""Item analysis: what the answers people gave say about each question of the bank.

Per question: how many answered, the share right, the discrimination (the point-biserial
correlation of being right with the member's accuracy on the other questions, the rest-score)
and how often each choice was picked; and flags an editor should look at:

- wrong-key: few are right and the strongest members (the top third by rest-score) mostly
  pick one particular wrong choice: the key is likely wrong, or the prompt misleads;
- too-easy: nearly everyone is right, so the question teaches little;
- dead-distractor: a wrong choice nobody picks is no distractor at all;
- unanswered: a question in the bank that nobody has answered yet.

Every figure comes from sums the store keeps in each answer's own transaction (`tally` says
what they are): per question and choice, answers and right ones; per member and question and
choice, the same; per member, all their answers and right ones. The flags read the first, a
few rows a community, and the members' picks of only the questions few get right; `analyse`
computes the same sums from every answer (the recount). Members tied on rest-score are ranked
by member key, not by when they answered, so that kept figures and recount agree exactly.

Pure: plain rows in, plain values out. Choices are indexes in the bank file's order (the store
maps a shuffled display back before the rows get here).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from bot.core.bank import Question
from bot.core.records import AnswerRow, ChoiceCount, MemberPick, TopThird

__all__ = [
    "AnswerRow",
    "ChoiceCount",
    "ItemStats",
    "MemberPick",
    "TopThird",
    "TopThirds",
    "analyse",
    "analyse_kept",
    "flags_kept",
    "from_kept",
    "off_pool",
    "judge",
    "point_biserial",
    "still_judged",
    "tally",
    "wanted_picks",
]

MIN_ANSWERS = 10  # no flag (but unanswered) before a question has this many answers
TOO_EASY_SHARE = 0.95  # share right at or above which a question is too easy
WRONG_KEY_MAX_SHARE = 0.4  # "few right": share right at or below this
WRONG_KEY_TOP_SHARE = 0.5  # the top third picks one wrong choice at least this often
WRONG_KEY_MIN_TOP = 3  # observations in the top third needed to judge the strongest members

WRONG_KEY = "wrong-key"
TOO_EASY = "too-easy"
DEAD_DISTRACTOR = "dead-distractor"
UNANSWERED = "unanswered"


@dataclass(frozen=True)
class ItemStats:
    """One question's item analysis: how often it is answered right, how it discriminates, its picks."""

    question_id: str
    key: int  # the correct choice's index in the bank file
    answers: int
    share_correct: float | None  # None without answers
    discrimination: float | None  # None when it cannot be computed (too few, no spread)
    pick_rates: tuple[float, ...]  # per choice, file order; zeros without answers
    flags: tuple[str, ...]
    suspect_choice: int | None = None  # wrong-key: the wrong choice the strongest members pick
    dead_choices: tuple[int, ...] = ()  # dead-distractor: the choices nobody picks
    # The question's difficulty rating (logits; bot/core/rules/rating.py), the same number adaptive
    # practice picks by: None when the caller has no ratings.
    difficulty: float | None = None

    def describe(self, texts: Sequence[str] = ()) -> list[str]:
        """One plain sentence per flag, for an admin. With the choices' `texts` (file order),
        choices are named by their text, since every round shows them in its own order and a
        letter would not be the one members saw; without them, by their number in the file."""

        def letter(index: int) -> str:
            if 0 <= index < len(texts):
                return f'"{texts[index][:40]}"'
            return f"choice {file_number(index)}"

        lines = []
        for flag in self.flags:
            if flag == WRONG_KEY and self.suspect_choice is not None:
                lines.append(
                    f"{self.question_id}: likely wrong key: {_pct(self.share_correct)} right, and the strongest "
                    f"members mostly pick {letter(self.suspect_choice)} instead of {letter(self.key)}"
                )
            elif flag == TOO_EASY:
                lines.append(f"{self.question_id}: too easy: {_pct(self.share_correct)} of {self.answers} right")
            elif flag == DEAD_DISTRACTOR:
                choices = ", ".join(letter(i) for i in self.dead_choices)
                lines.append(f"{self.question_id}: nobody picks {choices} in {self.answers} answers")
            elif flag == UNANSWERED:
                lines.append(f"{self.question_id}: nobody has answered it yet")
        return lines


def file_number(index: int) -> str:
    """A choice's number in the bank file (1 = first). The analysis never names a choice by a
    letter: each round shows its choices shuffled, so a file-order letter differs from the
    letter members saw (one letter for a choice everywhere a member sees it)."""
    return str(index + 1)


# Said once above the CLI's table.
PICKS_NOTE = (
    "picks: each choice's share by its number in the bank file (* the key); rounds show the "
    "choices shuffled, so these are not the letters members saw, and the notes name choices by their text."
)


def _pct(share: float | None) -> str:
    return "-" if share is None else f"{share:.0%}"


def point_biserial(right: Sequence[bool], scores: Sequence[float]) -> float | None:
    """Pearson correlation of a 0/1 outcome with a score; None without spread in either."""
    n = len(right)
    if n < 2 or n != len(scores):
        return None
    xs = [1.0 if r else 0.0 for r in right]
    mean_x, mean_y = sum(xs) / n, sum(scores) / n
    cov = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, scores, strict=True))
    var_x = sum((x - mean_x) ** 2 for x in xs)
    var_y = sum((y - mean_y) ** 2 for y in scores)
    if var_x == 0 or var_y < 1e-12:
        return None
    return cov / math.sqrt(var_x * var_y)


def tally(rows: Iterable[AnswerRow]) -> tuple[list[ChoiceCount], list[MemberPick]]:
    """From every answer, the figures the store keeps answer by answer (the recount)."""
    counts: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0, 0])
    picks: dict[tuple[str, str, int], list[int]] = defaultdict(lambda: [0, 0])
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        for found in (counts[(row.question_id, row.choice)], picks[(row.member, row.question_id, row.choice)]):
            found[0] += 1
            found[1] += row.correct
        totals[row.member][0] += 1
        totals[row.member][1] += row.correct
    return (
        [ChoiceCount(q, c, n, r) for (q, c), (n, r) in counts.items()],
        [MemberPick(m, q, c, n, r, *totals[m]) for (m, q, c), (n, r) in picks.items()],
    )


def analyse(
    rows: Iterable[AnswerRow],
    questions: Sequence[Question],
    min_answers: int = MIN_ANSWERS,
    ratings: Mapping[str, float] | None = None,
) -> list[ItemStats]:
    """Stats and flags for every question of the bank, in bank order, from every answer.
    Answers to questions no longer in the bank are left out, of the items and of the members'
    accuracy alike. `ratings`: each question's difficulty rating (the one practice uses)."""
    counts, picks = tally(rows)
    return from_kept(questions, counts, picks, min_answers, ratings, discriminate=True)


def from_kept(
    questions: Sequence[Question],
    counts: Iterable[ChoiceCount],
    picks: Iterable[MemberPick],
    min_answers: int = MIN_ANSWERS,
    ratings: Mapping[str, float] | None = None,
    discriminate: bool = False,
) -> list[ItemStats]:
    """`analyse_kept` with the members' picks read: those of `wanted_picks`'s questions (or of
    every question, with `discriminate`) and of every answered question no longer in the pool."""
    by_question: dict[str, list[MemberPick]] = defaultdict(list)
    for pick in picks:
        by_question[pick.question_id].append(pick)
    pool = {q.id for q in questions}
    outside = off_pool(p for q, found in by_question.items() if q not in pool for p in found)
    return analyse_kept(
        questions, counts, lambda qid: by_question.get(qid, []), outside, min_answers, ratings, discriminate
    )


def off_pool(picks: Iterable[MemberPick]) -> dict[str, tuple[int, int]]:
    """Per member, (answers, right) to questions no longer in the pool: left out of the rest-score."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for pick in picks:
        out[pick.member][0] += pick.answers
        out[pick.member][1] += pick.correct
    return {member: (n, r) for member, (n, r) in out.items()}


def wanted_picks(
    questions: Sequence[Question], counts: Iterable[ChoiceCount], min_answers: int = MIN_ANSWERS
) -> list[str]:
    """The questions whose members' picks the flags need: enough answers and few right (a
    possible wrong key). The others are judged on their kept counts alone."""
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for count in counts:
        totals[count.question_id][0] += count.answers
        totals[count.question_id][1] += count.correct
    out = []
    for q in questions:
        answers, right = totals.get(q.id, (0, 0))
        if answers >= min_answers and right / answers <= WRONG_KEY_MAX_SHARE:
            out.append(q.id)
    return out


def analyse_kept(
    questions: Sequence[Question],
    counts: Iterable[ChoiceCount],
    picks_of: Callable[[str], Sequence[MemberPick]],
    outside: Mapping[str, tuple[int, int]],
    min_answers: int = MIN_ANSWERS,
    ratings: Mapping[str, float] | None = None,
    discriminate: bool = False,
) -> list[ItemStats]:
    """Stats and flags from the kept figures: `counts` for every question, and the members'
    picks of a question from `picks_of`, read only for the questions `wanted_picks` names
    (every question with `discriminate`, so that each gets its discrimination; without it
    only those have one). `outside`: `off_pool` of the questions no longer in the pool."""
    per_question: dict[str, list[ChoiceCount]] = defaultdict(list)
    for count in counts:
        per_question[count.question_id].append(count)
    wanted = set(wanted_picks(questions, [c for q in questions for c in per_question.get(q.id, [])], min_answers))
    items = []
    for q in questions:
        read = discriminate or q.id in wanted
        items.append(_item(q, per_question.get(q.id, []), picks_of(q.id) if read else None, outside, min_answers))
    if ratings is None:
        return items
    return [replace(item, difficulty=ratings.get(item.question_id)) for item in items]


def _item(
    question: Question,
    counts: list[ChoiceCount],
    picks: Sequence[MemberPick] | None,
    outside: Mapping[str, tuple[int, int]],
    min_answers: int,
    third: TopThird | None = None,
) -> ItemStats:
    key = question.answer_index
    width = len(question.choices)
    answers = sum(c.answers for c in counts)
    if not answers:
        return ItemStats(question.id, key, 0, None, None, (0.0,) * width, (UNANSWERED,))
    chosen = [0] * width
    for count in counts:
        if 0 <= count.choice < width:
            chosen[count.choice] += count.answers
    share = sum(c.correct for c in counts) / answers
    rates = tuple(n / answers for n in chosen)

    observed = _rest_scores(picks, outside) if picks is not None else []
    right: list[bool] = []
    scores: list[float] = []
    for score, pick in observed:
        right += [True] * pick.correct + [False] * (pick.answers - pick.correct)
        scores += [score] * pick.answers
    discrimination = point_biserial(right, scores) if picks is not None else None

    flags: list[str] = []
    suspect: int | None = None
    dead: tuple[int, ...] = ()
    if answers >= min_answers:
        if share > WRONG_KEY_MAX_SHARE:
            suspect = None
        elif third is not None:
            suspect = judge(third.picks, third.top, key, width)
        else:
            suspect = _suspect_choice(observed, key, width)
        if suspect is not None:
            flags.append(WRONG_KEY)
        if share >= TOO_EASY_SHARE:
            flags.append(TOO_EASY)
        dead = tuple(i for i in range(width) if i != key and chosen[i] == 0)
        if dead:
            flags.append(DEAD_DISTRACTOR)
    return ItemStats(question.id, key, answers, share, discrimination, rates, tuple(flags), suspect, dead)


def _rest_scores(
    picks: Sequence[MemberPick], outside: Mapping[str, tuple[int, int]]
) -> list[tuple[float, MemberPick]]:
    """The rest-score: each member's accuracy on every other question still in the pool, beside
    each of their picks here, strongest first (members without other answers left out)."""
    here: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for pick in picks:
        here[pick.member][0] += pick.answers
        here[pick.member][1] += pick.correct
    observed: list[tuple[float, MemberPick]] = []
    for pick in picks:
        gone = outside.get(pick.member, (0, 0))
        rest_n = pick.member_answers - gone[0] - here[pick.member][0]
        rest_r = pick.member_correct - gone[1] - here[pick.member][1]
        if rest_n > 0:
            observed.append((rest_r / rest_n, pick))
    observed.sort(key=lambda item: (-item[0], item[1].member, item[1].choice))
    return observed


def _suspect_choice(observed: list[tuple[float, MemberPick]], key: int, width: int) -> int | None:
    """The wrong choice that most of the strongest third (`observed`, strongest first) picks,
    ahead of the key, if any."""
    size = sum(pick.answers for _, pick in observed)
    top = math.ceil(size / 3)
    picks = [0] * width
    left = top
    for _, pick in observed:
        if not left:
            break
        taken = min(left, pick.answers)
        if 0 <= pick.choice < width:
            picks[pick.choice] += taken
        left -= taken
    return judge(picks, top, key, width)


def judge(picks: Sequence[int], top: int, key: int, width: int) -> int | None:
    """The wrong-key verdict from the strongest third's `top` answers and their `picks` per
    choice: the wrong choice most of them pick, when it is at least half of them and ahead of
    the key; None otherwise."""
    if top < WRONG_KEY_MIN_TOP:
        return None
    counted = [picks[i] if i < len(picks) else 0 for i in range(width)]
    best = max((i for i in range(width) if i != key), key=lambda i: counted[i])
    if counted[best] >= WRONG_KEY_TOP_SHARE * top and counted[best] > counted[key]:
        return best
    return None


def still_judged(third: TopThird, key: int, width: int, changes: int, here: int) -> bool:
    """Whether `judge`'s verdict on `third` is sure to be the same after `changes` more
    answers in the community, `here` of them to this question, and nothing else changed.

    One answer moves one member in the ranking (or adds one answer to it), so it moves each
    choice's count in the top third by at most twice that member's answers to the question,
    and the top's size by at most those answers; a member gives the question at most
    `heaviest` + `here` answers. The verdict holds if no count within those bounds could
    change it."""
    if changes < 0 or here < 0:  # fewer answers than then: something took some out
        return False
    if changes == 0:
        return True
    moved = changes * (third.heaviest + here)
    spread = 2 * moved
    picks = [third.picks[i] if i < len(third.picks) else 0 for i in range(width)]
    if third.top - moved < WRONG_KEY_MIN_TOP:
        return False
    wrong = [i for i in range(width) if i != key]
    suspect = judge(picks, third.top, key, width)
    if suspect is None:
        least_top = WRONG_KEY_TOP_SHARE * (third.top - moved)
        return all(picks[i] + spread < least_top or picks[i] + spread <= picks[key] - spread for i in wrong)
    low = picks[suspect] - spread
    return (
        low >= WRONG_KEY_TOP_SHARE * (third.top + moved)
        and low > picks[key] + spread
        and all(picks[i] + spread < low for i in wrong if i != suspect)
    )


def flags_kept(
    questions: Sequence[Question],
    counts: Iterable[ChoiceCount],
    thirds: Mapping[str, TopThird],
    min_answers: int = MIN_ANSWERS,
    ratings: Mapping[str, float] | None = None,
) -> list[ItemStats]:
    """Stats and flags from the kept counts and, for `wanted_picks`'s questions, their top
    thirds as the store ranks them (`thirds`): the same flags as `analyse`, without the
    discrimination (None: it needs every member's picks)."""
    per_question: dict[str, list[ChoiceCount]] = defaultdict(list)
    for count in counts:
        per_question[count.question_id].append(count)
    items = [_item(q, per_question.get(q.id, []), None, {}, min_answers, thirds.get(q.id)) for q in questions]
    if ratings is None:
        return items
    return [replace(item, difficulty=ratings.get(item.question_id)) for item in items]


class TopThirds:
    """The top thirds last read, per community, with what the community's kept figures were
    then: read again only for the questions whose verdict a later answer could have changed
    (`still_judged`), all of them after a /forget-me or a rebuild (a new `changed` token) or
    when the pool changed. Not locked: two threads may both read, and the later one stays."""

    def __init__(self) -> None:
        # community -> (pool, changed token, question -> (third, community answers, question answers))
        self._kept: dict[
            int, tuple[tuple[tuple[str, int, int], ...], str | None, dict[str, tuple[TopThird, int, int]]]
        ] = {}

    def take(
        self,
        community_id: int,
        questions: Sequence[Question],
        changed: str | None,
        counts: Sequence[ChoiceCount],
        wanted: Iterable[str],
    ) -> tuple[dict[str, TopThird], list[str]]:
        """The thirds of `wanted` still good, and the questions to read again."""
        pool, answered, total = _pool_key(questions), _answers(counts), sum(c.answers for c in counts)
        kept = self._kept.get(community_id)
        good: dict[str, TopThird] = {}
        stale: list[str] = []
        by_id = {q.id: q for q in questions}
        for qid in wanted:
            found = kept[2].get(qid) if kept and kept[0] == pool and kept[1] == changed else None
            question = by_id[qid]
            if found is not None and still_judged(
                found[0],
                question.answer_index,
                len(question.choices),
                total - found[1],
                answered.get(qid, 0) - found[2],
            ):
                good[qid] = found[0]
            else:
                stale.append(qid)
        return good, stale

    def put(
        self,
        community_id: int,
        questions: Sequence[Question],
        changed: str | None,
        counts: Sequence[ChoiceCount],
        read: Iterable[TopThird],
    ) -> None:
        """Remember thirds read with these kept `counts` (read before them, in the same unit of work)."""
        pool, answered, total = _pool_key(questions), _answers(counts), sum(c.answers for c in counts)
        kept = self._kept.get(community_id)
        entries = dict(kept[2]) if kept and kept[0] == pool and kept[1] == changed else {}
        for third in read:
            entries[third.question_id] = (third, total, answered.get(third.question_id, 0))
        self._kept[community_id] = (pool, changed, entries)


def _pool_key(questions: Sequence[Question]) -> tuple[tuple[str, int, int], ...]:
    return tuple(sorted((q.id, q.answer_index, len(q.choices)) for q in questions))


def _answers(counts: Iterable[ChoiceCount]) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for count in counts:
        out[count.question_id] += count.answers
    return out
