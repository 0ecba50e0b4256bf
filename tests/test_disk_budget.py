"""What a disk cache deletes to fit its budget (evalsets.pure.diskbudget): the page images and
the stored renditions both go through it."""

from __future__ import annotations

from evalsets.pure.diskbudget import evict_least_recent


def _evict(stored, total, target, missing=()):
    removed = []

    def remove(entry):
        if entry in missing:
            return False
        removed.append(entry)
        return True

    return evict_least_recent(stored, total, target, remove), removed


def test_the_least_recently_read_go_first_until_what_is_left_fits():
    stored = [(30.0, 100, "new"), (10.0, 100, "old"), (20.0, 100, "middle")]
    freed, removed = _evict(stored, total=300, target=150)
    assert removed == ["old", "middle"]
    assert freed == 200


def test_nothing_goes_when_the_cache_already_fits():
    assert _evict([(1.0, 100, "a")], total=100, target=100) == (0, [])


def test_it_stops_as_soon_as_the_target_is_reached():
    stored = [(1.0, 50, "a"), (2.0, 50, "b"), (3.0, 50, "c")]
    assert _evict(stored, total=150, target=100) == (50, ["a"])


def test_an_entry_another_process_removed_first_frees_nothing_so_the_next_goes():
    stored = [(1.0, 100, "gone"), (2.0, 100, "b"), (3.0, 100, "c")]
    freed, removed = _evict(stored, total=300, target=200, missing={"gone"})
    assert removed == ["b"]
    assert freed == 100


def test_bytes_counted_in_the_total_but_not_stored_are_never_removed():
    # renditions: the one just built counts against the budget but is not offered
    stored = [(1.0, 100, "a"), (2.0, 100, "b")]
    freed, removed = _evict(stored, total=500, target=100)
    assert removed == ["a", "b"]
    assert freed == 200
