"""import_keps on the real variety of kubernetes/enhancements' keps/ tree: each odd shape
below is an excerpt of a real kep.yaml or PRR file (path named above it), as of the tree's
commit 64765b4 (July 2026: 656 kep.yaml, 453 PRR files)."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from releasecal.importers.keps import keps_import
from releasecal.models import Enhancement, EnhancementOwner, EnhancementPerson, Tracking
from releasecal.selectors import enhancement_list_naming


def tree(tmp_path, files: dict[str, str]):
    """``files``: path under keps/ -> text."""
    for relative, text in files.items():
        path = tmp_path / "keps" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path / "keps"


def people(number: int, role: str) -> list[str]:
    rows = EnhancementPerson.objects.filter(enhancement__number=number, role=role).order_by("position")
    return list(rows.values_list("github", flat=True))


def by_path(result):
    return {item.path.split("/keps/", 1)[1]: item for item in result.files}


# keps/NNNN-kep-template/kep.yaml
TEMPLATE = """\
title: KEP Template
kep-number: NNNN
authors:
  - "@jane.doe"
owning-sig: sig-xyz
participating-sigs:
  - sig-aaa
  - sig-bbb
status: provisional|implementable|implemented|deferred|rejected|withdrawn|replaced
creation-date: yyyy-mm-dd
reviewers:
  - TBD
  - "@alice.doe"
approvers:
  - TBD
  - "@oscar.doe"
stage: alpha|beta|stable
latest-milestone: "v1.19"
milestone:
  alpha: "v1.19"
  beta: "v1.20"
  stable: "v1.22"
"""

# keps/sig-architecture/0000-kep-process/kep.yaml
KEP_PROCESS = """\
title: Kubernetes Enhancement Proposal Process
kep-number: 0000
authors:
  - "@calebamiles"
  - "@jbeda"
owning-sig: sig-architecture
participating-sigs:
  - kubernetes-wide
reviewers:
  - name: "@timothysc"
approvers:
  - name: "@bgrant0607"
editor:
  name: "@jbeda"
creation-date: 2017-08-22
status: implementable
"""

# keps/sig-api-machinery/5000-api-linting-crd-schema-tooling/kep.yaml
TEMPLATE_VALUES = """\
title: API linting and CRD schema tooling
kep-number: 5000
authors:
  - "@jpbetz"
owning-sig: sig-api-machinery
status: provisional|implementable|implemented|deferred|rejected|withdrawn|replaced
creation-date: 2025-01-29
reviewers:
  - "@deads2k"
approvers:
  - "@deads2k"
stage: alpha|beta|stable
latest-milestone: "TBD"
milestone:
  alpha: "TBD"
  beta: "TBD"
  stable: "TBD"
"""

# keps/sig-instrumentation/1753-logs-sanitization/kep.yaml
LOGS_SANITIZATION = """\
title: Kubernetes system components logs sanitization
kep-number: 1753
authors:
  - "@PurelyApplied"
  - "@serathius"
owning-sig: sig-instrumentation
participating-sigs:
  - sig-security
status: implemented (alpha)
creation-date: 2020-05-07
stage: alpha (deprecated)
latest-milestone: "1.24"
milestone:
  alpha: "v1.19"
  deprecated: "v1.24"
  removed: "v1.24"
reviewers:
  - "@ehashman"
approvers:
  - "@dashpole"
"""

# keps/sig-network/4004-deprecate-kube-proxy-version/kep.yaml
KUBE_PROXY_VERSION = """\
title: Deprecate status.nodeInfo.kubeProxyVersion field
kep-number: 4004
authors:
  - "@HirazawaUi"
owning-sig: sig-network
participating-sigs:
  - sig-node
status: implemented
creation-date: 2023-05-15
reviewers:
  - "@danwinship"
  - "@thockin"
approvers:
  - "@danwinship"
see-also: []
replaces: []
stage: disabled
latest-milestone: "v1.33"
milestone:
  deprecated: "v1.29"
  disabled: "v1.33"
