"""The repeat rules of `questions lint`: near-duplicate questions (TF-IDF cosine of what they
ask and answer) and a key that alone echoes its prompt (a rare word, or an API of the prompt's
family, that no distractor carries)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from bot.core.bank.giveaways import MIN_LENGTH_RANK_BANK
from bot.core.bank.reviewed import REVIEWED_ECHOES
from bot.core.bank.values import Question, normalise
from bot.core.bank.words import terms

# Near-duplicates: TF-IDF cosine of prompt + correct choice + its why (see near_duplicates()).
# Calibrated on the bank before issue 12's rewrite (tests/data/similarity_bank_28ffca3.json):
# the repeats its review found score 0.304 to 0.76; 99% of all pairs score below 0.28.
NEAR_DUPLICATE_THRESHOLD = 0.30
# An echoed word counts only if it is rare in the bank: a word in more than this share of the
# questions (checkpoint, memory, backward) is the subject's vocabulary, not a tell. Banks smaller
# than MIN_LENGTH_RANK_BANK have no common words.
MAX_ECHO_WORD_SHARE = 0.10


def similarity_text(question: Question) -> str:
    """What near-duplicates are compared on: the prompt, the correct choice and its why."""
    right = question.choices[question.answer_index]
    return f"{question.prompt} {right.text} {right.why}"


def near_duplicates(
    questions: Sequence[Question], threshold: float = NEAR_DUPLICATE_THRESHOLD
) -> list[tuple[float, Question, Question]]:
    """Pairs whose TF-IDF cosine similarity reaches the threshold, most similar first.

    Term weights are counts times log(1 + N / document frequency) over these questions, so
    words that every question uses (checkpoint, memory, backward) weigh little and the rare
    words two questions share (autocast, no_grad, attention core) weigh much."""
    counted = [terms(similarity_text(q)) for q in questions]
    frequency: Counter[str] = Counter(word for counts in counted for word in counts)
    idf = {word: math.log(1 + len(questions) / n) for word, n in frequency.items()}
    vectors = []
    for counts in counted:
        vector = {word: n * idf[word] for word, n in counts.items()}
        norm = math.sqrt(sum(w * w for w in vector.values())) or 1.0
        vectors.append({word: w / norm for word, w in vector.items()})
    found = []
    for i, a in enumerate(vectors):
        for j in range(i + 1, len(vectors)):
            b = vectors[j]
            small, large = (a, b) if len(a) <= len(b) else (b, a)
            score = sum(w * large.get(word, 0.0) for word, w in small.items())
            if score >= threshold and normalise(questions[i].prompt) != normalise(questions[j].prompt):
                found.append((score, questions[i], questions[j]))
    return sorted(found, key=lambda item: -item[0])


_ECHO_STOPWORDS = frozenset(
    "about above again against all almost already always another anything anyway around away back both "
    "case come does done down during either else enough even ever every far few get gets give given goes "
    "going got here just least less like made make makes many may might much must need needs never new "
    "now off often once other others over own part per quite rather really roughly said say says see "
    "seen several since some still such take takes through thus too twice under unless until upon used "
    "uses using very way ways well whatever whether while whole within without yes yet".split()
)
# API-like names: dotted (torch.cuda.empty_cache), snake_case (use_reentrant) or CamelCase
# (MemTracker); what an API's "family" is made of are its name's parts less these generic ones.
_API_RE = re.compile(
    r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+|[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]+|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*"
)
_API_GENERIC = frozenset(
    "torch cuda nn utils functional distributed tools autograd graph config functorch inductor py org "
    "pytorch aten ops default".split()
)


def _echo_terms(text: str) -> set[str]:
    """Content words as the echo rule reads them: identifiers split into their parts
    (reset_peak_memory_stats -> reset, peak, memory, stat), no numbers, no function words."""
    return {w for w in terms(re.sub(r"[._]", " ", text)) if len(w) > 2 and not w.isdigit() and w not in _ECHO_STOPWORDS}


def _api_names(text: str) -> list[str]:
    return [m for m in _API_RE.findall(text) if not re.fullmatch(r"[\d.]+", m)]


def _api_parts(name: str) -> set[str]:
    parts = re.split(r"[._]|(?<=[a-z])(?=[A-Z])", name)
    return {p.lower() for p in parts if p and p.lower() not in _API_GENERIC and not p.isdigit()}


def echo_findings(question: Question, common: frozenset[str] = frozenset()) -> list[str]:
    """How the correct choice echoes the prompt where no distractor does, as the words lint
    names: a rare content word the prompt and the key share and no distractor has, and an API
    name the key alone carries from the prompt's family (a name sharing a part with one the
    prompt names, e.g. reset_peak_memory_stats for max_memory_allocated)."""
    right = question.choices[question.answer_index]
    wrong = [c for c in question.choices if not c.correct]
    prompt = _echo_terms(question.prompt)
    others: set[str] = set()
    for choice in wrong:
        others |= _echo_terms(choice.text)
    found = sorted((prompt & _echo_terms(right.text)) - others - common)
    family: set[str] = set()
    for name in _api_names(question.prompt):
        family |= _api_parts(name)
    if family:
        kin = [name for name in _api_names(right.text) if _api_parts(name) & family]
        if kin and not any(_api_parts(n) & family for c in wrong for n in _api_names(c.text)):
            found.extend(name for name in kin if name not in found)
    return found


def common_echo_words(questions: Sequence[Question]) -> frozenset[str]:
    """Words in more than MAX_ECHO_WORD_SHARE of the questions (prompt and choices): the
    subject's own vocabulary, which no reader takes as a tell."""
    if len(questions) < MIN_LENGTH_RANK_BANK:
        return frozenset()
    counts: Counter[str] = Counter()
    for q in questions:
        counts.update(_echo_terms(" ".join([q.prompt, *(c.text for c in q.choices)])))
    return frozenset(w for w, n in counts.items() if n > MAX_ECHO_WORD_SHARE * len(questions))


def echo_problems(questions: Sequence[Question], reviewed: dict[str, frozenset[str]] | None = None) -> list[str]:
    """A problem per question whose key echoes its prompt (echo_findings()), less the words a
    reviewer recorded for it in reviewed-echoes.yaml."""
    reviewed = reviewed or {}
    common = common_echo_words(questions)
    problems = []
    for q in questions:
        words = [w for w in echo_findings(q, common) if w not in reviewed.get(q.id, frozenset())]
        if words:
            named = ", ".join(f"'{w}'" for w in words)
            problems.append(
                f"{q.source}: the correct choice of '{q.id}' alone echoes the prompt ({named}); "
                f"reword a distractor or the key, or record why it is fair in {REVIEWED_ECHOES}"
            )
    return problems
