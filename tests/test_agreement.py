"""Chance-corrected agreement (evalsets.pure.agreement) against published worked examples."""

from __future__ import annotations

import pytest

from evalsets.pure.agreement import cohen_kappa, krippendorff_alpha


def test_cohens_kappa_matches_the_textbook_two_by_two_example():
    # 50 units: yes/yes 20, yes/no 5, no/yes 10, no/no 15 -> observed 0.7, chance 0.5.
    pairs = [("y", "y")] * 20 + [("y", "n")] * 5 + [("n", "y")] * 10 + [("n", "n")] * 15
    assert cohen_kappa(pairs) == pytest.approx(0.4)


def test_krippendorffs_alpha_matches_his_nominal_example_for_two_coders():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section A: 0.692.
    first, second = "aabbdcccedda", "babbbccceddd"
    assert krippendorff_alpha(list(zip(first, second, strict=True))) == pytest.approx(
        0.692, abs=5e-4
    )


def test_alpha_leaves_out_units_with_one_value_and_handles_three_coders():
    assert krippendorff_alpha([("a", "a", "a"), ("b", "b"), ("c",)]) == pytest.approx(1.0)
    assert krippendorff_alpha([("a", "b", "a"), ("b", "b", "b"), ("a",)]) < 1.0


def test_agreement_is_undefined_when_every_value_is_the_same_or_nothing_was_rated():
    assert cohen_kappa([(2, 2), (2, 2)]) is None
    assert cohen_kappa([]) is None
    assert krippendorff_alpha([(2, 2), (2, 2)]) is None
    assert krippendorff_alpha([]) is None


def test_perfect_agreement_on_varied_values_is_one_and_systematic_disagreement_is_negative():
    assert cohen_kappa([(0, 0), (1, 1), (2, 2)]) == pytest.approx(1.0)
    assert cohen_kappa([(0, 1), (1, 0)]) < 0
    assert krippendorff_alpha([(0, 1), (1, 0)]) < 0
