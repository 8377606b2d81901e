"""``exceptions.reader``: whole threads, every template version, decisions, refusals.

The fixtures in tests/data/exception-threads/ each start with a ``Source:`` line that
names the public text they come from (template versions from the git history of
kubernetes/features' and kubernetes/sig-release's EXCEPTIONS.md, release-team comments
from kubernetes/enhancements, an exceptions.yaml entry); the loader drops that line.
"""

from __future__ import annotations

import datetime as dt
import email
import email.policy
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exceptions.reader import NotARequest, UnreadableInput, read_thread
from releasecal import tz

THREADS = Path(__file__).parent.parent / "data" / "exception-threads"
UTC = dt.UTC


def fixture(name: str) -> bytes:
    raw = (THREADS / name).read_bytes()
    if b"\nX-Source: " in raw.split(b"\n\n", 1)[0]:
        return raw  # an mbox or email names its source in a header
    assert raw.startswith((b"Source: http", b"Source: issue", b"Source: ../"))
    return raw.split(b"\n\n", 1)[1]


def test_every_fixture_names_its_source():
    for path in THREADS.iterdir():
        head = path.read_text().splitlines()[0]
        assert head.startswith("Source: ") or "X-Source:" in path.read_text(), path.name


# ------------------------------------------------------------ template versions

# (fixture, kep, days, name, stage, sig, first PR)
TEMPLATE_VERSIONS = [
    ("template-2016-08-features-unbulleted.txt", 85, 3, "Eviction subresource for PodDisruptionBudget", "alpha",
     "apps", "kubernetes/kubernetes#29967"),
    ("template-2016-10-features-bulleted.txt", 54, 2, "Container Runtime Interface", "alpha", "node",
     "https://github.com/kubernetes/kubernetes/pull/35675"),
    ("template-2018-06-k-features.txt", 284, 2, "Volume expansion for Azure File", "alpha", "storage",
     "https://github.com/kubernetes/kubernetes/pull/64231"),
    ("template-2018-10-sig-release.txt", 1435, 1, "Mixed protocol values in LoadBalancer Services", "alpha",
     "network", "https://github.com/kubernetes/enhancements/pull/2374"),
    ("template-2020-11-kepctl-code-fence.md", 647, 2, "API server tracing", "alpha", "api-machinery",
     "kubernetes/kubernetes#94942"),
    ("template-2025-10-calendar-days-aoe.txt", 3973, 2, "Consider Terminating Pods in Deployments", "beta", "apps",
     "https://github.com/kubernetes/enhancements/pull/5611"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "kep", "days", "title", "stage", "sig", "pr"), TEMPLATE_VERSIONS)
def test_every_template_version_is_read_completely(name, kep, days, title, stage, sig, pr):
    reading = read_thread(fixture(name))
    parsed = reading.request
    assert parsed.missing == [], parsed.problems
    assert parsed.kep_number == kep
    assert parsed.fields.days == days
    assert parsed.fields.enhancement_name == title
    assert parsed.fields.stage == stage
    assert parsed.fields.sig == sig
    assert parsed.fields.pr_urls[0] == pr
    for answer in (parsed.fields.reason, parsed.fields.risks_adding, parsed.fields.risks_cutting):
        assert answer
        assert "etc." not in answer  # the template's hint is never an answer
        assert "(" not in answer[:1]


def test_the_2025_template_sets_aoe_from_its_key():
    parsed = read_thread(fixture("template-2025-10-calendar-days-aoe.txt")).request
    assert parsed.fields.until_zone == tz.AOE


def test_the_features_repo_issue_is_the_kep_number():
    parsed = read_thread(fixture("template-2016-08-features-unbulleted.txt")).request
    assert parsed.fields.issue_url == "https://github.com/kubernetes/features/issues/85"
    assert parsed.kep_number == 85


# ------------------------------------------------------------ failure causes


def test_answers_in_the_paragraph_after_the_hint_and_over_several_paragraphs():
    parsed = read_thread(fixture("code-freeze-answers-after-hint.txt")).request
    assert parsed.missing == []
    assert parsed.fields.reason == (
        "The API types merged before the freeze; only the admission plugin wiring is left.\n\n"
        "It has two lgtms from SIG API Machinery already."
    )
    assert parsed.fields.risks_adding.startswith("Low. Everything is behind")
    assert parsed.fields.risks_adding.endswith("The e2e tests run in the alpha job only.")
    assert parsed.fields.risks_cutting == "The API would ship without an implementation for a release."


