"""The demo data ``manage.py seed_demo`` loads (idempotent).

- Kubernetes 1.29, 1.30 and 1.33 as published (releasecal/demo_data/k8s-schedules.json,
  a copy of the shared data), through the schedule importer, wrong labels and all;
- a current cycle, "1.36", in AoE as Kubernetes uses since 1.34, whose dates are derived
  from today so the demo always has freezes behind it and ahead of it;
- 15 real KEPs with owners, tracking rows in 1.36, users in the two groups, and
  exception requests in every state, each made through exceptions.services so the audit
  log has its rows.

Running it again changes nothing (on the same day; on a later day the current cycle's
milestones move with today, in place).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from django.contrib.auth.models import Group, User
from django.db import transaction

from exceptions.models import ExceptionRequest
from exceptions.services import (
    RequestFields,
    exception_request_amend,
    exception_request_approve,
    exception_request_reject,
    exception_request_signoff,
    exception_request_submit,
    exception_request_withdraw,
)
from releasecal import tz
from releasecal.importers.schedule import schedule_import
from releasecal.models import Enhancement, EnhancementOwner, Milestone, Release
from releasecal.services import enhancement_upsert, milestone_kinds_ensure, tracking_set

DATA_DIR = Path(__file__).resolve().parent / "demo_data"
SCHEDULES = DATA_DIR / "k8s-schedules.json"
EMAILS = DATA_DIR / "exception-emails"
PAST_RELEASES = ("1.29", "1.30", "1.33")
CURRENT = "1.36"

# number, title, owning SIG, participating SIGs, authors (GitHub), stage in 1.36, status
KEPS: list[tuple[int, str, str, list[str], list[str], str, str]] = [
    (2400, "Node memory swap support", "node", [], ["alice", "kannon92", "iholder101"], "stable", "tracked"),
    (5055, "DRA: device taints and tolerations", "node", ["scheduling"], ["bob", "pohly"], "alpha", "tracked"),
    (1880, "Multiple Service CIDRs", "network", [], ["bob", "aojea"], "stable", "tracked"),
    (3673, "Kubelet limit of parallel image pulls", "node", [], ["alice", "ruiwen-zhao"], "stable", "tracked"),
    (4639, "OCI VolumeSource", "node", ["storage"], ["bob", "saschagrunert"], "beta", "tracked"),
    (4222, "CBOR serializer", "api-machinery", [], ["bob", "benluddy"], "beta", "tracked"),
    (753, "Sidecar containers", "node", ["apps"], ["SergeyKanzhelev"], "stable", "tracked"),
    (1287, "In-place update of pod resources", "node", ["autoscaling"], ["tallclair"], "stable", "at_risk"),
    (2837, "Pod level resource specifications", "node", ["scheduling"], ["ndixita"], "beta", "tracked"),
    (3331, "Structured authentication config", "auth", [], ["aramase"], "stable", "tracked"),
    (3619, "Fine-grained SupplementalGroups control", "node", [], ["everpeace"], "stable", "tracked"),
    (3962, "Mutating admission policies", "api-machinery", [], ["jpbetz"], "beta", "at_risk"),
    (4247, "QueueingHint: per-plugin requeueing callbacks", "scheduling", [], ["sanposhiho"], "stable", "tracked"),
    (4368, "Job API managed-by mechanism", "apps", [], ["mimowo"], "stable", "tracked"),
    (4444, "Traffic distribution for Services", "network", [], ["gauravkghildiyal"], "stable", "deferred"),
]

USERS = {
    # username: (first name, last name, group, is_staff)
    "release-lead": ("Riley", "Lead", "Release Team", True),
    "enhancements-shadow": ("Sam", "Shadow", "Enhancements", True),
    "alice": ("Alice", "Author", None, False),
    "bob": ("Bob", "Author", None, False),
}


@dataclass
class DemoSummary:
    releases: list[str] = field(default_factory=list)
    milestones_created: int = 0
    warnings: int = 0
    requests_created: int = 0
    states: dict[str, int] = field(default_factory=dict)

    def lines(self) -> list[str]:
        states = ", ".join(f"{count} {state}" for state, count in sorted(self.states.items()))
        return [
            f"Releases: {', '.join(self.releases)} (current cycle: {CURRENT}).",
            f"Milestones created this run: {self.milestones_created}; schedule warnings: {self.warnings}.",
            f"KEPs: {Enhancement.objects.count()}; exception requests created this run: {self.requests_created}.",
            f"Exception requests by state: {states}.",
        ]


def _monday(day: dt.date) -> dt.date:
    return day - dt.timedelta(days=day.weekday())


def current_cycle_schedule(today: dt.date) -> dict:
    """Our schedule format for a 14-week cycle placed so that today is in week 7.

    Freezes are at the end of their day AoE (D+1 00:00 AoE = D+1 12:00 UTC), as the
    Kubernetes README writes them since 1.34. Enhancements freeze is 11-17 days behind
    today, code freeze 4-10 days ahead.
    """
    week1 = _monday(today - dt.timedelta(days=42))

    def day(week: int, weekday: int) -> dt.date:
        return week1 + dt.timedelta(days=7 * (week - 1) + weekday)

    def end_of(week: int, weekday: int) -> str:
        return f"{(day(week, weekday) + dt.timedelta(days=1)).isoformat()} 00:00"

    mon, tue, wed, thu = 0, 1, 2, 3
    ga = day(14, wed)
    milestones = [
        {"kind": "release-start", "title": "Start of Release Cycle", "date": day(1, mon)},
        {"kind": "alpha", "title": f"v{CURRENT}.0-alpha.1 released", "date": day(3, wed)},
        {"kind": "prr-freeze", "title": "Production Readiness Freeze", "at": end_of(4, thu),
         "description": "KEPs opting in need a PRR questionnaire and a PRR approver."},
        {"kind": "enhancements-freeze", "title": "Enhancements Freeze", "at": end_of(5, thu),
         "description": "KEPs must be implementable, with PRR approval, tracked for the release."},
        {"kind": "alpha", "title": f"v{CURRENT}.0-alpha.2 released", "date": day(6, wed)},
        {"kind": "other", "title": "Call for Exceptions", "date": day(7, mon)},
        {"kind": "feature-blog-freeze", "title": "Feature Blog Freeze", "at": end_of(7, thu)},
        {"kind": "alpha", "title": f"v{CURRENT}.0-alpha.3 released", "date": day(8, wed)},
        {"kind": "code-freeze", "title": "Code Freeze", "at": end_of(8, thu), "ends_at": f"{ga.isoformat()} 00:00",
         "description": "Only bug fixes merge into the milestone until the thaw."},
        {"kind": "test-freeze", "title": "Test Freeze", "at": end_of(8, thu)},
        {"kind": "event", "title": "KubeCon (demo)", "date": day(9, mon), "ends_on": day(9, thu)},
        {"kind": "beta", "title": f"v{CURRENT}.0-beta.0 released", "date": day(10, wed)},
        {"kind": "docs-freeze", "title": "Docs Freeze", "at": end_of(12, tue)},
        {"kind": "rc", "title": f"v{CURRENT}.0-rc.0 released", "date": day(12, tue)},
        {"kind": "rc", "title": f"v{CURRENT}.0-rc.1 released", "date": day(13, tue)},
        {"kind": "ga", "title": f"v{CURRENT}.0 released", "date": ga},
        {"kind": "other", "title": "Thaw", "date": ga},
    ]  # fmt: skip
    for item in milestones:
        for key in ("date", "ends_on"):
            if key in item:
                item[key] = item[key].isoformat()
    return {
        "release": {
            "slug": CURRENT,
            "name": f"Kubernetes v{CURRENT} (demo cycle)",
            "zone": tz.AOE,
            "start_date": day(1, mon).isoformat(),
            "ga_date": ga.isoformat(),
            "status": str(Release.Status.ACTIVE.value),
        },
        "milestones": milestones,
    }


def _users() -> dict[str, User]:
    users = {}
    for username, (first, last, group, is_staff) in USERS.items():
        user, created = User.objects.get_or_create(
            username=username,
            defaults={"first_name": first, "last_name": last, "email": f"{username}@example.com", "is_staff": is_staff},
        )
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
        if group:
            user.groups.add(Group.objects.get(name=group))
        users[username] = user
    return users


def _keps(release: Release, users: dict[str, User]) -> dict[int, Enhancement]:
    keps = {}
    for number, title, sig, participating, authors, stage, status in KEPS:
        enhancement = enhancement_upsert(
            number=number,
            title=title,
            owning_sig=sig,
            participating_sigs=participating,
            owners=[{"github": handle} for handle in authors],
        )
        for handle in authors:
            if handle in users:
                EnhancementOwner.objects.filter(
                    enhancement=enhancement, github__iexact=handle, user__isnull=True
                ).update(user=users[handle], email=users[handle].email)
        if not release.tracking.filter(enhancement=enhancement).exists():
            tracking_set(
                release=release,
                enhancement=enhancement,
                stage=stage,
                status=status,
                pr_urls=[f"https://github.com/kubernetes/enhancements/issues/{number}"],
            )
        keps[number] = enhancement
    return keps


def _email(name: str) -> str:
    return (EMAILS / name).read_text(encoding="utf-8")


def _requests(release: Release, keps: dict[int, Enhancement], users: dict[str, User], summary: DemoSummary) -> None:
    enhancements_freeze = release.milestones.get(kind__slug="enhancements-freeze")
    code_freeze = release.milestones.get(kind__slug="code-freeze")
    lead, alice, bob = users["release-lead"], users["alice"], users["bob"]
    now = tz.utc_now()
    after_ef = enhancements_freeze.deadline + dt.timedelta(hours=3)

    def submit(number: int, milestone: Milestone, requester: User, fields: RequestFields, at: dt.datetime):
        existing = ExceptionRequest.objects.filter(enhancement=keps[number], milestone=milestone).first()
        if existing is not None:
            return None
        summary.requests_created += 1
        return exception_request_submit(
            enhancement=keps[number], milestone=milestone, requester=requester, fields=fields, submitted_at=at
        )

    # KEP-5055, the AoE email: 3 days, amended to 2 in the same thread, a SIG lead's +1. Pending.
    email = _email("example-enhancements-freeze-aoe.txt")
    request = submit(
        5055,
        enhancements_freeze,
        bob,
        RequestFields(
            days=3,
            enhancement_name="DRA: device taints and tolerations",
            stage="alpha",
            sig="node",
            issue_url="https://github.com/kubernetes/enhancements/issues/5055",
            pr_urls=["https://github.com/kubernetes/enhancements/pull/5056"],
            until_text="until end of day Monday AoE",
            until_zone=tz.AOE,
            reason="the PRR review finished one hour after the freeze.",
            risks_adding="None, only the KEP text is late.",
            risks_cutting="Device vendors need the API this cycle.",
            source_text=email.split("Updating the time requested")[0].strip(),
        ),
        after_ef,
    )
    if request is not None:
        exception_request_amend(
            request=request,
            actor=bob,
            at=after_ef + dt.timedelta(hours=2),
            fields=RequestFields(
                days=2,
                enhancement_name="DRA: device taints and tolerations",
                stage="alpha",
                sig="node",
                issue_url="https://github.com/kubernetes/enhancements/issues/5055",
                pr_urls=["https://github.com/kubernetes/enhancements/pull/5056"],
                until_zone=tz.AOE,
                reason="the PRR review finished one hour after the freeze.",
                risks_adding="None, only the KEP text is late.",
                risks_cutting="Device vendors need the API this cycle.",
                source_text="Updating the time requested to 2 days.",
            ),
        )
        exception_request_signoff(
            request=request,
            author_label="SIG Node lead",
            role="SIG Node chair",
            note="+1, SIG Node supports this exception.",
            at=after_ef + dt.timedelta(hours=5),
        )

    # KEP-2400, the code-freeze email: 2 days, filed early, approved with the default grant.
    request = submit(
        2400,
        code_freeze,
        alice,
        RequestFields(
            days=2,
            enhancement_name="Node memory swap support",
            stage="beta",
            sig="node",
            issue_url="https://github.com/kubernetes/enhancements/issues/2400",
            pr_urls=[
                "https://github.com/kubernetes/kubernetes/pull/118764",
                "https://github.com/kubernetes/kubernetes/pull/118790",
            ],
            reason=(
                "the beta graduation is blocked only on the e2e test PR, which has lgtm and is waiting for approval."
            ),
            risks_adding="Low; the feature is behind a gate that is off by default.",
            risks_cutting="Users would wait another release for beta.",
            source_text=_email("example-code-freeze.txt"),
        ),
        now - dt.timedelta(hours=6),
    )
    if request is not None:
        exception_request_approve(request=request, actor=lead, note="Approved: e2e PR only, gate off by default.")

    # KEP-4639: asked for 4 days, granted 3 (an explicit granted_until).
    request = submit(
        4639,
        enhancements_freeze,
        bob,
        RequestFields(
            days=4,
            enhancement_name="OCI VolumeSource",
            stage="beta",
            sig="node",
            reason="SIG Storage review of the KEP update is scheduled for the day after the freeze.",
            risks_adding="Low: KEP text only.",
            risks_cutting="The beta would slip a full release.",
        ),
        after_ef + dt.timedelta(hours=1),
    )
    if request is not None:
        freeze_day = tz.deadline_day(enhancements_freeze.deadline, release.zone)
        exception_request_approve(
            request=request,
            actor=lead,
            granted_until=tz.end_of_day(freeze_day + dt.timedelta(days=3), release.zone),
            granted_zone=release.zone,
            note="Granted 3 of the 4 days asked.",
            at=after_ef + dt.timedelta(days=1),
        )

    # KEP-1880: 10 days (a warning: days, not weeks), rejected.
    request = submit(
        1880,
        enhancements_freeze,
        bob,
        RequestFields(
            days=10,
            enhancement_name="Multiple Service CIDRs",
            stage="stable",
            sig="network",
            reason="Conformance tests still need to be written.",
            risks_adding="Medium: networking data path.",
            risks_cutting="GA moves to the next release.",
        ),
        after_ef + dt.timedelta(hours=4),
    )
    if request is not None:
        exception_request_reject(
            request=request,
            actor=lead,
            note="Ten days is too long for an enhancements freeze exception; please target the next release.",
            at=after_ef + dt.timedelta(days=1, hours=2),
        )

    # KEP-4222: withdrawn by its author.
    request = submit(
        4222,
        enhancements_freeze,
        bob,
        RequestFields(days=2, enhancement_name="CBOR serializer", stage="beta", sig="api-machinery"),
        after_ef + dt.timedelta(hours=6),
    )
    if request is not None:
        exception_request_withdraw(
            request=request, actor=bob, note="The KEP update merged before the freeze after all."
        )

    # KEP-3673: filed early for code freeze, pending.
    submit(
        3673,
        code_freeze,
        alice,
        RequestFields(
            days=3,
            enhancement_name="Kubelet limit of parallel image pulls",
            stage="stable",
            sig="node",
            reason="The GA e2e test is flaky on one image-service runtime; the fix is in review.",
            risks_adding="Low: the limit is already on by default in beta.",
            risks_cutting="GA slips one release.",
        ),
        now - dt.timedelta(hours=2),
    )


@transaction.atomic
def demo_seed() -> DemoSummary:
    summary = DemoSummary()
    milestone_kinds_ensure()
    for slug in PAST_RELEASES:
        result = schedule_import(path=SCHEDULES, release_slug=slug, actor_label="seed_demo")
        summary.milestones_created += result.created
        summary.warnings += len(result.warnings)
    today = tz.utc_now().date()
    result = schedule_import(
        text=yaml.safe_dump(current_cycle_schedule(today), sort_keys=False), actor_label="seed_demo"
    )
    summary.milestones_created += result.created
    summary.warnings += len(result.warnings)
    release = Release.objects.get(slug=CURRENT)
    users = _users()
    release.leads.add(users["release-lead"])
    keps = _keps(release, users)
    _requests(release, keps, users, summary)
    summary.releases = list(Release.objects.order_by("start_date").values_list("slug", flat=True))
    for state in ExceptionRequest.State.values:
        summary.states[state] = ExceptionRequest.objects.filter(release=release, state=state).count()
    return summary
