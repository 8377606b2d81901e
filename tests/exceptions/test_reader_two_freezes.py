"""A thread naming the PRR and the enhancements freeze together (the handbook, 2025-2026:
one request, one combined completion date) is read as naming both, in every wording people
use, and is filed as one request for both freezes (``also_milestone``).

The thread: tests/data/exception-threads/combined-prr-and-enhancements-freeze.txt (sent
08:00 UTC Friday 10 October 2025, six hours after 1.35's PRR freeze)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from exceptions.models import ExceptionRequest, ExceptionRequestFreeze
from exceptions.reader import parse_request_email, read_thread
from exceptions.services import exception_thread_file
from releasecal.models import Enhancement, Release
from releasecal.services import milestone_create

THREADS = Path(__file__).parent.parent / "data" / "exception-threads"
UTC = dt.UTC
SUBJECT = "PRR and Enhancements Freeze"


def thread(subject: str = SUBJECT) -> str:
    text = (THREADS / "combined-prr-and-enhancements-freeze.txt").read_text().split("\n\n", 1)[1]
    return text.replace(SUBJECT, subject, 1)


@pytest.fixture
def release_135(kinds):
    """1.35-like, AoE: PRR freeze 02:00 UTC Friday 10 October 2025, enhancements freeze a week later."""
    release = Release.objects.create(
        slug="1.35", name="Kubernetes v1.35", zone="AoE", start_date=dt.date(2025, 9, 15),
        status=Release.Status.ACTIVE,
    )  # fmt: skip
    milestone_create(release=release, kind=kinds["prr-freeze"], title="PRR Freeze",
                     at=dt.datetime(2025, 10, 10, 2, 0, tzinfo=UTC))  # fmt: skip
    milestone_create(release=release, kind=kinds["enhancements-freeze"], title="Enhancements Freeze",
                     at=dt.datetime(2025, 10, 17, 2, 0, tzinfo=UTC))  # fmt: skip
    milestone_create(release=release, kind=kinds["code-freeze"], title="Code Freeze",
                     at=dt.datetime(2025, 11, 7, 2, 0, tzinfo=UTC))  # fmt: skip
    Enhancement.objects.create(number=5307, title="Container restart rules", owning_sig="node")
    return release


# (the subject's wording, what the reason quotes)
WORDINGS = [
    ("PRR and Enhancements Freeze", "PRR and Enhancements Freeze"),
    ("Enhancements Freeze and PRR Freeze", "Enhancements Freeze and PRR Freeze"),
    ("PRR/Enhancements freeze", "PRR/Enhancements freeze"),
    ("PRR & Enhancements Freezes", "PRR & Enhancements Freezes"),
    ("PRR freeze and the enhancements freeze", "PRR freeze and the enhancements freeze"),
    # v1.38's name of the PRR freeze (kubernetes/community#9169)
    ("KEP Readiness Deadline and Enhancements Freeze", "KEP Readiness Deadline and Enhancements Freeze"),
    ("Enhancements Freeze + KEP Readiness Deadline", "Enhancements Freeze + KEP Readiness Deadline"),
]


@pytest.mark.parametrize(("subject", "quoted"), WORDINGS)
def test_each_wording_names_both_freezes(subject, quoted):
    parsed = parse_request_email(thread(subject))
    assert (parsed.milestone_kind, parsed.also_milestone_kind) == ("prr-freeze", "enhancements-freeze")
    assert parsed.warnings == []
    reading = read_thread(thread(subject))
    assert reading.as_dict()["inferred"]["milestone_kind"] == {
        "value": "prr-freeze", "also": "enhancements-freeze", "reason": f"the subject says {quoted!r}",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("subject", "kind", "reason"),
    [
        ("KEP Readiness Deadline", "prr-freeze", "the subject says 'KEP Readiness Deadline'"),
        ("PRR Freeze", "prr-freeze", "the subject says 'PRR Freeze'"),
        ("Enhancements Freeze", "enhancements-freeze", "the subject says 'Enhancements Freeze'"),
    ],
)
def test_one_freeze_named_alone_is_one_freeze(subject, kind, reason):
    reading = read_thread(thread(subject))
    assert (reading.request.milestone_kind, reading.request.also_milestone_kind) == (kind, "")
    assert reading.as_dict()["inferred"]["milestone_kind"] == {"value": kind, "also": None, "reason": reason}


def test_the_body_names_the_pair_when_the_subject_names_no_freeze():
    text = thread("exception").replace("so we ask for one exception for\nboth", "so we ask for a PRR and\n"
                                       "enhancements freeze exception")  # fmt: skip
    reading = read_thread(text)
    assert (reading.milestone_kind.value, reading.milestone_kind.also) == ("prr-freeze", "enhancements-freeze")
    assert reading.milestone_kind.reason == "the text says 'PRR and\\nenhancements freeze'"


@pytest.mark.parametrize(
    ("subject", "kind", "warning"),
    [
        # "reviews" names no freeze: nothing is read from these words.
        ("the enhancements and PRR reviews", "enhancements-freeze", None),
        # Two freezes that are not the pair: asked, never guessed.
        ("PRR Freeze and Code Freeze", "",
         "The text names several freezes (prr-freeze, code-freeze); say which one with --milestone."),
        ("PRR and Enhancements Freeze, then Code Freeze", "",
         "The text names several freezes (prr-freeze and enhancements-freeze, code-freeze); say which one "
         "with --milestone."),
    ],
)  # fmt: skip
def test_other_pairs_are_not_the_combined_request(subject, kind, warning):
    parsed = parse_request_email(thread(subject))
    assert (parsed.milestone_kind, parsed.also_milestone_kind) == (kind, "")
    assert parsed.warnings == ([warning] if warning else [])


# ------------------------------------------------------------ filing


def freezes(request) -> list[tuple[str, bool]]:
    return sorted(ExceptionRequestFreeze.objects.filter(request=request).values_list("milestone__title", "live"))


@pytest.mark.parametrize(("subject", "quoted"), WORDINGS[:1] + WORDINGS[5:6])
def test_a_combined_thread_is_filed_for_both_freezes(release_135, subject, quoted):
    filed = exception_thread_file(reading=read_thread(thread(subject)), entered_by=None)
    request = ExceptionRequest.objects.get()
    assert (request.milestone.title, request.also_milestone.title) == ("PRR Freeze", "Enhancements Freeze")
    assert freezes(request) == [("Enhancements Freeze", True), ("PRR Freeze", True)]
    prr, enh = (release_135.milestones.get(kind__slug=k).pk for k in ("prr-freeze", "enhancements-freeze"))
    assert filed.milestone_reason == (
        f"PRR Freeze of 1.35 (#{prr}), freeze inferred: the subject says {quoted!r}; release 1.35 inferred: the "
        f"subject names release 1.35; also Enhancements Freeze of 1.35 (#{enh}): one request for both freezes"
    )
    assert filed.report[0] == (
        f"Created exception request #{request.pk} for KEP-5307 (PRR Freeze and Enhancements Freeze, release "
        "1.35): pending, 5 days, requested by Ana Example, entered by unknown (pass --entered-by), sent 20:00 "
        "AoE Thursday 9 October 2025 (08:00 UTC Friday 10 October 2025)"
    )


def test_a_combined_thread_given_the_enhancements_freeze_still_names_both(release_135):
    filed = exception_thread_file(reading=read_thread(thread()), entered_by=None, milestone="enhancements-freeze")
    request = filed.request
    assert (request.milestone.title, request.also_milestone.title) == ("PRR Freeze", "Enhancements Freeze")


def test_a_combined_thread_given_the_code_freeze_is_filed_for_that_freeze_alone(release_135):
    request = exception_thread_file(reading=read_thread(thread()), entered_by=None, milestone="code-freeze").request
    assert (request.milestone.title, request.also_milestone) == ("Code Freeze", None)


def test_a_release_without_a_prr_freeze_files_the_enhancements_freeze_alone(release_135):
    prr = release_135.milestones.get(kind__slug="prr-freeze")
    prr.delete()
    enh = release_135.milestones.get(kind__slug="enhancements-freeze")
    filed = exception_thread_file(reading=read_thread(thread()), entered_by=None)
    assert (filed.request.milestone, filed.request.also_milestone) == (enh, None)
    assert filed.milestone_reason == (
        f"Enhancements Freeze of 1.35 (#{enh.pk}), freeze inferred: the subject says 'PRR and Enhancements Freeze'; "
        "release 1.35 inferred: the subject names release 1.35; note: the subject says 'PRR and Enhancements "
        "Freeze', but release 1.35 has no 'prr-freeze' milestone: filed for Enhancements Freeze alone"
    )


def test_the_parse_endpoint_answers_both_freezes(db):
    response = APIClient().post("/api/v1/exceptions/parse/", {"text": thread()}, format="json")
    assert response.status_code == 200
    data = response.json()
    assert (data["milestone_kind"], data["also_milestone_kind"]) == ("prr-freeze", "enhancements-freeze")
    assert data["inferred"]["milestone_kind"] == {
        "value": "prr-freeze", "also": "enhancements-freeze",
        "reason": "the subject says 'PRR and Enhancements Freeze'",
    }  # fmt: skip