def test_key_wordings_numbered_lines_kep_pr_and_a_quoted_name_with_its_url():
    reading = read_thread(fixture("key-wordings-variants.txt"))
    parsed = reading.request
    assert parsed.missing == []
    assert parsed.fields.enhancement_name == "Allow zero value for Sleep Action of PreStop Hook"
    assert parsed.fields.issue_url == "https://github.com/kubernetes/enhancements/issues/4818"
    assert parsed.kep_number == 4818
    assert parsed.fields.days == 2  # "Additional time needed in days:"
    assert parsed.fields.reason == "a one-line validation change with its test."  # "critical to this milestone"
    assert "https://github.com/kubernetes/enhancements/pull/4819" in parsed.fields.pr_urls  # "k/enhancements PR:"
    assert reading.release.value == "1.32"


def test_a_kep_pr_instead_of_the_issue_takes_the_kep_from_the_subject():
    text = (
        fixture("key-wordings-variants.txt")
        .decode()
        .replace(
            '"Allow zero value for Sleep Action of PreStop Hook" https://github.com/kubernetes/enhancements/issues/4818',
            "Allow zero value for Sleep Action of PreStop Hook",
        )
    )
    parsed = read_thread(text).request
    assert parsed.kep_number == 4818
    assert parsed.fields.issue_url == "https://github.com/kubernetes/enhancements/issues/4818"
    assert parsed.missing == []
    assert any("pull request was given instead of its issue" in w for w in parsed.warnings)


@pytest.mark.parametrize(
    "hint_only",
    ["(to k8s stability, testing, etc.)", "(to k8s stability, testing, etc.)\n\n", "(alpha/beta/stable)"],
)
def test_a_left_hint_is_never_an_answer(hint_only):
    text = fixture("template-2018-10-sig-release.txt").decode()
    text = text.replace("(to k8s stability, testing, etc.) None, the KEP text only.", hint_only)
    text = text.replace("(alpha/beta/stable): alpha", f"(alpha/beta/stable): {hint_only}")
    parsed = read_thread(text).request
    assert parsed.problems["risks_adding"] == "the answer is empty"
    assert parsed.fields.stage == ""


def test_none_prr_is_approved_is_a_zero_day_admission():
    reading = read_thread(fixture("prr-admission-none-prr-approved.txt"))
    assert reading.request.fields.days == 0
    assert reading.request.days_read
    assert reading.milestone_kind.value == "prr-freeze"
    assert reading.release.value == "1.35"
    assert any("admission past the freeze" in w for w in reading.request.warnings)


# ------------------------------------------------------------ threads and decisions


def test_an_mbox_thread_gives_the_request_the_until_instant_and_a_proposed_decision():
    reading = read_thread(fixture("thread-approval-pst-in-june-2024.mbox"))
    parsed = reading.request
    assert parsed.kep_number == 4639
    assert parsed.sender == "Sascha Example"  # the request's author, not the replier
    assert parsed.sent_at == dt.datetime(2024, 6, 14, 9, 12, tzinfo=UTC)
    # "7 (until EOD Friday CET)" sent Friday 14 June: end of Friday 21 June in Berlin.
    assert parsed.fields.until_at == dt.datetime(2024, 6, 21, 22, 0, tzinfo=UTC)
    assert reading.until.zone == "Europe/Berlin"
    assert not any("days after it was sent" in w for w in reading.warnings)  # 7 days agree
    decision = reading.decision
    assert decision.outcome == "approved"
    assert decision.author == "Kat Example"  # "'Kat Example' via kubernetes-sig-release"
    assert decision.sent_at == dt.datetime(2024, 6, 14, 17, 40, tzinfo=UTC)
    assert "APPROVING this exception request" in decision.source_text
    # "18:00 PST" on 21 June: PDT is in force; both readings named, the wall clock proposed.
    assert decision.granted.instant == dt.datetime(2024, 6, 22, 1, 0, tzinfo=UTC)
    assert decision.granted.zone == "America/Los_Angeles"
    (warning,) = decision.granted.warnings
    assert "18:00 PDT = 01:00Z Saturday 22 June 2024" in warning
    assert "18:00 UTC-8 = 02:00Z Saturday 22 June 2024" in warning
    assert [r["utc"] for r in decision.granted.readings] == ["2024-06-22T01:00:00Z", "2024-06-22T02:00:00Z"]
    data = reading.as_dict()
    assert data["proposed_decision"]["granted"]["at"] == "2024-06-22T01:00:00Z"
    assert data["until"]["at"] == "2024-06-21T22:00:00Z"