"""

# keps/sig-node/281-dynamic-kubelet-configuration/kep.yaml
DYNAMIC_KUBELET_CONFIG = """\
title: Dynamic Kubelet Configuration
kep-number: 281
authors:
  - "@mtaufen"
owning-sig: sig-node
participating-sigs:
  - sig-cluster-lifecycle
status: removed
creation-date: 2017-04-26
reviewers:
  - "@lavalamp"
  - "@alejandroEsc"
approvers:
  - "@dchen1107"
stage: removed
latest-milestone: "v1.26"
milestone:
  alpha: "v1.8"
  beta: "v1.11"
  stable: "never"
  deprecated: "v1.22"
  removed: "v1.24" # from kubelet, left on control plane for skew nodes support
"""

# keps/sig-node/2133-kubelet-credential-providers/kep.yaml and the older
# keps/sig-cloud-provider/2133-out-of-tree-credential-provider/kep.yaml
CREDENTIAL_PROVIDERS = """\
title: Kubelet Credential Providers
kep-number: 2133
authors:
  - "@andrewsykim"
owning-sig: sig-node
participating-sigs:
  - sig-auth
  - sig-cloud-provider
status: implemented
stage: stable
latest-milestone: "v1.26"
"""
OUT_OF_TREE_CREDENTIAL_PROVIDERS = """\
title: Out-of-Tree Credential Providers
kep-number: 2133
authors:
  - "@mcrute"
owning-sig: sig-cloud-provider
editor: TBD
creation-date: 2019-10-04
last-updated: 2019-12-10
status: replaced # replaced by keps/sig-node/2133-kubelet-credential-providers
"""

# keps/sig-node/2043-pod-resource-concrete-assigments/kep.yaml
FOLDER_NUMBER_DIFFERS = """\
title: Pod Resource API reports the concrete resources assigned to containers
kep-number: 1884
authors:
  - "@fromanirh"
owning-sig: sig-node
status: implemented
"""

# keps/sig-cluster-lifecycle/kubeadm/2503-Artifact-Generation/kep.yaml (reviewers),
# keps/sig-api-machinery/1281-network-proxy/kep.yaml (approvers),
# keps/sig-node/589-efficient-node-heartbeats/kep.yaml (authors),
# keps/sig-api-machinery/2333-legacyflags-kflag/kep.yaml (a team),
# keps/sig-release/1498-kubernetes-yearly-support-period/kep.yaml (an underscore),
# keps/sig-cli/2380-data-driven-commands-for-kubectl/kep.yaml (a trailing blank),
# keps/sig-api-machinery/1929-built-in-default/kep.yaml (no @)
HANDLES = """\
title: Artifact Generation
kep-number: 2503
authors:
  - "@wojtek-t"
  - "with input from @bgrant0607, @dchen1107, @yujuhong, @lavalamp"
  - apelisse
owning-sig: sig-cluster-lifecycle
reviewers:
  - "@ncdc"
  - \u201c@neolit123\u201d
  - "@seans3 "
  - "@kubernetes/wg-component-standard"
  - "@quinton_hoole"
  - "@NCDC"
approvers:
  - "@deads2k - For Kube API Server portion of KEP"
  - "@bowei - For networking/proxy portion of KEP"
status: implementable
stage: alpha
"""

# participating-sigs as kep.yaml files write them: sig-node/2008 ('TBD'),
# sig-cli/2590 ('sig-arch'), sig-architecture/4330 ('wg-lts'), sig-node/4216
# ('Kubelet garbage collection WG'), provider-aws/2315 (null), sig-api-machinery/2887 ([])
PARTICIPATING = """\
title: Compatibility Versions
kep-number: 4330
authors: ["@jpbetz", "@logicalhan", "@Jefftree"]
owning-sig: sig-architecture
participating-sigs:
  - sig-api-machinery
  - sig-arch
  - wg-lts
  - TBD
  - Kubelet garbage collection WG
  - sig-architecture
