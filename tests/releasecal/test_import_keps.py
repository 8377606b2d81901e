"""import_keps: kep.yaml files -> Enhancement, owners and (optionally) tracking rows."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from releasecal.importers.keps import keps_import
from releasecal.models import Enhancement, EnhancementOwner, Tracking

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
            "sig-node/0000-broken-yaml": "title: [unclosed\n",
            "sig-node/0001-no-number": "title: Something\nowning-sig: sig-node\n",
            "sig-node/0002-bad-stage": OCI.replace("kep-number: 4639", "kep-number: 9999").replace(
                "stage: beta", "stage: gamma"
            ),
        },
    )
    with pytest.raises(CommandError, match=r"1 KEPs imported, 3 files failed"):
        call_command("import_keps", str(root))
    err = capsys.readouterr().err
    assert "0000-broken-yaml/kep.yaml: Not valid YAML (line 2, column 1): expected ',' or ']'" in err
    assert "0001-no-number/kep.yaml: kep-number None is not a number." in err
    assert "0002-bad-stage/kep.yaml: stage 'gamma' is not one of alpha, beta, stable, deprecated." in err
    assert list(Enhancement.objects.values_list("number", flat=True)) == [2400]


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