def test_the_real_1_25_approval_in_a_thread_reads_pst_in_june_as_pdt():
    request = fixture("template-2018-10-sig-release.txt").decode()
    request = request.replace("Date: Thu, 28 Jan 2021 10:30:00 +0100", "Date: Fri, 24 Jun 2022 10:30:00 +0000")
    reply = fixture("reply-approval-kep-2238-pr-3408.md").decode()
    text = f"From: cici37 <cici@example.com>\nDate: Mon, 27 Jun 2022 18:00:00 +0000\n\n{reply}\n\n{request}"
    decision = read_thread(text).decision
    assert decision.outcome == "approved"
    assert decision.granted.text == "18:00 PST Thursday 30th June 2022"
    assert decision.granted.instant == dt.datetime(2022, 7, 1, 1, 0, tzinfo=UTC)
    assert "PDT is" in decision.granted.warnings[0]


def test_a_quoted_request_under_a_top_posted_decision():
    request = fixture("template-2018-10-sig-release.txt").decode()
    quoted = "\n".join("> " + line for line in request.splitlines())
    text = (
        "From: Lead <lead@example.com>\nDate: Fri, 29 Jan 2021 18:00:00 +0000\nSubject: Re: exception\n\n"
        "Unfortunately the release team is REJECTING this exception request: the PRR is not started.\n\n"
        f"On Thu, Jan 28, 2021 at 10:30 AM Laszlo J. <lj@example.com> wrote:\n{quoted}\n"
    )
    reading = read_thread(text)
    assert reading.request.sender == "Laszlo J."
    assert reading.request.fields.days == 1
    assert reading.decision.outcome == "rejected"
    assert reading.decision.author == "Lead"
    assert reading.decision.granted is None


@pytest.mark.parametrize(("label", "named"), [("IST", "India"), ("CST", "China"), ("BST", "Bangladesh")])
def test_a_grant_in_an_ambiguous_zone_is_flagged_and_not_placed(label, named):
    text = fixture("thread-approval-pst-in-june-2024.mbox").decode().replace("18:00 PST", f"18:00 {label}")
    decision = read_thread(text).decision
    assert decision.granted.instant is None
    assert decision.granted.ambiguous
    assert named in decision.granted.warnings[0]
    assert len(decision.granted.readings) >= 2


def test_an_until_text_that_disagrees_with_the_days_is_a_warning():
    text = (
        fixture("thread-approval-pst-in-june-2024.mbox")
        .decode()
        .replace("7 (until EOD Friday CET)", "5 (until EOD Friday CEST)")
    )
    reading = read_thread(text)
    assert reading.request.fields.days == 5
    assert reading.request.fields.until_at == dt.datetime(2024, 6, 21, 22, 0, tzinfo=UTC)
    assert any("asks for 5 days, but 'until EOD Friday CEST' is Friday 21 June 2024" in w for w in reading.warnings)
    assert any("7 days after it was sent" in w for w in reading.warnings)


def test_an_email_message_object_is_read():
    raw = fixture("template-2025-10-calendar-days-aoe.txt")
    message = email.message_from_bytes(raw, policy=email.policy.default)
    assert read_thread(message).request.kep_number == 3973


# ------------------------------------------------------------ non-requests


@pytest.mark.parametrize(
    ("name", "kind", "says"),
    [
        ("reply-approval-kep-2238-pr-3408.md", "release_team_reply", "paste the whole thread"),
        ("exceptions-yaml-entry-1.34.yaml", "exceptions_yaml", "import_exceptions_yaml"),
        ("bare-approval-comment.md", "bare_approval", "bare approval comment"),
        ("kep-pr-thread-3408.md", "kep_pr_thread", "KEP pull-request thread"),
        ("tracking-comment-issue-5073.md", "tracking_comment", "tracking comment"),
    ],
)
def test_a_non_request_is_refused_with_one_sentence(name, kind, says):
    with pytest.raises(NotARequest) as err:
        read_thread(fixture(name))
    assert err.value.extra == {"kind": kind}
    assert says in err.value.message
    assert err.value.status_code == 422
    assert "\n" not in err.value.message


