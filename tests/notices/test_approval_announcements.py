"""Approved exceptions announced by email to the release's lists (the 2026 process, issue
24): off by default; once per approval and per correction, to the dev list and the
owning SIG's list (import_sigs stores it from sigs.yaml)."""

from __future__ import annotations

import datetime as dt
import io
import re

import pytest
from django.core import mail
from django.core.management import call_command

from exceptions.services import (
    RequestFields,
    exception_decision_correct,
    exception_decision_reopen,
    exception_request_approve,
    exception_request_submit,
)
from notices import receivers
from notices.models import NoticeDelivery, ScheduleNotice
from notices.services import notice_send
from releasecal import tz
from releasecal.importers.sigs import mailing_list_address
from releasecal.models import SigContact
from releasecal.services import milestone_create
from tests.support.paths import TEST_DATA

APPROVAL_BODY = (
    "The Kubernetes v1.31 release team approved an exception for KEP-2400 (Node memory swap support, SIG node): "
    "Code Freeze, 2 days asked.\n"
    "Code Freeze: 19:00 PDT Tuesday 23 July 2024 (02:00 UTC Wednesday 24 July 2024)\n"
    "Granted until: end of Thursday 25 July 2024 PDT (07:00 UTC Friday 26 July 2024)\n"
    "Approved by lead.\n"
    "KEP: https://github.com/kubernetes/enhancements/issues/2400\n"
    "Exceptions of 1.31: http://127.0.0.1:8000/releases/1.31/exceptions/\n"
)


@pytest.fixture
def announcing(release):
    release.announce_approvals = True
    release.announce_dev_list = "dev@kubernetes.io"
    release.save()
    SigContact.objects.create(sig="node", mailing_list="sig-node@kubernetes.io")
    return release


def test_an_approval_is_emailed_once_to_the_dev_list_and_the_sigs_list_when_the_release_says_so(
    release, pending_request, release_team_member, django_capture_on_commit_callbacks
):
    SigContact.objects.create(sig="node", mailing_list="sig-node@kubernetes.io")
    release.announce_dev_list = "dev@kubernetes.io"
    release.save()
    exception_request_approve(request=pending_request, actor=release_team_member)
    assert not ScheduleNotice.objects.exists()  # off by default
    exception_decision_reopen(request=pending_request, actor=release_team_member, reason="Announce it.")
    release.announce_approvals = True
    release.save()
    with django_capture_on_commit_callbacks(execute=False):
        decision = exception_request_approve(request=pending_request, actor=release_team_member)
        receivers.exception_request_decided(None, request=pending_request, decision=decision)  # heard twice
    (notice,) = ScheduleNotice.objects.all()
    assert sorted(NoticeDelivery.objects.values_list("recipient", flat=True)) == [
        "email:dev@kubernetes.io",
        "email:sig-node@kubernetes.io",
    ]
    assert notice_send(notice_id=notice.pk)["sent"] == 2
    assert notice_send(notice_id=notice.pk)["sent"] == 0  # a retried or redelivered task sends nothing again
    assert sorted(m.to[0] for m in mail.outbox) == ["dev@kubernetes.io", "sig-node@kubernetes.io"]
    assert {m.subject for m in mail.outbox} == {"[releasecal] 1.31: exception approved for KEP-2400"}
    assert {m.body for m in mail.outbox} == {APPROVAL_BODY}


