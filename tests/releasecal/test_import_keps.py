"""import_keps: kep.yaml files -> Enhancement, owners and (optionally) tracking rows."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, transaction

from releasecal.importers.keps import keps_import
from releasecal.models import Enhancement, EnhancementOwner, Tracking
from releasecal.services import enhancement_upsert
from tests.releasecal.test_import_files import alias_bomb

SWAP = """
title: Node memory swap support
kep-number: 2400
authors:
  - "@ehashman"
  - "@iholder101"
owning-sig: sig-node
participating-sigs:
  - sig-node
status: implementable
creation-date: 2021-01-14
stage: stable
latest-milestone: "v1.34"
milestone:
  alpha: "v1.22"
  beta: "v1.28"
  stable: "v1.34"
"""

OCI = """
title: OCI VolumeSource
kep-number: 4639
authors: ["@saschagrunert"]
owning-sig: sig-node
participating-sigs: [sig-storage]
status: implementable
stage: beta
latest-milestone: v1.33
milestone: {alpha: v1.31, beta: v1.33}
"""


def kep_tree(tmp_path, files: dict[str, str]):
    for relative, text in files.items():
        path = tmp_path / "keps" / relative / "kep.yaml"
        path.parent.mkdir(parents=True)
        path.write_text(text)
    return tmp_path / "keps"


def test_it_upserts_keps_with_owners_and_sigs(db, tmp_path):
    root = kep_tree(tmp_path, {"sig-node/2400-swap": SWAP, "sig-node/4639-oci-volume-source": OCI})
    result = keps_import(directory=root)
    assert [f.number for f in result.imported] == [2400, 4639]
    swap = Enhancement.objects.get(number=2400)
    assert (swap.title, swap.owning_sig, swap.participating_sigs) == ("Node memory swap support", "node", [])
    assert sorted(swap.owners.values_list("github", flat=True)) == ["ehashman", "iholder101"]
    assert Enhancement.objects.get(number=4639).participating_sigs == ["storage"]
    assert swap.issue_url == "https://github.com/kubernetes/enhancements/issues/2400"


def test_reimporting_updates_in_place_without_duplicating_owners(db, tmp_path):
    root = kep_tree(tmp_path, {"sig-node/2400-swap": SWAP})
    keps_import(directory=root)
    (root / "sig-node/2400-swap/kep.yaml").write_text(SWAP.replace("Node memory swap support", "Swap support"))
    keps_import(directory=root)
    assert Enhancement.objects.get(number=2400).title == "Swap support"
    assert EnhancementOwner.objects.count() == 2


def test_release_option_adds_tracking_rows_with_the_stage(db, tmp_path, release):
    root = kep_tree(tmp_path, {"sig-node/2400-swap": SWAP, "sig-node/4639-oci": OCI})
    result = keps_import(directory=root, release_slug=release.slug)
    assert result.tracked == 2
    stages = dict(Tracking.objects.filter(release=release).values_list("enhancement__number", "stage"))
    assert stages == {2400: "stable", 4639: "beta"}


def test_bad_files_are_reported_one_by_one_and_the_rest_imported(db, tmp_path, capsys):
    root = kep_tree(
        tmp_path,
        {
            "sig-node/2400-swap": SWAP,
            "sig-node/9000-broken-yaml": "title: [unclosed\n",
            "sig-node/9001-no-number": "title: Something\nowning-sig: sig-node\n",
            "sig-node/9002-bad-stage": OCI.replace("kep-number: 4639", "kep-number: 9002").replace(
                "stage: beta", "stage: gamma"
            ),
        },
    )
    with pytest.raises(CommandError, match=r"2 KEPs imported, 2 files failed"):
        call_command("import_keps", str(root))
    err = capsys.readouterr().err
    assert "9000-broken-yaml/kep.yaml: Not valid YAML (line 2, column 1): expected ',' or ']'" in err
    assert "9001-no-number/kep.yaml: kep-number None is not a number." in err
    # A stage kep.yaml does not know is a warning: the KEP itself is imported.
    assert (
        "WARNING (stage) sig-node/9002-bad-stage/kep.yaml: stage 'gamma' is none of alpha, beta, stable, "
        "deprecated, disabled, removed; not recorded"
    ) in err
    assert list(Enhancement.objects.values_list("number", flat=True)) == [2400, 9002]
    assert Enhancement.objects.get(number=9002).kep_stage == ""


def test_a_missing_directory_or_release_is_a_clear_error(db, tmp_path):
    with pytest.raises(CommandError, match="no such directory"):
        call_command("import_keps", str(tmp_path / "nope"))
    root = kep_tree(tmp_path, {"sig-node/2400-swap": SWAP})
    with pytest.raises(CommandError, match=r"No release '9.99'"):
        call_command("import_keps", str(root), "--release", "9.99")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CommandError, match=r"no kep\.yaml files found"):
        call_command("import_keps", str(empty))


def test_the_command_succeeds_when_every_file_is_good(db, tmp_path, capsys):
    root = kep_tree(tmp_path, {"sig-node/2400-swap": SWAP})
    call_command("import_keps", str(root))
    out = capsys.readouterr().out
    assert "KEP-2400: Node memory swap support" in out
    assert "1 KEPs imported, 0 files failed." in out


# ------------------------------------------------------------ owners in any case


def test_owner_handles_are_one_row_in_any_case(db, tmp_path):
    root = kep_tree(tmp_path, {"sig-node/2400-swap": SWAP})
    keps_import(directory=root)
    enhancement_upsert(
        number=2400, title="Node memory swap support", owning_sig="node", owners=[{"github": "@EHashman"}]
    )
    (root / "sig-node/2400-swap/kep.yaml").write_text(SWAP.replace('"@ehashman"', '"@EHASHMAN"'))
    keps_import(directory=root)
    assert sorted(EnhancementOwner.objects.values_list("github", flat=True)) == ["ehashman", "iholder101"]


def test_the_database_refuses_a_second_owner_row_differing_in_case(db, kep):
    with pytest.raises(IntegrityError), transaction.atomic():
        EnhancementOwner.objects.create(enhancement=kep, github="KANNON92")


def test_a_reimport_naming_the_handle_alone_keeps_the_owners_email(db, tmp_path):
    root = kep_tree(tmp_path, {"sig-node/2400-swap": SWAP})
    keps_import(directory=root)
    EnhancementOwner.objects.filter(github="ehashman").update(email="eh@example.com", slack_id="U0EH")
    enhancement_upsert(number=2400, title="Swap", owning_sig="node", owners=[{"github": "EHashman"}])
    keps_import(directory=root)
    assert EnhancementOwner.objects.get(github="ehashman").email == "eh@example.com"


# ------------------------------------------------------------ hostile files


BOMB_1E6 = alias_bomb(6).replace("title: *a5", "kep-number: 9100\nowning-sig: sig-node\ntitle: *a5")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (SWAP.replace("kep-number: 2400", "kep-number: 2147483648"), "kep-number 2147483648 is past the largest"),
        (SWAP.replace("kep-number: 2400", "kep-number: " + "9" * 5000), "a number of 5,000 characters"),
        (SWAP.replace("title: Node memory swap support", 'title: "Evil\\0title"'), "title holds the control char"),
        (SWAP.replace("title: Node memory swap support", 'title: "bad \\ud800"'), "title holds a lone surrogate"),
        (SWAP.replace("title: Node memory swap support", "title: " + "x" * 301), "title is 301 characters long"),
        (SWAP + 'summary: "' + "y" * 1_000_000 + '"\n', "1,000,"),
        (SWAP.replace("title: Node memory swap support", "title: !!python/object/apply:os.system ['id']"), "tag"),
        (SWAP + "x: " + "[" * 5000 + "]" * 5000 + "\n", "nested more than 50 levels deep"),
        (BOMB_1E6, "an alias bomb"),
        ("{" + '"kep-number": 9101, "x": ' + "[" * 5000 + "]" * 5000 + "}", "JSON refused: nested more"),
        (SWAP.replace("owning-sig: sig-node", 'owning-sig: "sig-node\\r\\nX: y"'), "owning-sig 'sig-node x: y' is not"),
    ],
    ids=[
        "kep-number-2147483648",
        "kep-number-5000-digits",
        "nul",
        "surrogate",
        "title-301",
        "1-mb",
        "python-tag",
        "deep",
        "alias-bomb",
        "json",
        "sig-crlf",
    ],
)
def test_a_hostile_kep_yaml_is_one_line_and_the_rest_is_imported(db, tmp_path, capsys, text, message):
    root = kep_tree(tmp_path, {"sig-node/4639-oci": OCI, "sig-node/9999-hostile": text})
    with pytest.raises(CommandError, match=r"1 KEPs imported, 1 files failed"):
        call_command("import_keps", str(root))
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1
    assert "9999-hostile/kep.yaml: " in errors[0]
    assert message in errors[0]
    assert list(Enhancement.objects.values_list("number", flat=True)) == [4639]


def test_a_crlf_title_is_one_line_and_every_feed_answers(db, tmp_path, client, release):
    root = kep_tree(tmp_path, {"sig-node/9001-evil": SWAP.replace(
        "title: Node memory swap support", 'title: "Evil\\r\\nX-Injected: yes\\u2028too"'
    ).replace("kep-number: 2400", "kep-number: 9001")})  # fmt: skip
    keps_import(directory=root, release_slug=release.slug)
    assert Enhancement.objects.get(number=9001).title == "Evil X-Injected: yes too"
    for url in ("/calendar/kep/9001.ics", f"/calendar/{release.slug}/sig/node.ics", f"/calendar/{release.slug}.ics"):
        response = client.get(url)
        assert response.status_code == 200, url
    assert b"X-Injected: yes too" in client.get("/kep/9001/").content