def test_plain_prose_is_not_a_request():
    with pytest.raises(NotARequest, match="none of the exception request template's fields"):
        read_thread("Hi all, can someone tell me when code freeze is?\n\nThanks")


# ------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("", "empty"),
        ("   \n\n ", "empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "NUL byte"),
        ("Enhancement name: x\x00y", "NUL byte"),
        (bytes(range(1, 32)) * 50, "binary"),
        ("x" * 10_000_000, "at most 1,000,000"),
        (b"x" * 10_000_000, "MB"),
    ],
)
def test_bad_input_is_one_clear_line(source, says):
    with pytest.raises(UnreadableInput) as err:
        read_thread(source)
    assert says in err.value.message
    assert "\n" not in err.value.message


@pytest.mark.parametrize("date", ["Mon, 01 Jan 0001 00:00:00 -0800", "Fri, 31 Dec 9999 23:59:59 -0100",
                                  "Thu, 01 Jan 1920 00:00:00 +0000"])  # fmt: skip
def test_an_implausible_date_header_is_refused(date):
    text = fixture("template-2018-10-sig-release.txt").decode().replace("Thu, 28 Jan 2021 10:30:00 +0100", date)
    with pytest.raises(UnreadableInput, match="not a plausible time"):
        read_thread(text)


def test_a_5000_digit_day_count_is_a_problem_not_a_crash():
    text = fixture("template-2018-10-sig-release.txt").decode().replace("(in days): 1", "(in days): " + "9" * 5000)
    parsed = read_thread(text).request
    assert parsed.problems["days"] == "a 5,000-digit number is not a number of days"


# ------------------------------------------------------------ layout does not change what is read

LINES = [
    ("Enhancement name", "Mixed protocol values in LoadBalancer Services"),
    ("Enhancement status (alpha/beta/stable)", "alpha"),
    ("SIG", "network"),
    ("k/enhancements repo issue #", "https://github.com/kubernetes/enhancements/issues/1435"),
    ("PR #\u2019s", "https://github.com/kubernetes/enhancements/pull/2374"),  # the template's curly apostrophe
    ("Additional time needed (in days)", "3"),
    ("Reason this enhancement is critical for this milestone", "only the PRR lgtm is missing."),
    ("Risks from adding code late", "(to k8s stability, testing, etc.) None, the KEP text only."),
    ("Risks from cutting enhancement", "(partial implementation, critical customer usecase, etc.) Users wait."),
]


@settings(max_examples=60, deadline=None)
@given(
    bullets=st.lists(st.sampled_from(["- ", "* ", "• ", "", "  - ", "1. "]), min_size=len(LINES), max_size=len(LINES)),
    gaps=st.lists(st.integers(min_value=0, max_value=3), min_size=len(LINES), max_size=len(LINES)),
    order=st.permutations(range(len(LINES))),
    answer_below=st.lists(st.booleans(), min_size=len(LINES), max_size=len(LINES)),
)
def test_bullets_blank_lines_and_order_do_not_change_what_is_read(bullets, gaps, order, answer_below):
    parts = ["Subject: Enhancements freeze exception request KEP-1435", ""]
    for position, index in enumerate(order):
        key, answer = LINES[index]
        if answer_below[position] and not answer.startswith("("):
            parts.append(f"{bullets[position]}{key}:")
            parts.extend([""] * gaps[position])
            parts.append(answer)
        else:
            parts.append(f"{bullets[position]}{key}: {answer}")
            parts.extend([""] * gaps[position])
    parsed = read_thread("\n".join(parts)).request
    assert parsed.missing == [], parsed.problems
    f = parsed.fields
    assert (f.enhancement_name, f.stage, f.sig, parsed.kep_number, f.days) == (
        "Mixed protocol values in LoadBalancer Services", "alpha", "network", 1435, 3,
    )  # fmt: skip
    assert f.pr_urls == ["https://github.com/kubernetes/enhancements/pull/2374"]
    assert f.reason == "only the PRR lgtm is missing."
    assert f.risks_adding == "None, the KEP text only."
    assert f.risks_cutting == "Users wait."


