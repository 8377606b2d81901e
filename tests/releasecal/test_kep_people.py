"""What kep.yaml says of a KEP, in every face: the API's enhancement (people, status,
stage, milestones), ``?naming=`` and the admin, where owner handles are one row in any case."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from releasecal.importers.keps import keps_import
from releasecal.models import EnhancementOwner
from tests.releasecal.test_import_keps_real import HANDLES, PRR_SWAP, SWAP, tree


@pytest.fixture
def imported(db, tmp_path):
    root = tree(
        tmp_path,
        {
            "sig-node/2400-node-swap/kep.yaml": SWAP,
            "sig-cluster-lifecycle/kubeadm/2503-Artifact-Generation/kep.yaml": HANDLES,
            "prod-readiness/sig-node/2400.yaml": PRR_SWAP,
        },
    )
    keps_import(directory=root)
    return root


def test_the_api_says_what_kep_yaml_says(imported, client):
    kep = client.get("/api/v1/enhancements/2400/").json()
    assert {k: kep[k] for k in ("kep_status", "kep_stage", "latest_milestone", "stage_milestones")} == {
        "kep_status": "implemented",
        "kep_stage": "stable",
        "latest_milestone": "1.34",
        "stage_milestones": {"alpha": "1.22", "beta": "1.28", "stable": "1.34"},
    }
    assert kep["people"] == [
        {"github": "ehashman", "role": "author", "stage": ""},
        {"github": "iholder101", "role": "author", "stage": ""},
        {"github": "deads2k", "role": "prr_approver", "stage": "alpha"},
        {"github": "deads2k", "role": "prr_approver", "stage": "beta"},
        {"github": "Deads2K", "role": "prr_approver", "stage": "stable"},
    ]


def test_the_api_lists_the_keps_naming_a_handle(imported, client):
    def naming(handle):
        return [k["number"] for k in client.get("/api/v1/enhancements/", {"naming": handle}).json()["results"]]

    assert naming("@DEADS2K") == [2400, 2503]
    assert naming("NCDC") == [2503]
    assert naming("nobody") == []
    assert client.get("/api/v1/enhancements/", {"naming": "x" * 41}).status_code == 400


def test_the_admin_refuses_two_owner_rows_of_one_handle_in_any_case(imported, client):
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    kep = EnhancementOwner.objects.filter(enhancement__number=2400).first().enhancement
    first, second = kep.owners.order_by("pk")
    form = {
        "number": kep.number, "title": kep.title, "owning_sig": kep.owning_sig, "participating_sigs": "[]",
        "issue_url": kep.issue_url,
        "owners-TOTAL_FORMS": 4, "owners-INITIAL_FORMS": 2, "owners-MIN_NUM_FORMS": 0, "owners-MAX_NUM_FORMS": 1000,
        "owners-0-id": first.pk, "owners-0-enhancement": kep.pk, "owners-0-github": first.github,
        "owners-1-id": second.pk, "owners-1-enhancement": kep.pk, "owners-1-github": second.github,
        "owners-2-enhancement": kep.pk, "owners-2-github": "@Alice",
        "owners-3-enhancement": kep.pk, "owners-3-github": "alice",
        "tracking-TOTAL_FORMS": 0, "tracking-INITIAL_FORMS": 0, "tracking-MIN_NUM_FORMS": 0,
        "tracking-MAX_NUM_FORMS": 1000,
    }  # fmt: skip
    response = client.post(f"/admin/releasecal/enhancement/{kep.pk}/change/", form)
    assert response.status_code == 200
    assert "@alice is already an owner (as @Alice)." in response.content.decode()
    form["owners-3-github"] = "@EHASHMAN"
    response = client.post(f"/admin/releasecal/enhancement/{kep.pk}/change/", form)
    assert "@EHASHMAN is already an owner (as @ehashman)." in response.content.decode()
    form["owners-3-github"] = ""
    response = client.post(f"/admin/releasecal/enhancement/{kep.pk}/change/", form)
    assert response.status_code == 302
    assert sorted(kep.owners.values_list("github", flat=True)) == ["Alice", "ehashman", "iholder101"]


def test_the_admin_shows_the_people_kep_yaml_names(imported, client):
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    kep = EnhancementOwner.objects.filter(enhancement__number=2400).first().enhancement
    page = client.get(f"/admin/releasecal/enhancement/{kep.pk}/change/").content.decode()
    assert (
        "Author: @ehashman, @iholder101; PRR approver (alpha): @deads2k; PRR approver (beta): @deads2k; "
        "PRR approver (stable): @Deads2K"
    ) in page