def test_a_correction_of_an_announced_approval_is_announced_too(
    announcing, pending_request, release_team_member, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        exception_request_approve(request=pending_request, actor=release_team_member)
        exception_decision_correct(
            request=pending_request, actor=release_team_member, reason="Approved the wrong KEP.", outcome="rejected"
        )
    notice = ScheduleNotice.objects.get(kind="correction")
    assert notice.title == "1.31: exception decision corrected for KEP-2400"
    assert notice.lines == [
        "The Kubernetes v1.31 release team corrected its decision on the exception for KEP-2400 "
        "(Node memory swap support, SIG node): Code Freeze.",
        "Code Freeze: 19:00 PDT Tuesday 23 July 2024 (02:00 UTC Wednesday 24 July 2024)",
        "Was: approved, granted until end of Thursday 25 July 2024 PDT (07:00 UTC Friday 26 July 2024) / "
        "19:00 AoE Thursday 25 July 2024",
        "Now: rejected",
        "Reason: Approved the wrong KEP.",
        "Corrected by lead.",
        "Exceptions of 1.31: http://127.0.0.1:8000/releases/1.31/exceptions/",
    ]
    assert notice.deliveries.count() == 2


def test_a_combined_requests_announcement_names_both_freezes(
    announcing, kep, requester, release_team_member, kinds, django_capture_on_commit_callbacks
):
    prr = milestone_create(
        release=announcing, kind=kinds["prr-freeze"], title="PRR Freeze",
        at=tz.parse_wall_time("2024-06-06 19:00", "America/Los_Angeles"),
    )  # fmt: skip
    combined = exception_request_submit(
        enhancement=kep, milestone=prr, also_milestone=announcing.milestones.get(kind__slug="enhancements-freeze"),
        requester=requester, submitted_at=prr.deadline + dt.timedelta(hours=1),
        fields=RequestFields(days=10, enhancement_name=kep.title, stage="beta", sig="node"),
    )  # fmt: skip
    with django_capture_on_commit_callbacks(execute=False):
        exception_request_approve(request=combined, actor=release_team_member)
        exception_decision_correct(
            request=combined, actor=release_team_member, reason="Approved the wrong KEP.", outcome="rejected"
        )
    approval, correction = ScheduleNotice.objects.order_by("pk")
    assert approval.lines[:4] == [
        "The Kubernetes v1.31 release team approved an exception for KEP-2400 (Node memory swap support, SIG node): "
        "PRR Freeze and Enhancements Freeze, 10 days asked (one completion date for both).",
        "PRR Freeze: 19:00 PDT Thursday 6 June 2024 (02:00 UTC Friday 7 June 2024)",
        "Enhancements Freeze: 19:00 PDT Thursday 13 June 2024 (02:00 UTC Friday 14 June 2024)",
        "Granted until: end of Sunday 16 June 2024 PDT (07:00 UTC Monday 17 June 2024)",
    ]
    assert correction.lines[:3] == [
        "The Kubernetes v1.31 release team corrected its decision on the exception for KEP-2400 "
        "(Node memory swap support, SIG node): PRR Freeze and Enhancements Freeze.",
        "PRR Freeze: 19:00 PDT Thursday 6 June 2024 (02:00 UTC Friday 7 June 2024)",
        "Enhancements Freeze: 19:00 PDT Thursday 13 June 2024 (02:00 UTC Friday 14 June 2024)",
    ]


def test_import_sigs_stores_each_sigs_list_address_where_the_url_gives_it_exactly(db):
    out = io.StringIO()
    call_command("import_sigs", str(TEST_DATA / "sigs" / "sigs-excerpt.yaml"), stdout=out)
    assert dict(SigContact.objects.values_list("sig", "mailing_list")) == {
        "node": "sig-node@kubernetes.io",  # https://groups.google.com/a/kubernetes.io/g/sig-node
        "release": "kubernetes-sig-release@googlegroups.com",  # .../forum/#!forum/kubernetes-sig-release
    }
    assert SigContact.objects.get(sig="node").name == "Node"
    assert [mailing_list_address(url) for url in [
        "https://groups.google.com/g/kubernetes-dev",
        "mailto:sig-docs@kubernetes.io",
        "https://lists.example.org/mailman/listinfo/sig-x",
        "https://groups.google.com/a/kubernetes.io/g/",
        "https://groups.google.com/a/kubernetes.io/forum/#!forum/steering",
    ]] == ["kubernetes-dev@googlegroups.com", "sig-docs@kubernetes.io", "", "", "steering@kubernetes.io"]  # fmt: skip


def test_the_release_page_has_the_announcement_settings_off_by_default(release, client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("admin", "admin@example.com", "pw"))
    page = client.get(f"/admin/releasecal/release/{release.pk}/change/").content.decode()
    assert "Approval announcements (off by default)" in page
    (checkbox,) = re.findall(r'<input type="checkbox" name="announce_approvals"[^>]*>', page)
    assert "checked" not in checkbox
    assert 'name="announce_dev_list"' in page
    assert client.get("/admin/releasecal/sigcontact/").status_code == 200
