"""A seeded synthetic corpus and questions for experiment tests and the benchmark: sentences
of random words, each question a sentence's first words with that sentence as its gold."""

from __future__ import annotations

import random

from evalsets.pure.scoring import grid


def corpus(documents: int = 10, sentences: int = 400, seed: int = 0) -> dict[str, str]:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(3000)]
    return {
        f"d{j}.txt": "".join(
            " ".join(rng.choice(words) for _ in range(12)) + ".\n" for _ in range(sentences)
        )
        for j in range(documents)
    }


def questions(texts: dict[str, str], count: int, seed: int = 0) -> list[grid.Question]:
    rng = random.Random(seed)
    names = sorted(texts)
    out = []
    for i in range(count):
        source = names[i % len(names)]
        text = texts[source]
        start = text.index("\n", rng.randrange(0, len(text) - 200)) + 1
        end = text.index("\n", start)
        out.append(grid.Question(f"q{i}", text[start : start + 60], ((source, start, end, 2),)))
    return out
