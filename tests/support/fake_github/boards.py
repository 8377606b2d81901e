"""The Kubernetes release tracking board's fields, as ../shared/data/k8s-board/README.md
lists them from the v1.36/v1.37 handbooks, to build a fake board with in one call."""

from __future__ import annotations

from tests.support.fake_github import model

STATUS = [
    "Tracked For PRR Freeze",
    "At Risk For PRR Freeze",
    "Tracked For Enhancement Freeze",
    "At Risk For Enhancement Freeze",
    "Tracked For Code Freeze",
    "At Risk For Code Freeze",
    "Tracked For Docs Freeze",
    "At Risk For Docs Freeze",
    "Exception Pending",
    "Exception Approved",
    "Deferred",
    "Removed From Milestone",
]

# (name, kind, options) in the board's order; kind is a ProjectV2FieldType name.
K8S_FIELDS: list[tuple[str, str, list[str]]] = [
    ("Type", model.SINGLE_SELECT, ["Net New", "Major Change", "Graduating", "Deprecation", "Docs"]),
    ("Stage", model.SINGLE_SELECT, ["Alpha", "Beta", "Stable"]),
    ("Status", model.SINGLE_SELECT, STATUS),
    ("Enhancements Contact", model.TEXT, []),
    (
        "SIG",
        model.SINGLE_SELECT,
        [
            "sig-api-machinery",
            "sig-apps",
            "sig-auth",
            "sig-autoscaling",
            "sig-cli",
            "sig-cloud-provider",
            "sig-instrumentation",
            "sig-network",
            "sig-node",
            "sig-scheduling",
            "sig-storage",
            "sig-windows",
        ],
    ),
    ("PRR Status", model.SINGLE_SELECT, ["Not Started", "In Progress", "Approved"]),
    ("Note", model.TEXT, []),
    (
        "Exception Request Type",
        model.SINGLE_SELECT,
        [
            "PRR Freeze",
            "Enhancements Freeze",
            "Code and Test Freeze",
            "Docs Freeze",
        ],
    ),
    ("Exception Status", model.SINGLE_SELECT, ["In Review", "Approved", "Rejected"]),
    ("Exception Request Link", model.TEXT, []),
    ("Exception Request Slack Thread", model.TEXT, []),
    ("Exception Related PRs", model.TEXT, []),
    ("Additional Time", model.NUMBER, []),
    ("Exception Request Date", model.DATE, []),
    ("Exception Decision Date", model.DATE, []),
    ("Exception Liaison", model.TEXT, []),
    ("Exception Request Notes", model.TEXT, []),
]


def k8s_board(fake, *, number: int = 241, release: str = "1.36", owner: str = "kubernetes") -> model.Project:
    """A "v<release> Release Tracking" board with every field of the handbook (16 custom
    fields plus GitHub's built-in ones), and no items yet."""
    project = fake.project(owner, number, f"v{release} Release Tracking")
    for name, kind, options in K8S_FIELDS:
        if kind == model.SINGLE_SELECT:
            project.add_single_select(name, options)
        elif kind == model.TEXT:
            project.add_text(name)
        elif kind == model.NUMBER:
            project.add_number(name)
        elif kind == model.DATE:
            project.add_date(name)
    return project