FRAGMENTS = [
    "Additional time needed (in days):", "until", "EOD", "Friday", "PST", "IST", "18:00", "31st", "February",
    "2024", "approved", "APPROVING", "deadline is", "> ", ">> ", "\n", "\n\n", "From: a <a@b.c>",
    "Date: Fri, 14 Jun 2024 09:12:00 +0000", "Date: Fri, 31 Dec 9999 23:59:59 -0100", "- SIG: node", "KEP-1",
    "99999999999", "0", "None", "(", ")", "```", "On Tue, Jul 23, 2024 at 8:10 PM X <x@y> wrote:", "rejected",
    "Enhancement name:", "k/enhancements repo issue #: 12", "From kat@example.com Fri Jun 14 17:40:00 2024\n",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=20), max_size=60))
def test_any_text_is_read_or_refused_with_a_sentence_never_a_crash(parts):
    message = "read"
    try:
        read_thread(" ".join(parts)).as_dict()
    except (NotARequest, UnreadableInput) as exc:
        message = exc.message
    assert message
    assert "\n" not in message


@pytest.mark.parametrize(
    "said",
    [
        "If the exception request is approved, we will merge it on Monday.",
        "Once the exception is granted we will update the KEP.",
        "We hope the exception request is approved by the release team.",
    ],
)
def test_a_requester_saying_if_approved_is_not_a_decision(said):
    text = fixture("code-freeze-answers-after-hint.txt").decode().replace("Thanks!", f"{said}\n\nThanks!")
    reading = read_thread(text)
    assert reading.decision is None
    assert reading.request.fields.days == 3


# ------------------------------------------- an asked deadline in a gap or a fold (issue 29)

NY_FOLD_2024 = (
    "2024-11-03 01:30 is ambiguous in America/New_York: it happens twice when daylight saving time ends, at UTC "
    "offset -04:00 and again at -05:00. Give the time with an explicit offset."
)
NY_GAP_2024 = (
    "2024-03-10 02:30 does not exist in America/New_York: the clocks skip over it when daylight saving time "
    "starts. The two offsets around the gap are -04:00 and -05:00; give the time with an explicit offset or pick "
    "a time outside the gap."
)


def _asking_until(until: str) -> str:
    text = fixture("thread-approval-pst-in-june-2024.mbox").decode()
    assert "7 (until EOD Friday CET)" in text
    return text.replace("7 (until EOD Friday CET)", f"7 (until {until})")


@pytest.mark.parametrize(
    ("until", "refusal"),
    [
        ("01:30 ET Sunday 3 November 2024", NY_FOLD_2024),
        ("01:30 Sunday 3 November 2024 America/New_York", NY_FOLD_2024),
        ("02:30 EDT Sunday 10 March 2024", NY_GAP_2024),
        ("02:30 Sunday 10 March 2024 Eastern time", NY_GAP_2024),
    ],
)
def test_an_asked_deadline_in_a_gap_or_a_fold_is_flagged_as_the_api_refuses_it(until, refusal):
    reading = read_thread(_asking_until(until))
    fields = reading.request.fields
    # The request is kept: its days and its until-text as written, with no instant.
    assert (fields.days, fields.until_text, fields.until_at) == (7, until, None)
    assert refusal in reading.warnings
    assert f"The until-text {until!r} was kept as text only: {refusal.rstrip('.')}." in reading.warnings
    # The API refuses the same wall time in the same words.
    with pytest.raises((tz.AmbiguousTime, tz.NonExistentTime)) as exc:
        tz.parse_wall_time(refusal[:16], "America/New_York")
    assert exc.value.message == refusal


@pytest.mark.parametrize(
    ("until", "instant"),
    [
        ("01:30 EST Sunday 3 November 2024", dt.datetime(2024, 11, 3, 6, 30, tzinfo=UTC)),
        ("01:30 EDT Sunday 3 November 2024", dt.datetime(2024, 11, 3, 5, 30, tzinfo=UTC)),
    ],
)
def test_an_asked_deadline_whose_label_names_the_occurrence_is_placed(until, instant):
    reading = read_thread(_asking_until(until))
    assert reading.request.fields.until_at == instant
    assert not any("ambiguous" in w or "is not in force" in w for w in reading.warnings)
