"""Cycle set-up (issue 24): a new cycle from the last one, every date shifted by weeks
with each deadline keeping its wall time in its zone (a DST gap or fold reported, never
guessed), team and policy copied or not; the admin page that imports a README (dry run
first, with its warnings) or makes the copy; the cockpit's warnings."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from releasecal import tz
from releasecal.cycle import cycle_create, cycle_plan
from releasecal.errors import ValidationFailed
from releasecal.models import Milestone, Release
from releasecal.services import milestone_create
from tests.support.paths import SHARED_DATA

UTC = dt.UTC
LA = "America/Los_Angeles"
README_136 = SHARED_DATA / "k8s-readmes" / "release-1.36.md"


@pytest.fixture
def la_release(kinds, release_team_member) -> Release:
    """Spring 2024 in Los Angeles: a freeze at 19:00 PST Tuesday 5 March (before the
    clocks change on 10 March), a date-only docs freeze, a timed window."""
    release = Release.objects.create(
        slug="1.30", name="Kubernetes v1.30", zone=LA, start_date=dt.date(2024, 1, 8), ga_date=dt.date(2024, 4, 17),
        request_window_hours={"code-freeze": 48}, exception_warn_days=5,
        announce_approvals=True, announce_dev_list="dev@kubernetes.io", announce_sig_list=False,
    )  # fmt: skip
    release.leads.add(release_team_member)
    milestone_create(
        release=release, kind=kinds["code-freeze"], title="Code Freeze",
        at=tz.localize(dt.datetime(2024, 3, 5, 19, 0), LA),
    )  # fmt: skip
    milestone_create(release=release, kind=kinds["docs-freeze"], title="Docs Freeze", on_date=dt.date(2024, 3, 19))
    milestone_create(
        release=release, kind=kinds["rc"], title="v1.30.0-rc.0 released",
        at=tz.localize(dt.datetime(2024, 3, 1, 10, 0), LA), ends_at=tz.localize(dt.datetime(2024, 3, 1, 12, 0), LA),
    )  # fmt: skip
    return release


def test_each_deadline_keeps_its_wall_time_across_the_change_of_clocks(la_release, release_team_member):
    plan = cycle_plan(source=la_release, slug="1.40", name="", weeks=1)
    assert plan.problems == []

    new = cycle_create(plan=plan, actor=release_team_member)

    freeze = new.milestones.get(kind__slug="code-freeze")
    # 19:00 PST (03:00 UTC) becomes 19:00 PDT (02:00 UTC): 6 days 23 hours later.
    assert freeze.at == dt.datetime(2024, 3, 13, 2, 0, tzinfo=UTC)
    assert tz.render_deadline(freeze.at, LA) == "19:00 PDT Tuesday 12 March 2024 (02:00 UTC Wednesday 13 March 2024)"
    assert new.milestones.get(kind__slug="docs-freeze").on_date == dt.date(2024, 3, 26)
    rc = new.milestones.get(kind__slug="rc")
    assert rc.title == "v1.40.0-rc.0 released"
    assert rc.at == dt.datetime(2024, 3, 8, 18, 0, tzinfo=UTC)
    assert rc.ends_at == dt.datetime(2024, 3, 8, 20, 0, tzinfo=UTC)
    assert (new.name, new.zone, new.start_date, new.ga_date) == (
        "Kubernetes v1.40", LA, dt.date(2024, 1, 15), dt.date(2024, 4, 24),
    )  # fmt: skip
    assert (new.request_window_hours, new.exception_warn_days) == ({"code-freeze": 48}, 5)
    assert (new.announce_approvals, new.announce_dev_list, new.announce_sig_list) == (True, "dev@kubernetes.io", False)
    assert list(new.leads.all()) == [release_team_member]
    assert set(new.team.all()) == set(la_release.team.all())
    assert new.status == Release.Status.PLANNING


def test_a_shift_into_a_gap_or_a_fold_is_reported_and_nothing_is_created(la_release, kinds):
    milestone_create(
        release=la_release, kind=kinds["enhancements-freeze"], title="Gap",
        at=tz.localize(dt.datetime(2024, 3, 3, 2, 30), LA),
    )  # fmt: skip
    milestone_create(
        release=la_release, kind=kinds["other"], title="Fold",
        at=tz.localize(dt.datetime(2024, 10, 27, 1, 30), LA),
    )  # fmt: skip

    plan = cycle_plan(source=la_release, slug="1.40", name="", weeks=1)

    assert plan.problems == [
        "Gap: 2024-03-10 02:30 does not exist in America/Los_Angeles: the clocks skip over it when daylight saving "
        "time starts. The two offsets around the gap are -07:00 and -08:00; give the time with an explicit offset "
        "or pick a time outside the gap.",
        "Fold: 2024-11-03 01:30 is ambiguous in America/Los_Angeles: it happens twice when daylight saving time "
        "ends, at UTC offset -07:00 and again at -08:00. Give the time with an explicit offset.",
    ]
    with pytest.raises(ValidationFailed, match="The new cycle was not created: Gap: 2024-03-10 02:30"):
        cycle_create(plan=plan)
    assert not Release.objects.filter(slug="1.40").exists()
    assert cycle_plan(source=la_release, slug="1.40", name="", weeks=2).problems == []


def test_team_and_policy_are_copied_only_when_asked(la_release):
    la_release.hard_stop = tz.localize(dt.datetime(2024, 3, 29, 17, 0), LA)
    la_release.save()
    new = cycle_create(
        plan=cycle_plan(source=la_release, slug="1.40", name="v1.40", weeks=15, copy_team=False, copy_policy=False)
    )
    assert (new.leads.count(), new.team.count()) == (0, 0)
    assert (new.request_window_hours, new.exception_warn_days, new.hard_stop) == ({}, 7, None)
    assert (new.announce_approvals, new.announce_dev_list, new.announce_sig_list) == (False, "", True)  # defaults

    kept = cycle_create(plan=cycle_plan(source=la_release, slug="1.41", name="", weeks=1))
    assert tz.render_deadline(kept.hard_stop, LA) == "17:00 PDT Friday 5 April 2024 (00:00 UTC Saturday 6 April 2024)"


def test_a_taken_slug_or_a_silly_shift_is_a_problem(la_release):
    assert cycle_plan(source=la_release, slug="1.30", name="", weeks=1).problems == [
        "A release 1.30 exists already: give another slug."
    ]
    assert cycle_plan(source=la_release, slug="1.40", name="", weeks=0).problems == ["Shift by 1 to 104 weeks."]


# ------------------------------------------------------------------------ the admin page


@pytest.fixture
def lead_client(release_team_member) -> Client:
    release_team_member.is_staff = True
    release_team_member.save()
    client = Client()
    client.force_login(release_team_member)
    return client


URL = "/admin/releasecal/release/setup/"


def test_a_readme_is_previewed_with_its_warnings_and_saved_only_on_apply(lead_client):
    text = README_136.read_text()

    preview = lead_client.post(URL, {"action": "readme-preview", "readme-readme_text": text})

    assert preview.status_code == 200
    body = preview.content.decode()
    assert "Dry run, nothing saved: k8s-readme schedule for 1.36 (created release 1.36)" in body
    assert 'id="readme-apply-button"' in body
    assert not Release.objects.filter(slug="1.36").exists()
    result = preview.context["readme_preview"]
    assert "<h3>Warnings (1)</h3>" in body
    assert (
        '<li class="warn">1.36 row 15 &#x27;Begin Feature blog freeze - Open placeholder PRs&#x27;: '
        "summary and table disagree: the summary (line 44)"
    ) in body

    applied = lead_client.post(URL, {"action": "readme-apply", "readme-readme_text": text})

    release = Release.objects.get(slug="1.36")
    assert applied.status_code == 302
    assert applied["Location"] == f"/admin/releasecal/release/{release.pk}/change/"
    assert release.milestones.count() == result.created


def test_an_uploaded_readme_is_previewed_and_bad_input_is_a_form_error(lead_client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("README.md", README_136.read_bytes(), content_type="text/markdown")
    preview = lead_client.post(URL, {"action": "readme-preview", "readme-readme_file": upload})
    assert "Dry run, nothing saved" in preview.content.decode()
    # The previewed text is what Apply sends: it is in the form now.
    assert "Kubernetes v1.36 Release Information" in preview.content.decode()

    empty = lead_client.post(URL, {"action": "readme-preview", "readme-readme_text": "  "})
    assert empty.status_code == 200
    assert "Upload the release README or paste its text." in empty.content.decode()
    binary = SimpleUploadedFile("x.png", b"\x89PNG\xff\xfe", content_type="image/png")
    bad = lead_client.post(URL, {"action": "readme-preview", "readme-readme_file": binary})
    assert "The file is not UTF-8 text: upload the README.md itself." in bad.content.decode()
    nothing = lead_client.post(URL, {"action": "readme-preview", "readme-readme_text": "hello"})
    assert nothing.status_code == 200
    assert 'id="readme-errors"' in nothing.content.decode()


def test_a_cycle_is_copied_from_the_page(lead_client, la_release):
    form = {
        "cycle-source": la_release.pk, "cycle-slug": "1.40", "cycle-name": "", "cycle-weeks": "1",
        "cycle-copy_team": "on",
    }  # fmt: skip
    preview = lead_client.post(URL, {"action": "cycle-preview", **form})
    body = preview.content.decode()
    assert "19:00 PDT Tuesday 12 March 2024" in body
    assert "policy defaults" in body
    assert not Release.objects.filter(slug="1.40").exists()

    done = lead_client.post(URL, {"action": "cycle-apply", **form})

    new = Release.objects.get(slug="1.40")
    assert done["Location"] == f"/admin/releasecal/release/{new.pk}/change/"
    assert new.milestones.count() == 3
    assert new.request_window_hours == {}


def test_a_gap_on_the_page_offers_no_create_button(lead_client, la_release, kinds):
    milestone_create(
        release=la_release, kind=kinds["other"], title="Gap", at=tz.localize(dt.datetime(2024, 3, 3, 2, 30), LA)
    )
    form = {"cycle-source": la_release.pk, "cycle-slug": "1.40", "cycle-weeks": "1"}
    body = lead_client.post(URL, {"action": "cycle-apply", **form}).content.decode()
    assert "Gap: 2024-03-10 02:30 does not exist in America/Los_Angeles" in body
    assert 'id="cycle-apply-button"' not in body
    assert not Release.objects.filter(slug="1.40").exists()


def test_staff_without_the_release_permission_get_403(db, kinds):
    staff = User.objects.create_user("clerk", is_staff=True)
    client = Client()
    client.force_login(staff)
    assert client.get(URL).status_code == 403
    member = User.objects.create_user("member", is_staff=True)
    member.groups.add(Group.objects.get(name="Release Team"))
    client.force_login(member)
    assert client.get(URL).status_code == 200
    assert Milestone.objects.count() == 0


def test_the_cockpit_warns_of_a_release_with_no_team(lead_client, la_release):
    la_release.status = Release.Status.ACTIVE
    la_release.save()
    la_release.leads.clear()
    la_release.team.clear()
    body = lead_client.get("/admin/").content.decode()
    assert '<span class="warn">1.30: no team, no reminder rules, no reminder channels</span>' in body