status: implementable
stage: beta
latest-milestone: "v1.32"
milestone:
  alpha: "v1.31"
  beta: "v1.32"
  stable: "v1.34"
"""

# kep-number quoted (sig-api-machinery/4080-generic-controlplane), latest-milestone
# '0.0' (99 files), 'v1.21, v1.37' (sig-storage/1432), milestone values null and ''
# (sig-api-machinery/5793, sig-api-machinery/4222), reviewers null
# (sig-architecture/3136), an impossible creation-date (sig-api-machinery/4355)
ODD_VALUES = """\
title: Generic Controlplane
kep-number: "4080"
authors:
  - "@sttts"
owning-sig: sig-api-machinery
participating-sigs:
status: implementable
creation-date: 2023-14-05
reviewers:
approvers: []
stage: alpha
latest-milestone: "0.0"
milestone:
  alpha: "v1.21, v1.37"
  beta: ""
  stable:
"""

# keps/prod-readiness/sig-node/2400.yaml, keps/prod-readiness/sig-network/752.yaml
# (kep-number 0752: YAML 1.1's octal 490), keps/prod-readiness/sig-node/688.yaml (names
# 277), keps/prod-readiness/sig-api-machinery/5366.yaml (no @),
# keps/prod-readiness/sig-node/2273.yaml (no kep.yaml has 2273)
PRR_SWAP = (
    'kep-number: 2400\nalpha:\n  approver: "@deads2k"\nbeta:\n  approver: "@deads2k"\nstable:\n  approver: "@Deads2K"\n'
)
PRR_OCTAL = 'kep-number: 0752\nstable:\n  approver: "@wojtek-t"\n'
PRR_WRONG_NUMBER = 'kep-number: 277\nalpha:\n  approver: "@johnbelamaric"\n'
PRR_NO_AT = "kep-number: 5366\nalpha:\n  approver: jpbetz\n"
PRR_NO_KEP = 'kep-number: 2273\nalpha:\n  approver: "@deads2k"\n'

SWAP = """\
title: Node memory swap support
kep-number: 2400
authors:
  - "@ehashman"
  - "@iholder101"
owning-sig: sig-node
status: implemented
stage: stable
latest-milestone: "v1.34"
milestone:
  alpha: "v1.22"
  beta: "v1.28"
  stable: "v1.34"
