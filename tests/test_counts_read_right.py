"""Issue 28: a count a member reads is in the right number ("sqrt with 1 segments" was shown
for a 1- or 2-layer demo; chat allows layers from 1)."""

from __future__ import annotations

import pytest

from bot.core import wording
from demos.checkpoint import theory_for
from demos.models import segments_for

MIB = 1024**2


@pytest.mark.parametrize("layers", [1, 2, 4, 9])
def test_the_theory_line_counts_segments_and_inputs_in_the_right_number(layers: int) -> None:
    text = theory_for(layers, layers * 8 * MIB, 2 * MIB).text
    k = segments_for(layers)
    assert (f"sqrt with {k} segment keeps" if k == 1 else f"sqrt with {k} segments keeps") in text
    assert "1 segments" not in text and "1 inputs" not in text
    assert (f"keeps {k - 1} input plus" if k == 2 else f"keeps {k - 1} inputs plus") in text


def test_a_one_layer_demo_and_a_one_point_answer_read_in_the_singular() -> None:
    assert wording.demo_shape({"model": "blocks", "layers": 1, "tokens": 64, "width": 16}) == (
        ", blocks, 1 layer, 64 tokens x width 16"
    )
    assert wording.demo_shape({"model": "blocks", "layers": 9, "tokens": 64, "width": 16}).startswith(
        ", blocks, 9 layers"
    )
    assert wording.counted(1, "review") == "1 review" and wording.counted(1200, "review") == "1,200 reviews"
