"""Uploaded archives are read within limits, whatever they claim or unpack to.

Each bomb shape (many members, one member compressed a thousand to one, one enormous line, a
zip inside a zip, a directory that lies about sizes) is refused, and tracemalloc's peak while
refusing it stays at a few MB: memory is bounded by the limits, not by what the archive holds.
A large corpus within the limits still imports.
"""

from __future__ import annotations

import io
import json
import tracemalloc
import zipfile
import zlib

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evalsets.models import EvalItem, EvalSet, ImportRecord
from evalsets.pure import archive
from evalsets.pure.archive import ArchiveLimits, ArchiveTooLarge, GuardedZip
from evalsets.pure.formats import beir, guess_format

MB = 1024 * 1024
#: What refusing a bomb may allocate at the peak (the archive's own bytes are not counted).
PEAK_LIMIT = 4 * MB
QRELS = b"query-id\tcorpus-id\tscore\nq1\tdoc1\t1\n"


def _zip(members: dict[str, bytes], *, method: int = zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", method) as zipped:
        for name, data in members.items():
            zipped.writestr(name, data, compresslevel=9 if method == zipfile.ZIP_DEFLATED else None)
    return out.getvalue()


def _zeros_zip(name: str, size: int, extra: dict[str, bytes] | None = None) -> bytes:
    """A member of ``size`` zero bytes (about a thousand to one), built without holding it."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zipped:
        for other, data in (extra or {}).items():
            zipped.writestr(other, data)
        with zipped.open(name, "w", force_zip64=True) as member:
            block = bytes(MB)
            for _ in range(size // MB):
                member.write(block)
    return out.getvalue()


def _refusal_peak(action) -> tuple[ArchiveTooLarge | Exception, int]:
    """Run ``action`` expecting a refusal; return the error and the peak bytes allocated."""
    tracemalloc.start()
    try:
        action()
    except (ArchiveTooLarge, zipfile.BadZipFile) as exc:
        error = exc
    else:  # pragma: no cover - the test fails below
        error = None
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert error is not None, "the archive was not refused"
    return error, peak


def _read_all(data: bytes, limits: ArchiveLimits | None = None) -> None:
    with GuardedZip(data, name="set.zip", limits=limits) as zipped:
        for name in zipped.names():
            for _ in zipped.lines(name):
                pass


# -- the guarded reader, bomb by bomb -----------------------------------------------------------


def test_an_archive_of_more_members_than_the_limit_is_refused_before_zipfile_lists_them():
    data = _zip({f"q{i}.jsonl": b"" for i in range(10_001)})
    error, peak = _refusal_peak(lambda: GuardedZip(data, name="set.zip"))
    assert error.limit == "max_members"
    assert error.message == "set.zip holds more than the limit of 10,000 separate files"
    assert peak < PEAK_LIMIT


def test_a_directory_whose_end_record_understates_the_member_count_is_still_counted():
    data = bytearray(_zip({f"q{i}": b"" for i in range(60)}))
    end = data.rfind(b"PK\x05\x06")
    data[end + 8 : end + 12] = (1).to_bytes(2, "little") * 2  # "one member" on each count
    with pytest.raises(ArchiveTooLarge, match="more than the limit of 50"):
        GuardedZip(bytes(data), limits=ArchiveLimits(max_members=50))


def test_one_member_compressed_a_thousand_to_one_is_refused_from_its_declared_size():
    data = _zeros_zip("queries.jsonl", 40 * MB)
    assert len(data) < 100_000
    error, peak = _refusal_peak(lambda: _read_all(data))
    assert error.limit == "max_ratio" and error.member == "queries.jsonl"
    assert "would unpack to 40.0 MB from one part compressed" in error.message
    assert "past the limit of 200 to 1" in error.message
    assert peak < PEAK_LIMIT


def test_the_ratio_is_counted_again_while_unpacking():
    data = _zeros_zip("queries.jsonl", 16 * MB)
    zipped = GuardedZip(data, limits=ArchiveLimits(max_ratio=10**9))  # opens: ratio not checked
    zipped.limits = ArchiveLimits()  # now the streamed bytes must pass the real limit
    error, peak = _refusal_peak(lambda: all(zipped.chunks("queries.jsonl")))
    assert error.limit == "max_ratio"
    assert "from one part compressed" in error.message
    assert peak < PEAK_LIMIT


def test_an_archive_declaring_more_than_the_total_limit_is_refused():
    data = _zip({"a.jsonl": b"x" * 300_000, "b.jsonl": b"y" * 300_000}, method=zipfile.ZIP_STORED)
    with pytest.raises(ArchiveTooLarge) as error:
        GuardedZip(data, name="set.zip", limits=ArchiveLimits(max_unpacked_bytes=512 * 1024))
    assert error.value.message == "set.zip would unpack to 585 KB, past the 512 KB limit"


def test_the_total_is_counted_while_unpacking_not_taken_from_the_directory():
    data = _zip({"a.jsonl": b"x\n" * 300_000, "b.jsonl": b"y\n" * 300_000})
    zipped = GuardedZip(data, name="set.zip")
    zipped.limits = ArchiveLimits(max_unpacked_bytes=1 * MB)  # as if the directory had lied
    with pytest.raises(ArchiveTooLarge) as error:
        for name in zipped.names():
            for _ in zipped.lines(name):
                pass
    assert error.value.limit == "max_unpacked_bytes" and error.value.member == "b.jsonl"
    assert "unpacks past the 1 MB limit (reached in 'b.jsonl')" in error.value.message


def test_a_line_longer_than_the_limit_is_refused_without_holding_the_member():
    line = b'{"_id": "q1", "text": "' + b"a" * (30 * MB) + b'"}\n'
    data = _zip({"queries.jsonl": line})
    limits = ArchiveLimits(max_ratio=10**9)  # only the line limit stands in the way
    error, peak = _refusal_peak(lambda: _read_all(data, limits))
    assert error.limit == "max_line_bytes" and error.member == "queries.jsonl"
    assert "has a line longer than the 1 MB limit for one line ('queries.jsonl', line 1)" in (
        error.message
    )
    assert peak < PEAK_LIMIT


def test_a_zip_inside_a_zip_is_never_opened():
    inner = _zeros_zip("corpus.jsonl", 32 * MB)
    data = _zip({"queries.jsonl": inner, "qrels/test.tsv": QRELS})
    tracemalloc.start()
    try:
        result = beir.read(data, filename="nested.zip")
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert not result.items and result.errors
    assert peak < PEAK_LIMIT


def test_a_directory_that_understates_a_members_size_gets_no_more_than_it_claims():
    data = bytearray(_zeros_zip("queries.jsonl", 32 * MB, extra={"qrels/test.tsv": QRELS}))
    entry = data.rfind(b"PK\x01\x02")  # queries.jsonl, written last
    assert data[entry + 46 : entry + 46 + 13] == b"queries.jsonl"
    data[entry + 24 : entry + 28] = (1024).to_bytes(4, "little")  # "unpacks to 1 KB"
    error, peak = _refusal_peak(lambda: _read_all(bytes(data)))
    assert isinstance(error, zipfile.BadZipFile)  # 1 KB came out, and its checksum is wrong
    assert "CRC" in str(error)
    assert peak < PEAK_LIMIT


def test_limits_come_from_the_environment_and_a_bad_value_fails_loudly():
    limits = ArchiveLimits.from_env(
        {"GROUNDWORK_ARCHIVE_MAX_UNPACKED_MB": "20", "GROUNDWORK_ARCHIVE_MAX_LINE_KB": "64"}
    )
    assert limits.max_unpacked_bytes == 20 * MB and limits.max_line_bytes == 64 * 1024
    assert limits.max_members == 10_000 and limits.max_ratio == 200
    with pytest.raises(ValueError, match="GROUNDWORK_ARCHIVE_MAX_RATIO must be a whole number"):
        ArchiveLimits.from_env({"GROUNDWORK_ARCHIVE_MAX_RATIO": "lots"})


# -- BEIR imports ------------------------------------------------------------------------------


def test_a_large_corpus_within_the_limits_still_reads():
    count = 20_000
    queries = "".join(
        json.dumps({"_id": f"q{i}", "text": f"Question {i}?"}) + "\n" for i in range(count)
    )
    qrels = "query-id\tcorpus-id\tscore\n" + "".join(
        f"q{i}\tdoc{i % 97}\t1\n" for i in range(count)
    )
    corpus = "".join(
        json.dumps({"_id": f"doc{i}", "title": "", "text": "Some passage text. " * 20}) + "\n"
        for i in range(count)
    )
    data = _zip(
        {
            "queries.jsonl": queries.encode(),
            "qrels/test.tsv": qrels.encode(),
            "corpus.jsonl": corpus.encode(),
        }
    )
    result = beir.read(data, filename="big.zip")
    assert not result.errors, result.describe()[:3]
    assert len(result.items) == count
    assert result.items[-1].meta["gold_documents"] == [(f"doc{(count - 1) % 97}", 1)]


@pytest.fixture
def owner_client(client_for, owner, workspace):
    return client_for(owner)


def _rows() -> tuple[int, ...]:
    return EvalSet.objects.count(), EvalItem.objects.count(), ImportRecord.objects.count()


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["imports/preview/", "imports/"])
def test_a_beir_bomb_is_a_400_naming_the_limit_and_member_and_nothing_is_imported(
    owner_client, evalset, path
):
    bomb = _zeros_zip("queries.jsonl", 32 * MB, extra={"qrels/test.tsv": QRELS})
    before = _rows()
    response = owner_client.post(
        f"/api/workspaces/acme/evalsets/quiz/{path}",
        {"file": SimpleUploadedFile("bomb.zip", bomb), "format": "beir"},
        format="multipart",
    )
    assert response.status_code == 400, response.content
    detail = response.json()["detail"]
    assert "bomb.zip would unpack to 32.0 MB from one part compressed" in detail
    assert "('queries.jsonl'), past the limit of 200 to 1" in detail
    assert "nothing was imported" in detail
    assert response.json()["errors"] == {"file": [detail]}
    assert _rows() == before


@pytest.mark.django_db
def test_a_beir_line_past_the_limit_is_a_400_when_the_format_is_guessed(
    owner_client, evalset, monkeypatch
):
    monkeypatch.setattr(archive, "LIMITS", ArchiveLimits(max_line_bytes=64 * 1024))
    data = _zip(
        {
            "queries.jsonl": b'{"_id": "q1", "text": "' + b"ab" * 40_000 + b'"}\n',
            "qrels/test.tsv": QRELS,
        }
    )
    assert guess_format(data, "set.zip") == "beir"
    response = owner_client.post(
        "/api/workspaces/acme/evalsets/quiz/imports/preview/",
        {"file": SimpleUploadedFile("set.zip", data)},
        format="multipart",
    )
    assert response.status_code == 400, response.content
    assert (
        "longer than the 64 KB limit for one line ('queries.jsonl', line 1)"
        in (response.json()["detail"])
    )


@pytest.mark.django_db
def test_too_many_members_are_refused_before_the_format_is_even_guessed(owner_client, evalset):
    data = _zip({"queries.jsonl": b"", **{f"corpus/{i}": b"" for i in range(10_001)}})
    response = owner_client.post(
        "/api/workspaces/acme/evalsets/quiz/imports/preview/",
        {"file": SimpleUploadedFile("many.zip", data)},
        format="multipart",
    )
    assert response.status_code == 400
    assert (
        "many.zip holds more than the limit of 10,000 separate files" in response.json()["detail"]
    )


def test_deflate_bombs_really_are_a_thousand_to_one():
    """The fixture the tests rely on: a few hundred KB that would unpack to 200 MB."""
    assert len(zlib.compress(bytes(MB), 9)) < 1100
