"""Issue 13 items 3, 4, 10 and authority per release: who may decide, sign off and amend.

The rule lives in exceptions.services (decide_refusal, _signoff_role); every face
(API, admin, Slack) goes through it. These tests drive the API where the attack came
through it, and check that nothing changed afterwards.
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from exceptions.models import ExceptionRequest, SignOff
from exceptions.services import (
    RequestFields,
    exception_request_approve,
    exception_request_reject,
    exception_request_submit,
)
from releasecal.errors import NotAllowed
from releasecal.models import Release, SigLead
from tests.support.paths import TEST_DATA

SIGS_EXCERPT = TEST_DATA / "sigs" / "sigs-excerpt.yaml"


def _client(user: User) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def second_member(release) -> User:
    user = User.objects.create_user("shadow", "shadow@example.com", "pw")
    release.team.add(user)
    return user


def _file_via_api(user: User, **extra):
    body = {"kep": 2400, "release": "1.31", "kind": "code-freeze", "days": 2, "reason": "e2e flake", **extra}
    return _client(user).post("/api/v1/exceptions/", body, format="json")


def _approve(user: User, request_id: int):
    return _client(user).post(f"/api/v1/exceptions/{request_id}/approve/", {}, format="json")


def test_entering_a_request_for_a_made_up_name_and_approving_it_is_refused(
    kep, code_freeze, release_team_member, second_member
):
    filed = _file_via_api(release_team_member, requester_name="Alice Nobody", submitted_at="2024-07-24T03:00:00Z")
    assert filed.status_code == 201, filed.content
    request = ExceptionRequest.objects.get(pk=filed.json()["id"])
    assert request.entered_by == release_team_member
    assert request.requester is None
    assert request.requester_name == "Alice Nobody"
    refused = _approve(release_team_member, request.pk)
    assert refused.status_code == 403
    assert refused.json()["message"] == (
        "You entered this request and it names no other person who exists (no user, no email author), "
        "so someone else on the release team must decide it."
    )
    request.refresh_from_db()
    assert request.state == ExceptionRequest.State.PENDING
    assert not hasattr(request, "decision")
    # Someone else on the team may decide it.
    assert _approve(second_member, request.pk).status_code == 200


def test_the_named_requester_never_decides_even_on_the_team(kep, code_freeze, release_team_member, second_member):
    request = exception_request_submit(
        enhancement=kep, milestone=code_freeze, requester=release_team_member, entered_by=second_member,
        fields=RequestFields(days=2), submitted_at=code_freeze.deadline,
    )  # fmt: skip
    with pytest.raises(NotAllowed) as err:
        exception_request_approve(request=request, actor=release_team_member)
    assert err.value.message == "You filed this request, so someone else on the release team must decide it."
    # The one who entered it for a real, other user may decide it.
    decision = exception_request_approve(request=request, actor=second_member)
    assert decision.decided_by == second_member


def test_entering_an_emailed_request_for_its_author_stays_allowed_and_may_decide(kep, code_freeze, release_team_member):
    request = exception_request_submit(
        enhancement=kep, milestone=code_freeze, requester=None, requester_name="Kat Cosgrove",
        requester_email="kat@example.org", entered_by=release_team_member,
        fields=RequestFields(days=2), submitted_at=code_freeze.deadline,
    )  # fmt: skip
    assert exception_request_approve(request=request, actor=release_team_member).decided_by == release_team_member


def test_last_cycles_team_cannot_decide_this_cycles_requests(pending_request, kinds):
    previous = Release.objects.create(
        slug="1.30", name="Kubernetes v1.30", zone="America/Los_Angeles",
        start_date=dt.date(2024, 1, 8), status=Release.Status.RELEASED,
    )  # fmt: skip
    veteran = User.objects.create_user("veteran")
    # The old global grant: the "Release Team" group (its permission) and last cycle's team.
    veteran.groups.add(Group.objects.get(name="Release Team"))
    previous.team.add(veteran)
    previous.leads.add(veteran)
    with pytest.raises(NotAllowed) as err:
        exception_request_reject(request=pending_request, actor=veteran)
    assert err.value.message == (
        "Only the 1.31 release team (its leads and team, kept per release) "
        "can approve or reject its exception requests."
    )
    pending_request.refresh_from_db()
    assert pending_request.state == ExceptionRequest.State.PENDING
    # On this cycle's team too (as a lead): now they may.
    pending_request.release.leads.add(veteran)
    assert exception_request_reject(request=pending_request, actor=veteran).decided_by == veteran


def test_an_inactive_team_member_cannot_decide(pending_request, release_team_member):
    release_team_member.is_active = False
    release_team_member.save()
    with pytest.raises(NotAllowed):
        exception_request_approve(request=pending_request, actor=release_team_member)


def test_amending_after_a_rejection_cannot_ask_for_fewer_days(kep, code_freeze, requester, release_team_member):
    first = exception_request_submit(
        enhancement=kep, milestone=code_freeze, requester=requester,
        fields=RequestFields(days=5), submitted_at=code_freeze.deadline,
    )  # fmt: skip
    exception_request_reject(request=first, actor=release_team_member, note="too long")
    again = exception_request_submit(
        enhancement=kep, milestone=code_freeze, requester=requester,
        fields=RequestFields(days=5), submitted_at=code_freeze.deadline + dt.timedelta(hours=1),
    )  # fmt: skip
    response = _client(requester).patch(f"/api/v1/exceptions/{again.pk}/", {"days": 1}, format="json")
    assert response.status_code == 400
    assert response.json()["extra"] == {"rejected_days": 5, "days": 1}
    again.refresh_from_db()
    assert again.days == 5
    assert again.revisions.count() == 1
    # Amending up (or equal) is fine.
    assert _client(requester).patch(f"/api/v1/exceptions/{again.pk}/", {"days": 6}, format="json").status_code == 200


def _signoff(user: User, request_id: int, **body):
    return _client(user).post(f"/api/v1/exceptions/{request_id}/signoff/", body, format="json")


def test_anyone_cannot_sign_off_and_the_requester_never(pending_request, requester):
    stranger = User.objects.create_user("stranger")
    refused = _signoff(stranger, pending_request.pk, role="SIG Node chair")
    assert refused.status_code == 403
    assert "Only a lead of a SIG named on KEP-2400 (node)" in refused.json()["message"]
    assert _signoff(requester, pending_request.pk).status_code == 403
    # Even a lead of the KEP's SIG cannot sign off their own request.
    SigLead.objects.create(sig="node", github="requester", role=SigLead.Role.CHAIR, user=requester)
    assert _signoff(requester, pending_request.pk).json()["message"] == (
        "The requester cannot sign off their own request."
    )
    assert not SignOff.objects.exists()


def test_a_sig_lead_signs_off_with_the_role_from_sigs_yaml_not_from_the_body(pending_request):
    mrunal = User.objects.create_user("mrunalp", "mrunal@example.com")
    _import()
    response = _signoff(mrunal, pending_request.pk, role="Release lead", note="+1")
    assert response.status_code == 201, response.content
    signoff = SignOff.objects.get()
    assert (signoff.author, signoff.role) == (mrunal, "SIG node chair")


def test_a_lead_of_another_sig_may_not_but_a_participating_sig_may(pending_request):
    saschagrunert = User.objects.create_user("saschagrunert")
    _import()
    assert _signoff(saschagrunert, pending_request.pk).status_code == 403  # SIG Release: not on KEP-2400
    kep = pending_request.enhancement
    kep.participating_sigs = ["node", "sig-release"]
    kep.save()
    assert _signoff(saschagrunert, pending_request.pk).status_code == 201
    assert SignOff.objects.get().role == "SIG release chair"


def test_a_release_team_member_signs_off_as_the_release_team(pending_request, release_team_member):
    assert _signoff(release_team_member, pending_request.pk, role="SIG Node chair").status_code == 201
    assert SignOff.objects.get().role == "1.31 release team"


def test_import_sigs_reads_chairs_and_tech_leads_of_the_real_file(db):
    User.objects.create_user("Verolop")  # the GitHub handle as username: linked
    User.objects.create_user("someone", "deads@redhat.com")  # not in this excerpt: nothing linked
    out = _import()
    assert out == "2 SIGs, 12 leads (1 linked to a user), 0 former leads removed, 2 mailing list addresses\n"
    assert sorted(SigLead.objects.filter(sig="node", role="chair").values_list("github", flat=True)) == [
        "SergeyKanzhelev",
        "haircommander",
        "mrunalp",
    ]
    assert SigLead.objects.get(sig="release", github="Verolop").get_role_display() == "Technical lead"
    assert SigLead.objects.get(github="Verolop").user.username == "Verolop"
    # Emeritus leads and working groups (wg-batch) are not signing SIG leads.
    assert not SigLead.objects.filter(github__in=["tpepper", "kannon92", "alculquicondor"]).exists()
    assert not SigLead.objects.filter(sig="batch").exists()
    # Idempotent; a lead no longer listed is removed, a hand-made link is kept.
    hand = User.objects.create_user("mrunal-on-our-side")
    SigLead.objects.filter(github="mrunalp", role="chair").update(user=hand)
    SigLead.objects.create(sig="node", github="stepped-down", role=SigLead.Role.CHAIR)
    assert _import() == "2 SIGs, 12 leads (2 linked to a user), 1 former leads removed, 2 mailing list addresses\n"
    assert SigLead.objects.get(github="mrunalp", role="chair").user == hand


def _import() -> str:
    import io

    out = io.StringIO()
    call_command("import_sigs", str(SIGS_EXCERPT), stdout=out)
    return out.getvalue()


def test_import_sigs_refuses_a_file_that_is_not_sigs_yaml(tmp_path, db):
    from django.core.management import CommandError

    path = tmp_path / "x.yaml"
    path.write_text("releases: []\n")
    with pytest.raises(CommandError, match=r"^Not a sigs\.yaml: no top-level 'sigs:' list\.$"):
        call_command("import_sigs", str(path))


def test_import_sigs_refuses_a_yaml_alias_bomb_in_one_line(tmp_path, db):
    from django.core.management import CommandError

    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    path = tmp_path / "sigs.yaml"
    path.write_text("\n".join(lines) + "\nsigs: [{dir: x, name: *a8}]\n")
    with pytest.raises(
        CommandError,
        match=r"/sigs\.yaml: YAML refused: its aliases stand for more than 100,000 values \(an alias bomb\)\.$",
    ):
        call_command("import_sigs", str(path))
