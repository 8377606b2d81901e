"""The admin pages a release lead uses, with 2,000 requests over 20 releases.

    .venv/bin/python bench/admin_bench.py [--database-url postgres://postgres@127.0.0.1:5432/postgres]
                                          [--requests 2000] [--releases 20] [--rounds 7]
                                          [--only release/ delivery ...]

1. Creates a throwaway PostgreSQL database beside the one named (dropped afterwards),
   migrates it and fills it: 20 releases with their freezes, KEPs, 2,000 requests
   (pending, approved, rejected), sign-offs.
2. Logs a release-team member in (Django's test client, in process: no network) and
   times each page a release lead uses, median of --rounds after one warm-up, with its
   query count; then the same pages with a tenth of the requests, side by side, so the
   ratio shows whether a page grows with the data. Target: under 300 ms, and the same
   query count at both sizes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent


def _with_db(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--releases", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--only", nargs="*", default=[], help="measure only the pages whose URL contains one of these")
    args = parser.parse_args()

    import psycopg

    name = f"releasecal_admin_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(args.database_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        os.environ["DATABASE_URL"] = _with_db(args.database_url, name)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
        os.environ.setdefault("LOG_LEVEL", "WARNING")
        sys.path.insert(0, str(ROOT))
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", interactive=False, verbosity=0)
        run(args)
    finally:
        from django.db import connections

        connections.close_all()
        with psycopg.connect(args.database_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def fill(*, releases: int, requests: int, start: int = 0) -> None:
    from django.contrib.auth.models import User

    from exceptions.models import Decision, ExceptionRequest, SignOff
    from releasecal import tz
    from releasecal.models import Enhancement, Milestone, MilestoneKind, Release, Tracking
    from reminders.models import Channel, Delivery

    kinds = {k.slug: k for k in MilestoneKind.objects.all()}
    author = User.objects.get_or_create(username="bench-author")[0]
    now = tz.utc_now()
    freezes = []
    for n in range(start, start + releases):
        release = Release.objects.create(
            slug=f"9.{n}", name=f"Bench {n}", zone="America/Los_Angeles",
            start_date=(now - dt.timedelta(days=60)).date(), status=Release.Status.ACTIVE,
        )  # fmt: skip
        # A Kubernetes release has about 30 dated milestones: its change page shows them all.
        others = [("event", d) for d in range(-55, 40, 4)]
        for slug, days in (("enhancements-freeze", -30), ("code-freeze", -2), ("rc", 20), *others):
            freezes.append(
                Milestone.objects.create(
                    release=release, kind=kinds[slug], title=slug, at=now + dt.timedelta(days=days), zone=release.zone
                )
            )
    exceptional = [m for m in freezes if m.kind.allows_exceptions]
    keps = Enhancement.objects.bulk_create(
        Enhancement(number=100000 + start * 1000 + i, title=f"KEP {i}", owning_sig=f"sig{i % 12}")
        for i in range(requests)
    )
    states = [ExceptionRequest.State.PENDING, ExceptionRequest.State.APPROVED, ExceptionRequest.State.REJECTED]
    rows = ExceptionRequest.objects.bulk_create(
        ExceptionRequest(
            release=m.release,
            enhancement=kep,
            milestone=m,
            requester_name="Bench",
            days=2,
            submitted_at=m.at + dt.timedelta(hours=1),
            state=states[i % 3],
        )
        for i, (kep, m) in enumerate((kep, exceptional[i % len(exceptional)]) for i, kep in enumerate(keps))
    )
    Decision.objects.bulk_create(
        Decision(
            request=r,
            outcome=r.state,
            decided_at=r.submitted_at + dt.timedelta(hours=2),
            granted_until=(r.milestone.at + dt.timedelta(days=3)) if r.state == "approved" else None,
            granted_zone="America/Los_Angeles" if r.state == "approved" else "",
            freeze_at=r.milestone.at if r.state == "approved" else None,
        )
        for r in rows
        if r.state != ExceptionRequest.State.PENDING
    )
    SignOff.objects.bulk_create(
        SignOff(request=r, author=author, author_label="bench", role="SIG lead", at=r.submitted_at) for r in rows[::4]
    )
    Tracking.objects.bulk_create(Tracking(enhancement=r.enhancement, release=r.release, stage="beta") for r in rows)
    # The reminder ledger: a row per request and one per freeze, some failed or missed.
    channel = Channel.objects.get_or_create(name="bench", kind="email", defaults={"config": {"to": ["t@example.com"]}})[
        0
    ]
    delivery_states = [Delivery.State.SENT, Delivery.State.PENDING, Delivery.State.FAILED, Delivery.State.MISSED]
    Delivery.objects.bulk_create(
        Delivery(
            channel=channel,
            milestone=r.milestone,
            request=r if i % 2 else None,
            offset=f"{i}h",
            recipient=f"email:{i}@example.com",
            deadline_at=r.milestone.at,
            deadline_zone=r.milestone.zone,
            due_at=r.milestone.at - dt.timedelta(hours=i % 48),
            state=delivery_states[i % 4],
            last_error="bench" if i % 4 == 2 else "",
        )
        for i, r in enumerate(rows)
    )


def measure(client, urls: list[str], rounds: int) -> dict[str, tuple[float, int]]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    result = {}
    for url in urls:
        assert client.get(url).status_code == 200, url  # warm-up
        times, cpu = [], []
        for _ in range(rounds):
            with CaptureQueriesContext(connection) as queries:
                started, started_cpu = time.perf_counter(), time.process_time()
                response = client.get(url)
                times.append(time.perf_counter() - started)
                cpu.append(time.process_time() - started_cpu)
            assert response.status_code == 200, url
        result[url] = (statistics.median(times) * 1000, len(queries), statistics.median(cpu) * 1000)
    return result


def run(args) -> None:
    from django.contrib.auth.models import Group, User
    from django.test import Client

    from exceptions.models import ExceptionRequest
    from releasecal.models import Milestone, Release
    from releasecal.services import groups_ensure

    groups_ensure()
    lead = User.objects.create_user("bench-lead", "lead@example.com", "pw", is_staff=True)
    lead.groups.add(Group.objects.get(name="Release Team"))
    client = Client()
    client.force_login(lead)

    def urls() -> list[str]:
        some = ExceptionRequest.objects.order_by("pk").first()
        release = Release.objects.order_by("pk").first()
        milestone = Milestone.objects.filter(release=release, kind__allows_exceptions=True).order_by("pk").first()
        kep = some.enhancement
        requests = "/admin/exceptions/exceptionrequest/"
        return [
            "/admin/",
            requests,
            f"{requests}?state__exact=pending",
            f"{requests}?waiting=day",
            f"{requests}?waiting=closing",
            f"{requests}?release__id__exact={release.pk}",
            f"{requests}?milestone__id__exact={milestone.pk}",
            f"{requests}?sig=sig3",
            f"{requests}?q=KEP-{kep.number}",
            f"{requests}{some.pk}/change/",
            f"{requests}{some.pk}/approve/" if some.state == "pending" else "/admin/",
            f"{requests}add/",
            "/admin/releasecal/release/",
            f"/admin/releasecal/release/{release.pk}/change/",
            "/admin/releasecal/milestone/",
            f"/admin/releasecal/milestone/{milestone.pk}/change/",
            "/admin/releasecal/enhancement/",
            f"/admin/releasecal/enhancement/{kep.pk}/change/",
            "/admin/releasecal/tracking/",
            "/admin/reminders/delivery/",
            "/admin/reminders/delivery/?state__exact=failed",
        ]

    def urls_chosen() -> list[str]:
        return [url for url in urls() if not args.only or any(part in url for part in args.only)]

    small_requests, small_releases = max(1, args.requests // 10), max(1, args.releases // 10)
    fill(releases=small_releases, requests=small_requests)
    small = measure(client, urls_chosen(), args.rounds)
    fill(releases=args.releases - small_releases, requests=args.requests - small_requests, start=small_releases)
    large = measure(client, urls_chosen(), args.rounds)
    # Wall time is what a lead waits for; this process's CPU time (Python: ORM, forms,
    # templates) is steadier on a loaded machine, and is most of it.
    print(f"{'page':58} {small_requests:>6} req  {args.requests:>6} req   ratio  (cpu ms)     queries")
    worst = 0.0
    for url in large:
        (s_ms, s_q, s_cpu), (l_ms, l_q, l_cpu) = small[url], large[url]
        worst = max(worst, l_ms)
        flag = "" if s_q == l_q else "  <- grows"
        print(
            f"{url:58} {s_ms:8.1f} ms {l_ms:8.1f} ms {l_ms / s_ms:6.2f}x  ({s_cpu:5.0f} {l_cpu:5.0f})"
            f"  {s_q:>3} / {l_q:<3}{flag}"
        )
    print(f"slowest page with {args.requests} requests over {args.releases} releases: {worst:.1f} ms (target < 300 ms)")


if __name__ == "__main__":
    main()
