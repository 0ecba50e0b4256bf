"""Chance-corrected agreement on categories: Cohen's kappa for two raters, Krippendorff's
alpha (nominal) for any number with gaps.

Both answer None where they are undefined: when every value given falls in one category,
chance already explains all the agreement there is, and a number would mislead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from itertools import permutations


def cohen_kappa(pairs: Sequence[tuple[Hashable, Hashable]]) -> float | None:
    """Cohen's kappa of two raters over ``pairs`` (one ``(a, b)`` per unit both rated)."""
    if not pairs:
        return None
    n = len(pairs)
    observed = sum(1 for a, b in pairs if a == b) / n
    first = Counter(a for a, _ in pairs)
    second = Counter(b for _, b in pairs)
    expected = sum(first[c] * second[c] for c in first) / (n * n)
    if expected == 1:
        return None
    return (observed - expected) / (1 - expected)


def krippendorff_alpha(units: Iterable[Sequence[Hashable]]) -> float | None:
    """Krippendorff's alpha, nominal, over ``units`` (each the values its raters gave; a unit
    with fewer than two values carries no pair and is left out)."""
    coincidences: Counter = Counter()
    for values in units:
        m = len(values)
        if m < 2:
            continue
        for a, b in permutations(values, 2):
            coincidences[(a, b)] += 1 / (m - 1)
    totals: Counter = Counter()
    for (a, _), weight in coincidences.items():
        totals[a] += weight
    n = sum(totals.values())
    disagreeing = sum(w for (a, b), w in coincidences.items() if a != b)
    chance = sum(totals[a] * totals[b] for a in totals for b in totals if a != b)
    if chance == 0:
        return None
    return 1 - (n - 1) * disagreeing / chance
