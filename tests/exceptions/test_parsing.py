"""Reading exception request emails as people send them (pure: no database)."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exceptions.reader import Amendment, parse_request_email
from exceptions.reader.days import read_days
from releasecal.tz import zone_from_text
from tests.support.paths import EXCEPTION_EMAILS

EMAILS = EXCEPTION_EMAILS


def read(name: str) -> str:
    return (EMAILS / name).read_bytes().decode("utf-8")


def template(bullet: str = "*", **overrides: str) -> str:
    """A filled 2024 template; ``overrides`` replace whole lines by field name (None drops)."""
    lines = {
        "name": "Enhancement name: Node memory swap support",
        "stage": "Enhancement status (alpha/beta/stable): beta",
        "sig": "SIG: node",
        "issue": "k/enhancements repo issue #: https://github.com/kubernetes/enhancements/issues/2400",
        "prs": "PR #'s: https://github.com/kubernetes/kubernetes/pull/118764",
        "days": "Additional time needed (in days): 2",
        "reason": "Reason this enhancement is critical for this milestone: only the e2e PR is left.",
        "adding": "Risks from adding code late: (to k8s stability, testing, etc.) Low.",
        "cutting": "Risks from cutting enhancement: (partial implementation, critical customer usecase, etc.) "
        "Users wait.",
    }
    lines.update(overrides)
    body = "\n".join(f"{bullet} {line}" if bullet else line for line in lines.values() if line is not None)
    return f"Subject: Exception Request for KEP-2400 (code freeze)\n\nHi,\n\n{body}\n\nThanks!\n"


# --------------------------------------------------------------- the shared examples


def test_it_reads_every_field_of_the_code_freeze_example():
    parsed = parse_request_email(read("example-code-freeze.txt"))
    f = parsed.fields
    assert parsed.subject == "[sig-node] Exception Request for KEP-2400 (code freeze)"
    assert parsed.kep_number == 2400
    assert parsed.milestone_kind == "code-freeze"
    assert f.enhancement_name == "Node memory swap support"
    assert f.stage == "beta"
    assert f.sig == "node"
    assert f.issue_url == "https://github.com/kubernetes/enhancements/issues/2400"
    assert f.pr_urls == [
        "https://github.com/kubernetes/kubernetes/pull/118764",
        "https://github.com/kubernetes/kubernetes/pull/118790",
    ]
    assert f.days == 2
    assert (f.until_text, f.until_zone) == ("", "")
    assert f.reason == (
        "the beta graduation is blocked only on the e2e test PR, which has lgtm and is waiting for approval."
    )
    assert f.risks_adding == "Low; the feature is behind a gate that is off by default."
    assert f.risks_cutting == "Users would wait another release for beta."
    assert f.source_text == read("example-code-freeze.txt")
    assert parsed.amendments == []
    assert parsed.missing == []
    assert parsed.warnings == []


def test_it_reads_every_field_of_the_aoe_example_and_its_amendment():
    parsed = parse_request_email(read("example-enhancements-freeze-aoe.txt"))
    f = parsed.fields
    assert parsed.subject == "[k8s enhancements] Exception Request for KEP-5055"
    assert parsed.kep_number == 5055
    assert parsed.milestone_kind == "enhancements-freeze"
    assert f.enhancement_name == "DRA: device taints and tolerations"
    assert f.stage == "alpha"
    assert f.sig == "node"
    assert f.issue_url == "https://github.com/kubernetes/enhancements/issues/5055"
    assert f.pr_urls == ["https://github.com/kubernetes/enhancements/pull/5056"]
    assert f.days == 3
    assert f.until_text == "end of day Monday AoE"
    assert f.until_zone == "AoE"
    assert f.reason == "the PRR review finished one hour after the freeze."
    assert f.risks_adding == "None, only the KEP text is late."
    assert f.risks_cutting == "Device vendors need the API this cycle."
    assert parsed.missing == []
    assert len(parsed.amendments) == 1
    amendment = parsed.amendments[0]
    assert (amendment.days, amendment.until_text, amendment.until_zone) == (2, "", "AoE")
    assert amendment.text.startswith("Updating the time requested to 2 days.")
    assert "Additional time needed (in calendar days, due end of day AoE): 2" in amendment.text


def test_as_dict_has_a_stable_json_shape():
    data = parse_request_email(read("example-enhancements-freeze-aoe.txt")).as_dict()
    json.dumps(data)
    assert set(data) == {
        "subject", "kep_number", "milestone_kind", "also_milestone_kind", "fields", "amendments",
        "missing", "problems", "warnings", "sent_at", "sender", "sender_mark", "on_behalf_of",
    }  # fmt: skip
    assert set(data["fields"]) == {
        "days", "enhancement_name", "stage", "sig", "issue_url", "pr_urls",
        "until_text", "until_zone", "until_at", "reason", "risks_adding", "risks_cutting",
    }  # fmt: skip
    assert data["amendments"] == [
        {
            "days": 2,
            "until_text": "",
            "until_zone": "AoE",
            "text": "Updating the time requested to 2 days.\n"
            "\u2022 Additional time needed (in calendar days, due end of day AoE): 2",
            "sent_at": None,
            "prose": {},
            "author": "",
        }
    ]


def test_as_dict_gives_null_days_when_they_could_not_be_read():
    data = parse_request_email(template(days="Additional time needed (in days): seven")).as_dict()
    assert data["fields"]["days"] is None
    assert data["missing"] == ["days"]
    assert "seven" in data["problems"]["days"]


# ------------------------------------------------------------------ own fixtures


def test_it_reads_a_top_posted_reply_with_the_request_quoted():
    parsed = parse_request_email(read("reply-top-posted-amendment.eml"))
    f = parsed.fields
    assert parsed.missing == []
    assert f.days == 6
    assert (f.until_text, f.until_zone) == ("EOD Monday CEST", "Europe/Berlin")
    assert f.sig == "node"
    assert f.pr_urls == [
        "https://github.com/kubernetes/kubernetes/pull/118764",
        "https://github.com/kubernetes/kubernetes/pull/118790",
    ]
    assert f.reason == "beta graduation\ndepends on the e2e PR, which already has lgtm."
    assert f.risks_adding == "Low, feature gated."
    assert f.risks_cutting == "Another release of waiting."
    assert parsed.sender == "Jane Doe"
    # The quoted request carries its own Date; the reply's Date dates the amendment.
    assert parsed.sent_at == dt.datetime(2024, 7, 24, 3, 10, tzinfo=dt.UTC)
    assert [(a.days, a.until_text, a.until_zone) for a in parsed.amendments] == [
        (4, "EOD Saturday CEST", "Europe/Berlin")
    ]
    assert parsed.amendments[0].sent_at == dt.datetime(2024, 7, 24, 7, 30, tzinfo=dt.UTC)


def test_it_reads_windows_line_endings_lowercase_keys_and_stage_wording():
    text = read("crlf-lowercase-keys.eml")
    assert "\r\n" in text
    parsed = parse_request_email(text)
    f = parsed.fields
    assert parsed.missing == []
    assert parsed.kep_number == 1880
    assert parsed.milestone_kind == "code-freeze"
    assert parsed.sender == "Antonio O."
    assert parsed.sent_at == dt.datetime(2024, 7, 24, 6, 45, tzinfo=dt.UTC)
    assert f.enhancement_name == "Multiple Service CIDRs"
    assert f.stage == "beta"
    assert f.sig == "network"
    assert f.issue_url == "https://github.com/kubernetes/enhancements/issues/1880"
    assert f.pr_urls == ["#122047", "kubernetes/kubernetes#125021", "https://github.com/kubernetes/website/pull/46710"]
    assert any("#122047" in w and "without a repository" in w for w in parsed.warnings)
    assert f.days == 7
    assert (f.until_text, f.until_zone) == ("EOD Friday CET", "Europe/Berlin")
    assert f.reason == "The API is in place and only the\nallocator migration PR is left."
    assert f.risks_adding == "Medium: it touches the apiserver allocator."
    assert f.risks_cutting == "Users stay on alpha."


def test_it_reads_a_thread_pasted_in_order_with_one_amendment_and_its_date():
    parsed = parse_request_email(read("thread-in-order.eml"))
    assert parsed.missing == []
    assert parsed.kep_number == 4671
    assert parsed.milestone_kind == "enhancements-freeze"
    assert parsed.fields.days == 5
    assert parsed.fields.until_zone == "AoE"  # from the 2025 wording "due end of day AoE"
    assert parsed.fields.issue_url == "https://github.com/kubernetes/enhancements/issues/4671"
    assert parsed.sent_at == dt.datetime(2025, 2, 10, 18, 0, tzinfo=dt.UTC)
    assert len(parsed.amendments) == 1  # the quoted copy in the +1 reply is the same amendment
    assert parsed.amendments[0].days == 3
    assert parsed.amendments[0].sent_at == dt.datetime(2025, 2, 11, 9, 15, tzinfo=dt.UTC)


def test_it_names_days_written_in_words_as_unreadable():
    parsed = parse_request_email(read("days-in-words.eml"))
    assert parsed.missing == ["days"]
    assert parsed.problems["days"].startswith("'seven' is not written in digits")
    # Everything else is still read.
    assert parsed.fields.stage == "stable"
    assert parsed.fields.issue_url == "https://github.com/kubernetes/enhancements/issues/3331"
    assert parsed.kep_number == 3331


def test_it_reads_the_older_feature_wording_with_answers_on_later_lines():
    parsed = parse_request_email(read("feature-wording-multiline.eml"))
    f = parsed.fields
    assert parsed.missing == []
    assert parsed.kep_number == 2400
    assert parsed.milestone_kind == "code-freeze"
    assert f.enhancement_name == "Node memory swap support"
    assert f.stage == "beta"  # "alpha -> beta": the target stage
    assert f.sig == "node"
    assert f.issue_url == "https://github.com/kubernetes/enhancements/issues/2400"
    assert f.pr_urls == [
        "https://github.com/kubernetes/kubernetes/pull/118764",
        "https://github.com/kubernetes/kubernetes/pull/118790",
        "https://github.com/kubernetes/kubernetes/pull/118791",
    ]
    assert f.days == 2
    assert (f.until_text, f.until_zone) == ("EOD Thursday PDT", "America/Los_Angeles")
    assert f.reason == "Swap on cgroup v2 is the main ask from\ntwo large users."
    assert f.risks_adding == "Low: behind the NodeSwap gate."
    assert f.risks_cutting == "Users wait another release."


# ------------------------------------------------------------------- variants


@pytest.mark.parametrize("bullet", ["*", "\u2022", "-", "", "1."])
def test_it_reads_any_bullet_style(bullet):
    if bullet == "1.":
        text = "\n".join(f"{i}. {line[2:]}" for i, line in enumerate(template().splitlines()) if line.startswith("* "))
    else:
        text = template(bullet=bullet)
    parsed = parse_request_email(text)
    assert parsed.missing == []
    assert parsed.fields.days == 2
    assert parsed.fields.sig == "node"
    assert parsed.fields.risks_cutting == "Users wait."


@pytest.mark.parametrize("key", ["PR #'s", "PR #\u2019s", "PR #s", "PRs", "PR(s)", "Pull requests", "PR#'s"])
def test_it_reads_the_pr_key_with_any_apostrophe(key):
    parsed = parse_request_email(template(prs=f"{key}: https://github.com/kubernetes/kubernetes/pull/1"))
    assert parsed.fields.pr_urls == ["https://github.com/kubernetes/kubernetes/pull/1"]


def test_it_keeps_several_pr_urls_in_written_order_whatever_the_separator():
    prs = (
        "PR #'s: https://github.com/kubernetes/kubernetes/pull/3 https://github.com/kubernetes/kubernetes/pull/1;"
        "https://github.com/kubernetes/test-infra/pull/2, https://github.com/kubernetes/kubernetes/pull/3"
    )
    parsed = parse_request_email(template(prs=prs))
    assert parsed.fields.pr_urls == [
        "https://github.com/kubernetes/kubernetes/pull/3",
        "https://github.com/kubernetes/kubernetes/pull/1",
        "https://github.com/kubernetes/test-infra/pull/2",
    ]


def test_it_keeps_bare_pr_numbers_as_written_without_inventing_a_repository():
    parsed = parse_request_email(template(prs="PR #'s: #123456 and 123457"))
    assert parsed.fields.pr_urls == ["#123456", "#123457"]
    assert any("without a repository" in w for w in parsed.warnings)


def test_it_accepts_no_pr_yet_without_calling_the_field_missing():
    parsed = parse_request_email(template(prs="PR #'s: N/A"))
    assert parsed.fields.pr_urls == []
    assert "pr_urls" not in parsed.missing


@pytest.mark.parametrize(
    "answer",
    [
        "5055 (https://github.com/kubernetes/enhancements/issues/5055)",
        "https://github.com/kubernetes/enhancements/issues/5055",
        "5055",
        "#5055",
        "kubernetes/enhancements#5055",
        "[#5055](https://github.com/kubernetes/enhancements/issues/5055)",
    ],
)
def test_it_reads_the_issue_as_a_number_a_url_or_both(answer):
    parsed = parse_request_email(template(issue=f"k/enhancements repo issue #: {answer}"))
    assert parsed.fields.issue_url == "https://github.com/kubernetes/enhancements/issues/5055"
    assert parsed.kep_number == 5055
    # The subject says KEP-2400: the issue wins, and the disagreement is reported.
    assert any("KEP-2400" in w for w in parsed.warnings)


def test_it_takes_the_kep_number_from_the_subject_when_the_issue_is_missing():
    parsed = parse_request_email(template(issue=None).replace("KEP-2400", "KEP 1880"))
    assert parsed.kep_number == 1880
    assert parsed.missing == ["issue_url"]
    assert "k/enhancements repo issue #" in parsed.problems["issue_url"]


def test_it_reports_no_kep_number_when_nothing_names_one():
    parsed = parse_request_email(template(issue=None).replace("KEP-2400", "swap"))
    assert parsed.kep_number is None
    assert "kep_number" in parsed.problems


@pytest.mark.parametrize(
    ("answer", "days", "until_text", "zone"),
    [
        ("7 (until EOD Friday CET)", 7, "EOD Friday CET", "Europe/Berlin"),
        ("3 (until end of day Monday AoE)", 3, "end of day Monday AoE", "AoE"),
        ("7 days", 7, "", ""),
        ("2 days (until Thursday 25 July EOD PT)", 2, "Thursday 25 July EOD PT", "America/Los_Angeles"),
        ("4, until EOD Wednesday PST", 4, "EOD Wednesday PST", "America/Los_Angeles"),
        ("3 days (by EOD Friday EDT)", 3, "EOD Friday EDT", "America/New_York"),
        ("5 (until 18:00 IST Friday)", 5, "18:00 IST Friday", ""),  # IST: India, Ireland or Israel
        ("2 (until 12:00 UTC Friday)", 2, "12:00 UTC Friday", "UTC"),
        ("1 (until end of day Tuesday, Europe/Madrid)", 1, "end of day Tuesday, Europe/Madrid", "Europe/Madrid"),
        ("3 (until EOD Monday UTC+2)", 3, "EOD Monday UTC+2", "Etc/GMT-2"),
        ("~3 more days", 3, "", ""),
        ("1 week", 7, "", ""),
    ],
)
def test_it_reads_the_days_and_the_until_with_its_zone(answer, days, until_text, zone):
    parsed = parse_request_email(template(days=f"Additional time needed (in days): {answer}"))
    assert "days" not in parsed.missing
    assert parsed.fields.days == days
    assert parsed.fields.until_text == until_text
    assert parsed.fields.until_zone == zone


def test_the_2025_wording_sets_aoe_when_no_other_zone_is_written():
    key = "Additional time needed (in calendar days, due end of day AoE)"
    assert parse_request_email(template(days=f"{key}: 3")).fields.until_zone == "AoE"
    written = parse_request_email(template(days=f"{key}: 3 (until EOD Monday PT)")).fields
    assert written.until_zone == "America/Los_Angeles"


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("seven", "not written in digits"),
        ("a couple of days", "not written in digits"),
        ("3-4 days", "range"),
        ("", "empty"),
        ("until Friday", "no number of days"),
        ("26 July", "no number of days"),
    ],
)
def test_it_names_the_reason_days_could_not_be_read(answer, reason):
    parsed = parse_request_email(template(days=f"Additional time needed (in days): {answer}"))
    assert "days" in parsed.missing
    assert reason in parsed.problems["days"]


def test_it_reports_a_missing_days_line_by_its_template_name():
    parsed = parse_request_email(template(days=None))
    assert parsed.missing == ["days"]
    assert parsed.problems["days"] == 'the "Additional time needed (in days):" line is not in the email'


@pytest.mark.parametrize(
    ("answer", "stage"),
    [
        ("beta", "beta"),
        ("Beta", "beta"),
        ("GA", "stable"),
        ("Stable (GA)", "stable"),
        ("alpha -> beta", "beta"),
        ("graduating to stable", "stable"),
        ("Beta (graduating from alpha)", "beta"),
        ("deprecation", "deprecation"),
    ],
)
def test_it_reads_the_stage(answer, stage):
    assert (
        parse_request_email(template(stage=f"Enhancement status (alpha/beta/stable): {answer}")).fields.stage == stage
    )


def test_it_accepts_enhancement_stage_as_the_key_and_names_an_unknown_stage():
    assert parse_request_email(template(stage="Enhancement stage: alpha")).fields.stage == "alpha"
    parsed = parse_request_email(template(stage="Enhancement status (alpha/beta/stable): at risk"))
    assert parsed.fields.stage == ""
    assert parsed.missing == ["stage"]


@pytest.mark.parametrize(
    ("answer", "sig"),
    [
        ("node", "node"),
        ("SIG Node", "node"),
        ("sig-api-machinery", "api-machinery"),
        ("API Machinery", "api-machinery"),
    ],
)
def test_it_reads_the_sig_as_a_slug(answer, sig):
    assert parse_request_email(template(sig=f"SIG: {answer}")).fields.sig == sig


def test_it_takes_the_first_of_several_sigs_and_says_so():
    parsed = parse_request_email(template(sig="SIG: node, scheduling"))
    assert parsed.fields.sig == "node"
    assert any("scheduling" in w for w in parsed.warnings)


def test_it_strips_the_template_prompts_wherever_they_stand():
    parsed = parse_request_email(
        template(
            adding="Risks from adding code late (to k8s stability, testing, etc.): Low.",
            cutting="Risks from cutting enhancement: (partial implementation, critical customer use case, etc.) None",
        )
    )
    assert parsed.fields.risks_adding == "Low."
    assert parsed.fields.risks_cutting == "None"


def test_it_strips_a_prompt_followed_by_its_own_colon():
    parsed = parse_request_email(
        template(adding="Risks from adding code late: (to k8s stability, testing, etc.): Low.")
    )
    assert parsed.fields.risks_adding == "Low."


def test_it_reads_keys_in_single_asterisk_bold_as_mail_clients_render_them():
    text = template(bullet="*", name="*Enhancement name:* Swap", sig="*SIG*: node")
    parsed = parse_request_email(text)
    assert parsed.fields.enhancement_name == "Swap"
    assert parsed.fields.sig == "node"


def test_it_reads_bold_markdown_keys():
    text = template(bullet="*", name="**Enhancement name:** Swap", sig="**SIG**: node")
    parsed = parse_request_email(text)
    assert parsed.fields.enhancement_name == "Swap"
    assert parsed.fields.sig == "node"


def test_it_reads_an_answer_over_several_lines_until_a_blank_line():
    text = template(reason="Reason this enhancement is critical for this milestone: first line").replace(
        "first line\n", "first line\n  second line\n  third line\n"
    )
    parsed = parse_request_email(text)
    assert parsed.fields.reason == "first line\nsecond line\nthird line"
    assert parsed.fields.risks_adding == "Low."


def test_it_does_not_swallow_the_sign_off_into_the_last_answer():
    text = template().replace("\n\nThanks!\n", "\nThanks!\nJane\n")
    assert parse_request_email(text).fields.risks_cutting == "Users wait."


def test_it_reads_extra_blank_lines_and_a_quoted_request():
    quoted = "\n".join(f"> {line}" if line else ">" for line in template().replace("\n", "\n\n").splitlines())
    parsed = parse_request_email(f"+1 from SIG Node, please approve.\n\n{quoted}\n")
    assert parsed.missing == []
    assert parsed.fields.days == 2
    assert parsed.amendments == []


def test_it_reads_doubly_quoted_lines():
    text = "\n".join(f">> {line}" for line in template().splitlines())
    parsed = parse_request_email(text)
    assert parsed.missing == []
    assert parsed.fields.pr_urls == ["https://github.com/kubernetes/kubernetes/pull/118764"]


def test_it_lists_every_missing_field_in_template_order():
    parsed = parse_request_email("Subject: Exception for KEP-12 (code freeze)\n\n* SIG: node\n* PR #'s: N/A\n")
    assert parsed.missing == [
        "enhancement_name", "stage", "issue_url", "days", "reason", "risks_adding", "risks_cutting",
    ]  # fmt: skip
    assert parsed.kep_number == 12


@pytest.mark.parametrize(
    ("subject", "kind"),
    [
        ("Exception Request for KEP-2400 (code freeze)", "code-freeze"),
        ("Enhancements Freeze exception: KEP-2400", "enhancements-freeze"),
        ("[sig-auth] PRR freeze exception for KEP-2400", "prr-freeze"),
        ("Docs Freeze exception request KEP-2400", "docs-freeze"),
        ("Exception Request for KEP-2400", ""),
    ],
)
def test_it_guesses_the_freeze_from_the_subject(subject, kind):
    text = template().replace("Exception Request for KEP-2400 (code freeze)", subject)
    assert parse_request_email(text).milestone_kind == kind


def test_it_guesses_the_freeze_from_the_body_when_the_subject_has_none():
    text = template().replace("(code freeze)", "").replace("Hi,", "Hi, requesting a code-freeze exception.")
    assert parse_request_email(text).milestone_kind == "code-freeze"


def test_it_refuses_to_guess_when_the_body_names_two_freezes():
    text = template().replace("(code freeze)", "").replace("Hi,", "We met enhancements freeze but missed code freeze.")
    parsed = parse_request_email(text)
    assert parsed.milestone_kind == ""
    assert any("several freezes" in w for w in parsed.warnings)


# ------------------------------------------------------------------- amendments


@pytest.mark.parametrize(
    "update",
    [
        "Updating the time requested to 4 days.",
        "update: we need 4 days",
        "UPDATE - we now need 4 more days",
        "Changing my request to 4 days, sorry for the noise.",
        "Actually, 4 days will be enough.",
        "* Additional time needed (in days): 4",
    ],
)
def test_a_later_change_of_days_becomes_an_amendment(update):
    parsed = parse_request_email(template(days="Additional time needed (in days): 6") + f"\n{update}\n")
    assert parsed.fields.days == 6
    assert [a.days for a in parsed.amendments] == [4]
    assert parsed.amendments[0].text == update.strip()


@pytest.mark.parametrize(
    "update",
    [
        "Update: reducing the request from 6 days to 4 days.",
        "We would need 4 days instead of 6.",
        "Changing the request: 4 days (down from 6).",
    ],
)
def test_it_takes_the_new_number_when_a_change_names_both(update):
    parsed = parse_request_email(template(days="Additional time needed (in days): 6") + f"\n{update}\n")
    assert [a.days for a in parsed.amendments] == [4]


def test_a_release_team_decision_is_not_an_amendment():
    text = template() + "\nThis exception is approved, you now have 5 days (until EOD Friday PT).\n"
    assert parse_request_email(text).amendments == []


def test_a_fraction_of_a_day_is_rounded_up_with_a_warning():
    parsed = parse_request_email(template(days="Additional time needed (in days): 1.5 days"))
    assert parsed.fields.days == 2
    assert any("not a whole number" in w for w in parsed.warnings)


def test_a_minus_zero_date_header_is_utc():
    parsed = parse_request_email("Date: Wed, 24 Jul 2024 05:00:00 -0000\n" + template())
    assert parsed.sent_at == dt.datetime(2024, 7, 24, 5, 0, tzinfo=dt.UTC)


def test_several_amendments_keep_their_order():
    text = template(days="Additional time needed (in days): 6") + (
        "\nUpdating the time requested to 4 days.\n\n"
        "Later: updating the time requested to 3 days (until EOD Friday PT).\n"
    )
    parsed = parse_request_email(text)
    assert [(a.days, a.until_text, a.until_zone) for a in parsed.amendments] == [
        (4, "", ""),
        (3, "EOD Friday PT", "America/Los_Angeles"),
    ]


def test_a_top_posted_update_is_newer_than_the_quoted_request():
    quoted = "\n".join(f"> {line}" for line in template(days="Additional time needed (in days): 6").splitlines())
    parsed = parse_request_email(f"Updating the time requested to 2 days.\n\nOn Tue, Jane wrote:\n{quoted}\n")
    assert parsed.fields.days == 6
    assert [a.days for a in parsed.amendments] == [2]


def test_restating_the_same_days_is_not_an_amendment():
    text = template() + "\nJust to confirm: updating the time requested to 2 days as above.\n"
    assert parse_request_email(text).amendments == []


def test_a_change_before_the_template_is_not_an_amendment():
    text = template().replace("Hi,", "Hi, we first thought we would need to update this to 9 days.")
    assert parse_request_email(text).amendments == []


def test_a_change_in_words_is_reported_not_guessed():
    parsed = parse_request_email(template() + "\nUpdating the time requested to three days.\n")
    assert parsed.amendments == []
    assert any("in words" in w for w in parsed.warnings)


def test_days_in_the_reason_are_not_an_amendment():
    text = template(reason="Reason this enhancement is critical for this milestone: we now need 3 days of soak.")
    parsed = parse_request_email(text)
    assert parsed.amendments == []
    assert parsed.fields.reason == "we now need 3 days of soak."


def test_amendment_as_dict_is_json_safe():
    a = Amendment(days=2, until_text="EOD Friday PT", until_zone="America/Los_Angeles", text="x")
    a.sent_at = dt.datetime(2024, 7, 24, 9, 0, tzinfo=dt.UTC)
    assert a.as_dict()["sent_at"] == "2024-07-24T09:00:00Z"


# ---------------------------------------------------------------------- helpers


@pytest.mark.parametrize(
    ("text", "zone"),
    [
        ("EOD Friday CET", "Europe/Berlin"),
        ("EOD Friday CEST", "Europe/Berlin"),
        ("end of day AoE", "AoE"),
        ("end of day aoe", "AoE"),
        ("anywhere on earth", "AoE"),
        ("Friday PT", "America/Los_Angeles"),
        ("Friday PDT", "America/Los_Angeles"),
        ("Friday ET", "America/New_York"),
        ("Friday IST", ""),
        ("Friday GMT", "UTC"),
        ("Friday UTC-12", "AoE"),
        ("Friday Asia/Tokyo", "Asia/Tokyo"),
        ("Friday evening", ""),
        ("Friday Pt. Reyes", ""),
    ],
)
def test_zone_from_text(text, zone):
    assert zone_from_text(text)[0] == zone


@pytest.mark.parametrize(("label", "named"), [("CST", "China"), ("IST", "India"), ("BST", "Bangladesh")])
def test_an_abbreviation_of_several_zones_is_flagged_never_guessed(label, named):
    zone, warnings = zone_from_text(f"EOD Friday {label}")
    assert zone == ""
    assert len(warnings) == 1
    assert named in warnings[0]
    assert "not guessed" in warnings[0]


def test_read_days_prefers_the_count_over_a_date_in_parentheses():
    assert read_days("3 (until 26 July)")[0] == 3
    assert read_days("until 26 July (3 days)")[0] == 3
    assert read_days("(until 26 July)")[0] is None


def test_it_survives_empty_and_garbage_input():
    for text in ["", "   ", "\x00\x01", "> > >", "Subject:\n\n*:\n"]:
        parsed = parse_request_email(text)
        assert "days" in parsed.missing
        json.dumps(parsed.as_dict())


# ---------------------------------------------------------------------- raw mail


def test_it_decodes_a_raw_quoted_printable_message():
    raw = read("raw-mime-quoted-printable.eml")
    assert "=E2=80=A2" in raw
    parsed = parse_request_email(raw)
    f = parsed.fields
    assert parsed.missing == []
    assert parsed.subject == "[sig-node] Code freeze exception request \u2013 KEP-1287 In-place Pod resize"
    assert parsed.sender == "Tim Allclair"
    assert parsed.sent_at == dt.datetime(2025, 3, 6, 4, 15, tzinfo=dt.UTC)
    assert parsed.kep_number == 1287
    assert parsed.milestone_kind == "code-freeze"
    assert f.enhancement_name == "In-place update of Pod resources"
    assert (f.stage, f.sig) == ("beta", "node")
    assert f.issue_url == "https://github.com/kubernetes/enhancements/issues/1287"
    assert f.pr_urls == [
        "https://github.com/kubernetes/kubernetes/pull/128266",
        "https://github.com/kubernetes/kubernetes/pull/128267",
    ]
    assert (f.days, f.until_text, f.until_zone) == (3, "end of day Friday AoE", "AoE")
    assert f.reason.endswith("which has a review in progress from a SIG Node approver.")
    assert f.risks_adding == "Low; the feature is behind InPlacePodVerticalScaling."
    assert f.risks_cutting == "VPA users wait another release."
    assert "=E2=80" not in f.source_text


def test_it_reads_an_html_only_message():
    items = "".join(f"<li>{line[2:]}</li>" for line in template().splitlines() if line.startswith("* "))
    raw = (
        "From: Jane <jane@example.com>\nDate: Wed, 24 Jul 2024 05:00:00 +0000\n"
        "Subject: Exception Request for KEP-2400 (code freeze)\nMIME-Version: 1.0\n"
        'Content-Type: text/html; charset="utf-8"\n\n'
        f"<html><body><p>Hi&nbsp;all,</p><ul>{items}</ul><p>Thanks!</p></body></html>\n"
    )
    parsed = parse_request_email(raw)
    assert parsed.missing == []
    assert parsed.fields.days == 2
    assert parsed.fields.pr_urls == ["https://github.com/kubernetes/kubernetes/pull/118764"]
    assert parsed.sent_at == dt.datetime(2024, 7, 24, 5, 0, tzinfo=dt.UTC)


def test_it_reads_lines_wrapped_by_the_mail_client():
    text = template(
        days="Additional time needed (in calendar days, due end of day\nAoE): 3 (until end\nof day Monday AoE)",
        prs="PR #'s: https://github.com/kubernetes/kubernetes/pull/1,\nhttps://github.com/kubernetes/kubernetes/pull/2",
        cutting="Risks from cutting enhancement: (partial implementation, critical customer\n"
        "usecase, etc.) Users wait.",
    )
    parsed = parse_request_email(text)
    f = parsed.fields
    assert parsed.missing == []
    assert (f.days, f.until_text, f.until_zone) == (3, "end of day Monday AoE", "AoE")
    assert f.pr_urls == [
        "https://github.com/kubernetes/kubernetes/pull/1",
        "https://github.com/kubernetes/kubernetes/pull/2",
    ]
    assert f.risks_cutting == "Users wait."


def test_until_prefers_until_and_needs_a_time_right_after_the_keyword():
    answer = "2 (blocked by the review from SIG Node approvers, expected by EOD Friday PT)"
    f = parse_request_email(template(days=f"Additional time needed (in days): {answer}")).fields
    assert (f.days, f.until_text, f.until_zone) == (2, "EOD Friday PT", "America/Los_Angeles")
    answer = "3 (due Friday, until end of day Monday AoE)"
    assert parse_request_email(template(days=f"Additional time needed (in days): {answer}")).fields.until_text == (
        "end of day Monday AoE"
    )


def test_over_long_answers_are_cut_to_the_column_size_with_a_warning():
    parsed = parse_request_email(template(name="Enhancement name: " + "x" * 400))
    assert len(parsed.fields.enhancement_name) == 300
    assert any("Enhancement name is longer than 300" in w for w in parsed.warnings)


# --------------------------------------------------------------------- properties


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_any_text_parses_without_raising_and_serialises(text):
    json.dumps(parse_request_email(text).as_dict())


@settings(max_examples=200, deadline=None)
@given(
    bullet=st.sampled_from(["*", "\u2022", "-", "", "  *", "1."]),
    apostrophe=st.sampled_from(["'", "\u2019", ""]),
    lower=st.booleans(),
    newline=st.sampled_from(["\n", "\r\n"]),
    quote=st.sampled_from(["", "> ", ">> ", "> > "]),
    blank_lines=st.integers(min_value=0, max_value=2),
    days=st.integers(min_value=1, max_value=30),
    wording=st.sampled_from(["(in days)", "(in calendar days, due end of day AoE)"]),
    stage=st.sampled_from(["alpha", "beta", "stable"]),
)
def test_the_template_reads_back_in_any_common_dress(
    bullet, apostrophe, lower, newline, quote, blank_lines, days, wording, stage
):
    pairs = [
        ("Enhancement name", "Pod level resources"),
        ("Enhancement status (alpha/beta/stable)", stage),
        ("SIG", "node"),
        ("k/enhancements repo issue #", "2837 (https://github.com/kubernetes/enhancements/issues/2837)"),
        (
            f"PR #{apostrophe}s",
            "https://github.com/kubernetes/kubernetes/pull/1 https://github.com/kubernetes/kubernetes/pull/2",
        ),
        (f"Additional time needed {wording}", f"{days} (until EOD Friday PT)"),
        ("Reason this enhancement is critical for this milestone", "It is nearly done."),
        ("Risks from adding code late", "(to k8s stability, testing, etc.) Low."),
        ("Risks from cutting enhancement", "(partial implementation, critical customer usecase, etc.) Users wait."),
    ]
    body = []
    for key, answer in pairs:
        key = key.lower() if lower else key
        prefix = f"{bullet} " if bullet else ""
        body.append(f"{quote}{prefix}{key}: {answer}")
        body.extend([quote.rstrip()] * blank_lines)
    text = newline.join(["Subject: Exception request for KEP-2837 (code freeze)", "", *body, ""])
    parsed = parse_request_email(text)
    f = parsed.fields
    assert parsed.missing == []
    assert parsed.kep_number == 2837
    assert (f.enhancement_name, f.stage, f.sig) == ("Pod level resources", stage, "node")
    assert f.issue_url == "https://github.com/kubernetes/enhancements/issues/2837"
    assert f.pr_urls == [
        "https://github.com/kubernetes/kubernetes/pull/1",
        "https://github.com/kubernetes/kubernetes/pull/2",
    ]
    assert (f.days, f.until_text, f.until_zone) == (days, "EOD Friday PT", "America/Los_Angeles")
    assert (f.reason, f.risks_adding, f.risks_cutting) == ("It is nearly done.", "Low.", "Users wait.")
    assert parsed.amendments == []


# ----------------------------------------------------- rewritten patterns (linear time)


def test_a_shorthand_reference_after_a_dash_or_an_ellipsis_names_the_repository_alone():
    from exceptions.reader.template import read_prs

    refs, problem, _ = read_prs("-kubernetes/kubernetes#125000 and ...kubernetes/website#47000")
    assert (refs, problem) == (["kubernetes/kubernetes#125000", "kubernetes/website#47000"], "")


def test_a_google_groups_name_keeps_no_blank_inside_its_quotes():
    from exceptions.reader import display_name

    assert display_name("'Jane Doe ' via dev <dev@kubernetes.io>") == "Jane Doe"
    assert display_name("'Jane  Doe' via kubernetes-sig-release <kubernetes-sig-release@googlegroups.com>") == (
        "Jane Doe"
    )


def test_yaml_keys_and_review_commands_indented_with_no_break_spaces_are_recognised():
    """An HTML-only mail's &nbsp; arrives as U+00A0 before a key or a command."""
    from exceptions.reader.refusals import KEP_PR_RE, YAML_ONLY_RE

    nbsp = "\u00a0\u00a0"
    assert len(YAML_ONLY_RE.findall(f"{nbsp}date_requested: 2024-07-24\n{nbsp}thread: https://x\n")) == 2
    assert KEP_PR_RE.search(f"{nbsp}- Issue link: https://github.com/kubernetes/enhancements/issues/1")


def test_an_address_nested_past_pythons_limit_is_read_as_no_address():
    from exceptions.reader import display_name, parse_address

    assert parse_address(":<" * 2000) == ("", "")
    assert display_name(":<" * 2000 + "@") == ":<" * 2000 + "@"  # no address found: the value as written
