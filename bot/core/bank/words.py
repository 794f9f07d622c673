"""Words as the bank's text rules count them: casefolded, without function words, lightly
stemmed, a few synonyms folded together. The hint, near-duplicate and echo rules all read
text through terms()."""

from __future__ import annotations

import re
from collections import Counter

_WORD_RE = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    "a after also an and any are as at be been before but by can did do does each for from how if in "
    "into is it its more most no not of on one only or same should so than that the their them then "
    "there these they this those to was were what when where which who why will with would you your".split()
)
_SYNONYMS = {
    "bf16": "bfloat16",
    "fp16": "float16",
    "fp32": "float32",
    "attn": "attention",
    "recomputation": "recompute",
    "rematerialization": "recompute",
    "rebuild": "recompute",
    "rebuilt": "recompute",
    "rerun": "recompute",
    "reruns": "recompute",
}
_SUFFIXES = ("ations", "ation", "ing", "ed", "es", "s")


def terms(text: str) -> Counter[str]:
    """Word counts after casefolding, dropping stop words and a light stemming (no_grad -> nograd)."""
    counts: Counter[str] = Counter()
    for word in _WORD_RE.findall(text.casefold().replace("_", "")):
        if word in _STOPWORDS:
            continue
        word = _SYNONYMS.get(word, word)
        for suffix in _SUFFIXES:
            if len(word) - len(suffix) >= 4 and word.endswith(suffix):
                word = word[: -len(suffix)]
                break
        counts[word] += 1
    return counts
