"""The ``make run`` demo of the intake (demo/: never used in production): a local dovecot
holding one exception request, which one poll of the mailbox files."""

from __future__ import annotations

import io
import shutil
import tempfile
from pathlib import Path

from django.core.management import call_command

from intake.conf import MailboxConfig
from intake.models import IntakeMessage, IntakeProblem
from intake.services import mailbox_poll
from tests.support.imap_server import dovecot_or_skip


def test_the_make_run_demo_mailbox_delivers_one_request(kinds, tmp_path):
    dovecot_or_skip()
    from demo.data import demo_seed

    demo_seed()
    out, err = io.StringIO(), io.StringIO()
    base = Path(tempfile.mkdtemp(prefix="releasecal-demo-dovecot-"))
    try:
        call_command("intake_demo_mailbox", "--dir", str(base), stdout=out, stderr=err)
        env = dict(line.split("=", 1) for line in out.getvalue().splitlines())
        assert "holds a request for KEP-" in err.getvalue()
        config = MailboxConfig(
            host=env["INTAKE_IMAP_HOST"], port=int(env["INTAKE_IMAP_PORT"]), user=env["INTAKE_IMAP_USER"],
            password=env["INTAKE_IMAP_PASSWORD"], tls=env["INTAKE_IMAP_TLS"],
        )  # fmt: skip
        result = mailbox_poll(config=config)
        assert result.outcomes == {"filed": 1}, (result, list(IntakeProblem.objects.values_list("reason", flat=True)))
        message = IntakeMessage.objects.get()
        assert message.request.requester_name == "Demo Contributor"
    finally:
        call_command("intake_demo_mailbox", "--stop", "--dir", str(base))
        shutil.rmtree(base, ignore_errors=True)
