"""The limited child runner stops real misbehaving children at each of its budgets, and the
caller lives to report a readable reason. No Django: these run as plain pytest tests."""

from __future__ import annotations

import pytest

from evalsets.pure.parsers.limited import JobError, LimitExceeded, run_limited

JOBS = "tests.limited_jobs"


def test_a_job_returns_its_bytes_and_streams_progress_to_the_caller():
    calls: list[tuple[int, int]] = []
    answer = run_limited(
        f"{JOBS}:echo",
        b"\x00payload\n\xff",
        args={"prefix": "> "},
        timeout_s=30,
        progress=lambda done, total: calls.append((done, total)),
    )
    assert answer == b"> \x00payload\n\xff"
    assert calls == [(1, 2), (2, 2)]


def test_a_hanging_job_is_stopped_at_its_wall_clock_deadline():
    calls: list[tuple[int, int]] = []
    with pytest.raises(LimitExceeded) as caught:
        run_limited(
            f"{JOBS}:hang",
            b"",
            timeout_s=1.5,
            progress=lambda done, total: calls.append((done, total)),
            what="Drawing the page",
        )
    assert (caught.value.code, caught.value.limit) == ("timeout", "wall_clock")
    assert caught.value.reason == "Drawing the page took longer than 1.5 s and was stopped."
    assert calls == [(1, 3)]


def test_a_job_that_spins_is_stopped_by_its_processor_time_budget():
    with pytest.raises(LimitExceeded) as caught:
        run_limited(f"{JOBS}:spin", b"", timeout_s=60, cpu_s=1, what="Drawing the page")
    assert (caught.value.code, caught.value.limit) == ("timeout", "cpu")
    assert caught.value.reason == (
        "Drawing the page used more than 1 s of processor time and was stopped."
    )


def test_a_job_that_allocates_without_end_is_stopped_by_its_memory_budget():
    with pytest.raises(LimitExceeded) as caught:
        run_limited(f"{JOBS}:hog", b"", timeout_s=30, memory_mb=300, what="Rendering")
    assert (caught.value.code, caught.value.limit) == ("out_of_memory", "memory")
    assert caught.value.reason == "Rendering needed more than 300 MB of memory and was stopped."


def test_an_answer_over_the_output_cap_is_refused_as_too_large():
    with pytest.raises(LimitExceeded) as caught:
        run_limited(
            f"{JOBS}:flood",
            b"",
            args={"size": 2 * 1024 * 1024},
            timeout_s=30,
            max_output_bytes=1024 * 1024,
            what="Rendering",
        )
    assert (caught.value.code, caught.value.limit) == ("too_large", "output")
    assert caught.value.reason == "Rendering made more than 1 MB of output and was stopped."


def test_an_answer_at_the_output_cap_is_returned_whole():
    answer = run_limited(
        f"{JOBS}:flood", b"", args={"size": 1024 * 1024}, timeout_s=30, max_output_bytes=1 << 20
    )
    assert len(answer) == 1024 * 1024


def test_a_jobs_own_error_arrives_with_its_code_and_reason_and_is_not_a_limit():
    with pytest.raises(JobError) as caught:
        run_limited(f"{JOBS}:refuse", b"", timeout_s=30)
    assert not isinstance(caught.value, LimitExceeded)
    assert caught.value.code == "too_large"
    assert caught.value.reason == "This picture is wider than the limit of 10 pixels."


def test_a_bug_in_a_job_arrives_as_failed_with_the_exception_for_the_logs():
    with pytest.raises(JobError) as caught:
        run_limited(f"{JOBS}:stumble", b"", timeout_s=30, what="Rendering")
    assert caught.value.code == "failed"
    assert caught.value.reason == "Rendering failed."
    assert caught.value.detail == "ValueError: a bug in the job"


def test_a_child_that_dies_without_answering_is_reported_as_failed():
    with pytest.raises(JobError) as caught:
        run_limited(f"{JOBS}:crash", b"", timeout_s=30, what="Rendering")
    assert caught.value.code == "failed"
    assert caught.value.reason == "Rendering stopped unexpectedly."
    assert "status 13" in caught.value.detail


def test_only_a_function_marked_as_a_job_may_be_run():
    with pytest.raises(TypeError):
        run_limited(f"{JOBS}:unmarked", b"", timeout_s=5)
    with pytest.raises(TypeError):
        run_limited("os:system", b"", timeout_s=5)


def test_an_answer_past_the_cap_is_cut_off_by_the_parent_even_if_the_child_does_not_check():
    # The child refuses a too-large answer itself; the parent's own count is the backstop for a
    # job that writes to stdout directly, so it is tested through a job that does just that.
    with pytest.raises(LimitExceeded) as caught:
        run_limited(
            f"{JOBS}:scribble", b"", args={"size": 4 << 20}, timeout_s=30, max_output_bytes=1024
        )
    assert (caught.value.code, caught.value.limit) == ("too_large", "output")


def test_a_job_stuck_on_one_step_is_stopped_at_the_step_deadline_however_long_its_budget():
    with pytest.raises(LimitExceeded) as caught:
        run_limited(
            f"{JOBS}:pages",
            b"",
            args={"seconds": [0, 0, 30]},
            timeout_s=60,
            step=(1.0, "page"),
            what="Parsing",
        )
    assert (caught.value.code, caught.value.limit) == ("timeout", "step")
    assert caught.value.reason == (
        "Parsing spent longer than 1 s on one page (page 3) and was stopped."
    )


def test_many_quick_steps_may_together_take_longer_than_one_step_is_allowed():
    answer = run_limited(
        f"{JOBS}:pages", b"", args={"seconds": [0.3] * 6}, timeout_s=30, step=(1.0, "page")
    )
    assert answer == b"read 6 pages"


def test_the_step_deadline_starts_at_the_first_report_not_before_it():
    answer = run_limited(
        f"{JOBS}:slow_start", b"", args={"pause": 1.5}, timeout_s=30, step=(1.0, "page")
    )
    assert answer == b"opened"
