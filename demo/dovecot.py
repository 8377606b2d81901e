"""A local IMAP server for the intake tests and the ``make run`` demo: Debian's dovecot.

Never used in production (the mailbox there is the team's real one). ``make test``
installs ``dovecot-imapd`` with apt when it is missing (like Chromium). The
server runs in the foreground (``dovecot -F``) from a temporary directory with its own
config: loopback only, its own free port, plaintext login (no TLS, on 127.0.0.1 only),
users in a passwd-file (200 written at start; ``new_user`` hands one to each test, so
tests never share a mailbox), Maildir storage. Messages are put in with IMAP APPEND, as a mail server would.
"""

from __future__ import annotations

import imaplib
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import time
from pathlib import Path

DOVECOT = shutil.which("dovecot") or "/usr/sbin/dovecot"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def dovecot_available() -> bool:
    return Path(DOVECOT).exists()


class Dovecot:
    def __init__(self, base: Path):
        self.base = base
        self.port = free_port()
        self.host = "127.0.0.1"
        self.passwd = base / "passwd"
        self.mail = base / "mail"
        self.log = base / "dovecot.log"
        self.proc: subprocess.Popen | None = None
        self.password = secrets.token_urlsafe(12)  # one for every user of this local server
        self._users = [f"intake{n}" for n in range(200)]
        # Dovecot never runs mail processes as root; when we are root, mail belongs to nobody.
        if os.getuid() == 0:
            nobody = pwd.getpwnam("nobody")
            self.mail_uid, self.mail_gid = nobody.pw_uid, nobody.pw_gid
        else:
            self.mail_uid, self.mail_gid = os.getuid(), os.getgid()

    def _config(self) -> str:
        login_user = "nobody" if os.getuid() == 0 else pwd.getpwuid(os.getuid()).pw_name
        return f"""
protocols = imap
listen = 127.0.0.1
base_dir = {self.base}/run
state_dir = {self.base}/state
log_path = {self.log}
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
# No delay after a refused login (2 s by default), and no penalty (anvil's, 2 to 15 s
# more for each later login from the same IP): the tests refuse logins on purpose, and
# only loopback reaches this server.
auth_failure_delay = 0
default_internal_user = {login_user}
default_login_user = {login_user}
mail_location = maildir:{self.mail}/%u
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {self.passwd}
}}
userdb {{
  driver = static
  args = uid={self.mail_uid} gid={self.mail_gid} home={self.mail}/%u
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    address = 127.0.0.1
    port = {self.port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
service anvil {{
  chroot =
  unix_listener anvil-auth-penalty {{
    mode = 0
  }}
}}
"""

    def start(self, *, own_session: bool = True) -> Dovecot:
        """Start and wait until it answers. ``own_session``: out of the caller's process
        group (a test's server outlives a signal to the test's group); ``make run``'s demo
        mailbox stays in its group, so that a TERM or KILL to the group stops it too."""
        binary = DOVECOT
        for sub in ("run", "state", "mail"):
            (self.base / sub).mkdir(parents=True, exist_ok=True)
        # dovecot's auth and mail processes run as another user (nobody when we are root):
        # they must reach the passwd-file and the mail folders.
        os.chmod(self.base, 0o755)  # noqa: S103 - loopback test server, no secrets here
        os.chown(self.mail, self.mail_uid, self.mail_gid)
        # Every user up front: dovecot notices a changed passwd-file only by its stat, which
        # can miss two changes within a second, so users are handed out, never added later.
        self.passwd.write_text("".join(f"{name}:{{PLAIN}}{self.password}\n" for name in self._users))
        os.chmod(self.passwd, 0o644)
        conf = self.base / "dovecot.conf"
        conf.write_text(self._config())
        self.proc = subprocess.Popen(  # noqa: S603 - fixed argv: dovecot and our own config file
            [binary, "-F", "-c", str(conf)],
            stdout=(self.base / "stdout.log").open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=own_session,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"dovecot exited: {self.output()}")
            try:
                with socket.create_connection((self.host, self.port), timeout=0.5) as sock:
                    if sock.recv(64).startswith(b"* OK"):
                        return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"dovecot did not answer on port {self.port}: {self.output()}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)

    def output(self) -> str:
        text = ""
        for name in ("stdout.log", "dovecot.log"):
            path = self.base / name
            if path.exists():
                text += path.read_text(errors="replace")[-3000:]
        return text

    def new_user(self) -> tuple[str, str]:
        """A mailbox no other test has used: (user, password)."""
        return self._users.pop(0), self.password

    def client(self, user: str, password: str) -> imaplib.IMAP4:
        conn = imaplib.IMAP4(self.host, self.port, timeout=10)
        conn.login(user, password)
        return conn

    def append(self, user: str, password: str, raw: bytes, folder: str = "INBOX") -> int:
        """APPEND one message; returns its UID (dovecot answers APPENDUID)."""
        conn = self.client(user, password)
        try:
            if folder != "INBOX":
                conn.create(folder)
            typ, data = conn.append(folder, None, None, raw)
            assert typ == "OK", data
            return int(data[0].split(b"]")[0].split()[-1])
        finally:
            conn.logout()

    def flags(self, user: str, password: str, folder: str = "INBOX") -> dict[int, bytes]:
        conn = self.client(user, password)
        try:
            conn.select(folder, readonly=True)
            _typ, data = conn.uid("FETCH", "1:*", "(FLAGS)")
            out = {}
            for item in data or []:
                if isinstance(item, bytes) and b"UID" in item:
                    parts = item.split(b"UID ")[1].split(b" ", 1)
                    out[int(parts[0])] = parts[1]
            return out
        finally:
            conn.logout()