"""


def small_kep(number: int, title: str = "", sig: str = "sig-node") -> str:
    return f"title: {title or f'KEP {number}'}\nkep-number: {number}\nauthors: ['@a{number}']\nowning-sig: {sig}\n"


@pytest.fixture
def real_tree(tmp_path):
    return tree(
        tmp_path,
        {
            "NNNN-kep-template/kep.yaml": TEMPLATE,
            "sig-architecture/0000-kep-process/kep.yaml": KEP_PROCESS,
            "sig-api-machinery/5000-api-linting-crd-schema-tooling/kep.yaml": TEMPLATE_VALUES,
            "sig-instrumentation/1753-logs-sanitization/kep.yaml": LOGS_SANITIZATION,
            "sig-network/4004-deprecate-kube-proxy-version/kep.yaml": KUBE_PROXY_VERSION,
            "sig-node/281-dynamic-kubelet-configuration/kep.yaml": DYNAMIC_KUBELET_CONFIG,
            "sig-node/2133-kubelet-credential-providers/kep.yaml": CREDENTIAL_PROVIDERS,
            "sig-cloud-provider/2133-out-of-tree-credential-provider/kep.yaml": OUT_OF_TREE_CREDENTIAL_PROVIDERS,
            "sig-node/2043-pod-resource-concrete-assigments/kep.yaml": FOLDER_NUMBER_DIFFERS,
            "sig-cluster-lifecycle/kubeadm/2503-Artifact-Generation/kep.yaml": HANDLES,
            "sig-architecture/4330-compatibility-versions/kep.yaml": PARTICIPATING,
            "sig-api-machinery/4080-generic-controlplane/kep.yaml": ODD_VALUES,
            "sig-node/2400-node-swap/kep.yaml": SWAP,
            "sig-network/0752-endpointslices/kep.yaml": small_kep(752, "EndpointSlice API", "sig-network"),
            "sig-node/688-pod-overhead/kep.yaml": small_kep(688, "Pod Overhead"),
            "sig-api-machinery/5366-x/kep.yaml": small_kep(5366, "X", "sig-api-machinery"),
            "prod-readiness/sig-node/2400.yaml": PRR_SWAP,
            "prod-readiness/sig-network/752.yaml": PRR_OCTAL,
            "prod-readiness/sig-node/688.yaml": PRR_WRONG_NUMBER,
            "prod-readiness/sig-api-machinery/5366.yaml": PRR_NO_AT,
            "prod-readiness/sig-node/2273.yaml": PRR_NO_KEP,
            "prod-readiness/template/nnnn.yaml": 'kep-number: 0000\nalpha:\n  approver: ""\n',
        },
    )


def test_the_real_variety_imports_with_exit_0_and_one_line_per_note(db, real_tree):
    out, err = io.StringIO(), io.StringIO()
    call_command("import_keps", str(real_tree), stdout=out, stderr=err)  # no CommandError: exit 0
    out, err = out.getvalue(), err.getvalue()
    assert "skipped NNNN-kep-template/kep.yaml: the KEP template (NNNN-kep-template), not a KEP" in out
    assert (
        "skipped sig-architecture/0000-kep-process/kep.yaml: a folder without a KEP number (0000-kep-process), "
        "not a KEP"
    ) in out
    assert (
        "skipped sig-cloud-provider/2133-out-of-tree-credential-provider/kep.yaml: KEP-2133 (status replaced) is "
        "also sig-node/2133-kubelet-credential-providers/kep.yaml, which is imported"
    ) in out
    assert "16 kep.yaml files: 13 created, 0 updated, 0 unchanged, 3 skipped, 0 refused;" in out
    assert "Skipped by kind: duplicate 1, template 1, unnumbered 1." in out
    assert "Warnings by kind: handle 3, milestone 1, number 1, prr 2, sig 3, stage 2, status 3." in out
    assert "13 KEPs imported, 0 files failed." in out
    assert "ERROR" not in err
    assert err.count("\n") == 15  # one line per warning
    numbers = [281, 688, 752, 1753, 1884, 2133, 2400, 2503, 4004, 4080, 4330, 5000, 5366]
    assert sorted(Enhancement.objects.values_list("number", flat=True)) == numbers


def test_odd_stages_are_read_or_reported(db, real_tree):
    result = keps_import(directory=real_tree)
    files = by_path(result)
    stages = dict(Enhancement.objects.values_list("number", "kep_stage"))
    assert stages[1753] == "deprecated"
    assert [w.text for w in files["sig-instrumentation/1753-logs-sanitization/kep.yaml"].warnings] == [
        "status 'implemented (alpha)' is none of provisional, implementable, implemented, deferred, rejected, "
        "withdrawn, replaced; not recorded",
        "stage 'alpha (deprecated)' read as deprecated",
    ]
    assert (stages[4004], stages[281], stages[2400]) == ("disabled", "removed", "stable")
    assert stages[5000] == ""
    assert [w.text for w in files["sig-api-machinery/5000-api-linting-crd-schema-tooling/kep.yaml"].warnings] == [
        "status 'provisional|implementable|implemented|deferred|rejected|withdrawn|replaced' is the template's "
        "list of choices; not recorded",
        "stage 'alpha|beta|stable' is the template's list of choices; not recorded",
    ]


def test_the_status_the_cleanup_sweep_reads_is_recorded(db, real_tree):
    keps_import(directory=real_tree)
    status = dict(Enhancement.objects.values_list("number", "kep_status"))
    assert [status[n] for n in (2400, 4004, 4330, 2133)] == [
        "implemented",
        "implemented",
        "implementable",
        "implemented",
    ]
    # 'removed' and 'implemented (alpha)' are no kep.yaml status: not recorded, so the
    # sweep asks rather than closes.
    assert (status[281], status[1753], status[5000]) == ("", "", "")


def test_latest_milestone_and_the_milestone_of_each_stage(db, real_tree):
    keps_import(directory=real_tree)
    kep = {e.number: e for e in Enhancement.objects.all()}
    assert (kep[2400].latest_milestone, kep[2400].stage_milestones) == (
        "1.34",
        {"alpha": "1.22", "beta": "1.28", "stable": "1.34"},
    )
    assert kep[281].stage_milestones == {"alpha": "1.8", "beta": "1.11", "deprecated": "1.22", "removed": "1.24"}
    assert kep[4004].stage_milestones == {"deprecated": "1.29", "disabled": "1.33"}
    assert (kep[1753].latest_milestone, kep[1753].stage_milestones) == (
        "1.24",
        {"alpha": "1.19", "deprecated": "1.24", "removed": "1.24"},
    )
    # TBD, '', null, '0.0' mean no release yet; 'v1.21, v1.37' is reported.
    assert (kep[5000].latest_milestone, kep[5000].stage_milestones) == ("", {})
    assert (kep[4080].latest_milestone, kep[4080].stage_milestones) == ("", {})
    assert kep[4080].title == "Generic Controlplane"  # kep-number quoted, creation-date impossible: imported


def test_authors_approvers_and_reviewers_in_every_way_they_are_written(db, real_tree):
    result = keps_import(directory=real_tree)
    assert people(2503, "author") == ["wojtek-t", "apelisse"]
    assert people(2503, "reviewer") == ["ncdc", "neolit123", "seans3"]  # "@NCDC" is ncdc again
    assert people(2503, "approver") == ["deads2k", "bowei"]
    assert [
        w.text for w in by_path(result)["sig-cluster-lifecycle/kubeadm/2503-Artifact-Generation/kep.yaml"].warnings
    ] == [
        "authors: 'with input from @bgrant0607, @dchen1107, @yujuhong, @lavalamp' is not a GitHub handle; left out",
        "reviewers: '@kubernetes/wg-component-standard' names a team, not a person; left out",
        "reviewers: '@quinton_hoole' is not a GitHub handle; left out",
    ]
    assert sorted(EnhancementOwner.objects.filter(enhancement__number=2503).values_list("github", flat=True)) == [
        "apelisse",
        "wojtek-t",
    ]
    assert people(4330, "author") == ["jpbetz", "logicalhan", "Jefftree"]  # a flow list
    assert people(4080, "reviewer") == people(4080, "approver") == []  # null and []


def test_the_prr_approver_of_each_stage(db, real_tree):
    result = keps_import(directory=real_tree)
    prr = {
        number: dict(
            EnhancementPerson.objects.filter(enhancement__number=number, role="prr_approver").values_list(
                "stage", "github"
            )
        )
        for number in (2400, 752, 688, 5366, 4330)
    }
    assert prr[2400] == {"alpha": "deads2k", "beta": "deads2k", "stable": "Deads2K"}
    assert prr[752] == {"stable": "wojtek-t"}  # 0752 is read as 752, not octal 490: no warning
    assert prr[688] == {"alpha": "johnbelamaric"}  # the file's name is the number
    assert prr[5366] == {"alpha": "jpbetz"}
    assert prr[4330] == {}
    assert [w.text for w in by_path(result)["sig-node/688-pod-overhead/kep.yaml"].warnings] == [
        "the PRR file 688.yaml says kep-number 277"
    ]
    assert [w.text for w in result.notes] == ["keps/prod-readiness/sig-node/2273.yaml: no kep.yaml has number 2273"]


def test_participating_sigs_as_they_are_written(db, real_tree):
    result = keps_import(directory=real_tree)
    kep = Enhancement.objects.get(number=4330)
    assert (kep.owning_sig, kep.participating_sigs) == ("architecture", ["api-machinery", "wg-lts"])
    assert [w.text for w in by_path(result)["sig-architecture/4330-compatibility-versions/kep.yaml"].warnings] == [
        "participating-sigs 'sig-arch' read as sig-architecture",
        "participating-sigs 'TBD' names no SIG (sig-..., wg-...); left out",
        "participating-sigs 'Kubelet garbage collection WG' names no SIG (sig-..., wg-...); left out",
    ]
    assert Enhancement.objects.get(number=4080).participating_sigs == []  # null


def test_one_number_in_two_files_and_a_folder_that_says_another(db, real_tree):
    result = keps_import(directory=real_tree)
    kep = Enhancement.objects.get(number=2133)
    assert (kep.title, kep.kep_path) == (
        "Kubelet Credential Providers",
        "sig-node/2133-kubelet-credential-providers/kep.yaml",
    )
    assert [w.text for w in by_path(result)["sig-node/2043-pod-resource-concrete-assigments/kep.yaml"].warnings] == [
        "the folder says 2043; kep-number 1884 is used"
    ]


def test_a_second_run_changes_nothing(db, real_tree):
    keps_import(directory=real_tree)
    before = {
        "keps": list(Enhancement.objects.order_by("pk").values_list("pk", "updated_at")),
        "owners": list(EnhancementOwner.objects.order_by("pk").values_list("pk", "github")),
        "people": list(EnhancementPerson.objects.order_by("pk").values_list("pk", "github", "role", "stage")),
    }
    again = keps_import(directory=real_tree)
    assert again.outcomes() == {"unchanged": 13}
    assert before == {
        "keps": list(Enhancement.objects.order_by("pk").values_list("pk", "updated_at")),
        "owners": list(EnhancementOwner.objects.order_by("pk").values_list("pk", "github")),
        "people": list(EnhancementPerson.objects.order_by("pk").values_list("pk", "github", "role", "stage")),
    }


def test_a_changed_kep_yaml_updates_only_what_changed(db, real_tree):
    keps_import(directory=real_tree)
    path = real_tree / "sig-node/2400-node-swap/kep.yaml"
    path.write_text(SWAP.replace('  - "@iholder101"\n', "").replace("status: implemented", "status: implementable"))
    result = keps_import(directory=real_tree)
    assert result.outcomes() == {"unchanged": 12, "updated": 1}
    assert Enhancement.objects.get(number=2400).kep_status == "implementable"
    assert people(2400, "author") == ["ehashman"]
    # The owner row stays: it may carry an email or a Slack id given by hand.
    assert EnhancementOwner.objects.filter(enhancement__number=2400, github="iholder101").exists()


def test_release_tracking_with_every_stage(db, real_tree, release):
    out = io.StringIO()
    call_command("import_keps", str(real_tree), "--release", release.slug, stdout=out, stderr=io.StringIO())
    stages = dict(Tracking.objects.filter(release=release).values_list("enhancement__number", "stage"))
    assert [stages[n] for n in (4004, 281, 1753, 2400, 4330)] == ["deprecation"] * 3 + ["stable", "beta"]
    # No stage (or one not recorded): a warning, not a refusal.
    assert 5000 not in stages
    assert 1884 not in stages
    assert "KEPs imported, 0 files failed, 8 tracked in 1.31." in out.getvalue()


def test_keps_naming_a_handle_in_any_case(db, real_tree):
    keps_import(directory=real_tree)
    assert list(enhancement_list_naming(handle="@DEADS2K").values_list("number", flat=True)) == [2400, 2503, 5000]
    assert list(enhancement_list_naming(handle="deads2k", roles=["prr_approver"]).values_list("number", flat=True)) == [
        2400
    ]
    assert list(enhancement_list_naming(handle=" @Ehashman ", roles=["owner"]).values_list("number", flat=True)) == [
        2400
    ]
    assert list(enhancement_list_naming(handle="iholder101", roles=["reviewer"])) == []
    assert list(enhancement_list_naming(handle="@")) == []
    with pytest.raises(ValueError, match="roles"):
        enhancement_list_naming(handle="x", roles=["lead"])
