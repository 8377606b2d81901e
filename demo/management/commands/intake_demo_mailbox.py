"""``manage.py intake_demo_mailbox --dir DIR``: the ``make run`` demo of the intake.

Starts a local dovecot (Debian's dovecot-imapd) on 127.0.0.1 with one mailbox, puts one
exception request in it over IMAP (for a KEP of the demo and a freeze whose request
window is open now), and prints the ``INTAKE_IMAP_*`` settings for the worker and beat,
which then file it within a poll. ``--stop`` stops that dovecot. Without dovecot it says
so in one line and prints nothing to source.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from pathlib import Path
from urllib.parse import quote

from django.core.management.base import BaseCommand, CommandError

from demo.dovecot import Dovecot, dovecot_available
from exceptions.models import ExceptionRequest
from exceptions.services import request_window_closes
from releasecal import tz
from releasecal.models import Enhancement, Milestone
from releasecal.selectors import release_list_active

DEMO_BODY = """Hello release team,

I would like to request an exception for the following enhancement.

* Enhancement name: {title}
* Enhancement status (alpha/beta/stable): beta
* SIG: {sig}
* k/enhancements repo issue #: https://github.com/kubernetes/enhancements/issues/{number}
* PR #'s: https://github.com/kubernetes/kubernetes/pull/130000
* Additional time needed (in days): 2
* Reason this enhancement is critical for this milestone: the last PR has lgtm and waits for approval.
* Risks from adding code late: (to k8s stability, testing, etc.) Low; behind a feature gate.
* Risks from cutting enhancement: (partial implementation, critical customer usecase, etc.) A release of delay.

Thanks!

--
You received this message because you are subscribed to the Google Groups "kubernetes-sig-release" group.
To unsubscribe from this group and stop receiving emails from it, send an email to
kubernetes-sig-release+unsubscribe@googlegroups.com.
To view this discussion visit https://groups.google.com/d/msgid/kubernetes-sig-release/{msgid}.
"""


def demo_request() -> tuple[Milestone, Enhancement] | None:
    """A freeze of an active release whose request window is open now, and a KEP with no
    live request for it."""
    now = tz.utc_now()
    freezes = Milestone.objects.filter(
        release__in=release_list_active(), kind__allows_exceptions=True, cancelled=False
    ).select_related("release", "kind")
    for milestone in sorted(freezes, key=lambda m: m.deadline):
        if not (milestone.deadline - dt.timedelta(days=30) <= now <= request_window_closes(milestone)):
            continue
        taken = ExceptionRequest.objects.filter(milestone=milestone, state__in=ExceptionRequest.ACTIVE_STATES)
        kep = (
            Enhancement.objects.filter(tracking__release=milestone.release)
            .exclude(pk__in=taken.values("enhancement"))
            .exclude(owning_sig="")
            .order_by("number")
            .first()
        )
        if kep is not None:
            return milestone, kep
    return None


class Command(BaseCommand):
    help = "Start a local dovecot with one exception request in it (the make run demo); --stop stops it."

    def add_arguments(self, parser):
        parser.add_argument(
            "--dir",
            required=True,
            help="Where dovecot keeps its config, mail and pid: a directory other users can reach (under /tmp), "
            "since dovecot's processes run as another user.",
        )
        parser.add_argument("--stop", action="store_true", help="Stop the demo's dovecot.")

    def handle(self, *args, **options):
        base = Path(options["dir"]).resolve()
        if options["stop"]:
            self._stop(base)
            return
        if not dovecot_available():
            self.stderr.write(
                "dovecot is not installed, so no mail arrives by itself; see README "
                "('Try the intake mailbox') to try it."
            )
            return
        self._stop(base)
        server = Dovecot(base)
        try:
            server.start(own_session=False)  # in make run's process group: a signal to it stops dovecot
        except (OSError, RuntimeError) as exc:
            raise CommandError(f"dovecot did not start: {exc}") from None
        user, password = server.new_user()
        found = demo_request()
        if found is None:
            self.stderr.write("No active release has a freeze with an open request window: no demo mail sent.")
        else:
            milestone, kep = found
            msg = EmailMessage()
            msg["From"] = "'Demo Contributor' via kubernetes-sig-release <kubernetes-sig-release@googlegroups.com>"
            msg["X-Original-Sender"] = "demo.contributor@example.com"
            msg["To"] = "kubernetes-sig-release@googlegroups.com"
            msg["Subject"] = f"Exception Request for KEP-{kep.number} ({milestone.kind_name})"
            msg["Date"] = format_datetime(tz.utc_now())
            msg["Message-ID"] = make_msgid(domain="releasecal.demo")
            msgid = quote(msg["Message-ID"].strip("<>"), safe="")
            msg.set_content(DEMO_BODY.format(title=kep.title, sig=kep.owning_sig, number=kep.number, msgid=msgid))
            server.append(user, password, msg.as_bytes())
            self.stderr.write(
                f"Demo mailbox on 127.0.0.1:{server.port} holds a request for KEP-{kep.number} "
                f"({milestone.title}, {milestone.release.slug}); beat files it within a poll."
            )
        for name, value in (
            ("INTAKE_IMAP_HOST", server.host),
            ("INTAKE_IMAP_PORT", server.port),
            ("INTAKE_IMAP_USER", user),
            ("INTAKE_IMAP_PASSWORD", password),
            ("INTAKE_IMAP_TLS", "none"),
            ("INTAKE_IMAP_POLL_SECONDS", 10),
            ("INTAKE_IMAP_ENTERED_BY", "release-lead"),
        ):
            self.stdout.write(f"{name}={value}")

    def _stop(self, base: Path) -> None:
        pid_file = base / "run" / "master.pid"
        if not pid_file.exists():
            return
        try:
            pid = int(pid_file.read_text().split()[0])
            os.kill(pid, signal.SIGTERM)
        except (ValueError, IndexError, ProcessLookupError, PermissionError):
            pass
        pid_file.unlink(missing_ok=True)
