"""The production image, built and run as an operator would on a first deploy.

docker/buildah-build.sh --debian-base builds docker/Dockerfile with Debian's buildah (no
Docker engine, no container registry: the base is a Debian bookworm made by debootstrap,
cached per machine). Then, inside the image, as the image's own user, with
``buildah run --isolation chroot --network host``:

- compose's ``migrate`` command against a new, empty PostgreSQL database (dropped after);
- compose's ``web`` command (gunicorn): /healthz, a page, a feed, a static file by its
  hashed name, the API schema; the image's HEALTHCHECK command passes; SIGTERM stops it
  gracefully;
- compose's ``worker`` and ``beat`` commands: a reminder falls due and reaches the fake
  Slack (tests.support.fake_slack, on the host, on a port of its own) once; compose's
  health checks of both pass inside their containers;
- the application user cannot write the code, the virtualenv or the static files;
- no secret handed to the build (pip's index settings, given as a build secret with a
  canary line in it) is in any layer or in the history, and no build argument either.

Needs root, buildah and debootstrap (``make image-test`` installs them with apt), and
DATABASE_URL=postgres://... and REDIS_URL=redis://...; skips locally without them, fails
under CI=true. Marked ``image``: plain ``pytest`` and ``make test`` deselect it; run it
with ``make image-test``. 3 to 4 minutes with the cached base; 6 to 10 with no cache
(measured on an idle and on a loaded 2-CPU machine).
Figures (image size, build time, gunicorn's start to its first 200) are printed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_slack import FakeSlack
from tests.support.processes import (
    ROOT,
    Process,
    Processes,
    compose_command,
    forget_queue,
    fresh_database,
    gunicorn_port,
    http_status,
    load_compose,
    unavailable,
    wait_for,
)

# A cold build (debootstrap, then pip) takes minutes on a loaded machine: the build gets
# 25, each test (the first one includes the build) 30.
BUILD_TIMEOUT = 1500
pytestmark = [pytest.mark.image, pytest.mark.slow, pytest.mark.timeout(1800)]

TAG = os.environ.get("RELEASECAL_TEST_IMAGE", "localhost/releasecal:image-test")
BUILD_SCRIPT = ROOT / "docker" / "buildah-build.sh"
ARTIFACTS = ROOT / "test-artifacts"
# Written into the pip.conf build secret; must appear in no layer and no history entry.
# Derived here so that the string itself is in no file the image copies.
CANARY = "canary-" + hashlib.sha256(b"releasecal build secret").hexdigest()[:32]
APP_UID = 10001
MAX_IMAGE_MB = 400
REMINDER_CHANNEL = "C0IMAGEREMIND"
RUN = ["buildah", "run", "--isolation", "chroot", "--network", "host"]
FIGURES: dict[str, str] = {}


def _report(capsys, name: str, value: str) -> None:
    FIGURES[name] = value
    with capsys.disabled():
        print(f"\nimage figure: {name}: {value}")


# --------------------------------------------------------------------------- the build


@pytest.fixture(scope="module")
def image() -> str:
    if os.geteuid() != 0:
        unavailable("buildah's chroot isolation needs root here")
    for tool in ("buildah", "debootstrap"):
        if not shutil.which(tool):
            unavailable(f"{tool} is missing (make image-test installs it: apt-get install -y buildah debootstrap)")
    ARTIFACTS.mkdir(exist_ok=True)
    log = ARTIFACTS / "image-build.log"
    started = time.monotonic()
    with log.open("w") as out:
        # Its own session: a timeout or an interruption stops buildah too, not only the script.
        build = subprocess.Popen(
            [str(BUILD_SCRIPT), "--debian-base", "-t", TAG],
            cwd=ROOT,
            env={**os.environ, "RELEASECAL_PIP_CONF_EXTRA": f"# {CANARY}"},
            stdout=subprocess.PIPE,
            stderr=out,
            text=True,
            start_new_session=True,
        )
        try:
            stdout, _ = build.communicate(timeout=BUILD_TIMEOUT)
        finally:
            _stop_group(build)
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
    assert build.returncode == 0, f"the image build failed (whole log: {log}):\n{tail}"
    FIGURES["base"] = re.search(r"^base: (\S+)$", stdout, re.M).group(1)
    base_log = log.read_text(errors="replace")
    FIGURES["build"] = (
        f"{time.monotonic() - started:.0f}s in all "
        f"({'base from debootstrap' if 'Debian base: built' in base_log else 'base cached'}); "
        + stdout.strip().replace("\n", "; ")
    )
    return TAG


def _stop_group(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _inspect(tag: str) -> dict:
    out = subprocess.run(["buildah", "inspect", "--type", "image", tag], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@contextlib.contextmanager
def container(tag: str, role: str) -> Iterator[str]:
    """A working container of the image (one per compose service, as on a real host)."""
    name = f"releasecal-test-{role}-{uuid.uuid4().hex[:8]}"
    subprocess.run(["buildah", "from", "--name", name, tag], capture_output=True, text=True, check=True)
    try:
        yield name
    finally:
        subprocess.run(["buildah", "rm", name], capture_output=True, check=False)


def inside(ctr: str, cmd: list[str], env: dict[str, str] | None = None) -> list[str]:
    """``cmd`` run in the container as the image's user (no --user: the image's USER).
    The container gets the image's environment and ``env``, nothing of the host's."""
    flags = [f"--env={key}={value}" for key, value in (env or {}).items()]
    return [*RUN, *flags, ctr, "--", *cmd]


def run_inside(ctr: str, cmd: list[str], env: dict[str, str] | None = None, timeout: int = 300):
    return subprocess.run(inside(ctr, cmd, env), capture_output=True, text=True, timeout=timeout)


# ------------------------------------------------------------- what the image holds


def test_image_keeps_its_healthcheck_and_user_and_no_build_input_in_history(image, capsys):
    info = _inspect(image)
    config = info["Docker"]["config"]
    assert config["User"] == "app"
    assert config["Healthcheck"]["Test"] == ["CMD", "python", "docker/healthcheck.py"], "built --format docker"
    assert config["Cmd"][:1] == ["gunicorn"]
    entries = [*info["Docker"]["history"], *info["OCIv1"]["history"]]
    history = json.dumps(entries)
    for needle in (CANARY, "pip-conf", "pip-cert", "PIP_CONFIG_FILE=/run", *_pip_indexes()):
        assert needle not in history, f"{needle!r} is in the image history"
    # No build argument: no "|1 PYTHON_IMAGE=..." prefix on a step, no value in a step.
    # (The base's name, or the previous step's id, is in the "FROM ..." comment buildah
    # records on a step: a public name, not a build argument's use.)
    base = FIGURES["base"]
    for entry in entries:
        step = entry.get("created_by", "")
        assert "PYTHON_IMAGE" not in step, step
        assert base not in step, step
        assert not re.match(r"\|\d+ ", step.removeprefix("/bin/sh -c ")), step
        assert re.fullmatch(r"(FROM \S+)?", entry.get("comment", "")), entry
    _report(capsys, "build", FIGURES["build"])


def _pip_indexes() -> list[str]:
    """The remote package indexes pip is configured with here (handed to the build as a secret)."""
    out = subprocess.run(["python3", "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    urls = re.findall(r"https?://[^\s'\"]+", out)
    urls += re.findall(
        r"https?://\S+", os.environ.get("PIP_INDEX_URL", "") + " " + os.environ.get("PIP_EXTRA_INDEX_URL", "")
    )
    return sorted(set(urls))


@pytest.fixture(scope="module")
def layers(image, tmp_path_factory) -> list[Path]:
    """The image's layers, as uncompressed tar files."""
    exported = tmp_path_factory.mktemp("layers") / "image"
    subprocess.run(
        ["buildah", "push", "--quiet", "--disable-compression", image, f"dir:{exported}"],
        capture_output=True,
        text=True,
        check=True,
    )
    manifest = json.loads((exported / "manifest.json").read_text())
    return [exported / layer["digest"].split(":", 1)[1] for layer in manifest["layers"]]


def test_the_image_is_small(layers, capsys):
    size = sum(layer.stat().st_size for layer in layers)
    _report(capsys, "image size", f"{size / 1e6:.0f} MB uncompressed in {len(layers)} layers")
    assert size < MAX_IMAGE_MB * 1e6, f"the image grew to {size / 1e6:.0f} MB"


def test_no_layer_holds_the_build_secret_or_local_files(image, layers):
    needles = [CANARY.encode(), *(url.encode() for url in _pip_indexes())]
    assert layers
    for blob in layers:
        data = blob.read_bytes()
        for needle in needles:
            assert needle not in data, f"{needle!r} is in layer {blob.name}"
    # The files a build must not copy (.dockerignore), looked for in the image itself.
    with container(image, "files") as ctr:
        found = run_inside(ctr, ["sh", "-c", "ls -a /app; ls /run/secrets 2>/dev/null; find / -xdev -name .env"])
    names = set(found.stdout.split())
    assert "manage.py" in names, found.stdout + found.stderr
    assert not names & {".git", ".env", ".venv", "node_modules", "var", "pip-conf", "pip-cert"}, names
    assert not [name for name in names if name.endswith("/.env")], names


def test_pip_in_the_build_reads_the_index_secret(image, tmp_path):
    """The checks above would pass vacuously if the secret never reached pip: a secret
    naming an index where nothing listens must make the Dockerfile's pip step fail."""
    # A port held bound but not listening for the whole build: connections to it are
    # refused, and no other process can take it meanwhile.
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    index = f"http://127.0.0.1:{closed.getsockname()[1]}/simple"
    dead = tmp_path / "pip.conf"
    dead.write_text(f"[global]\nindex-url = {index}\nretries = 0\n")
    empty = tmp_path / "cert.pem"
    empty.write_text("")
    build = ["buildah", "build", "--isolation", "chroot", "--format", "docker", "--no-cache", "--target", "build"]
    secrets_ = ["--secret", f"id=pip-conf,src={dead}", "--secret", f"id=pip-cert,src={empty}"]
    with closed:
        result = subprocess.run(
            [*build, "--build-arg", f"PYTHON_IMAGE={FIGURES['base']}", *secrets_, "-f", "docker/Dockerfile", "."],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert result.returncode != 0, "pip installed without the index the secret names"
    output = result.stdout + result.stderr
    assert f"Looking in indexes: {index}" in output, output[-3000:]


def test_the_app_user_cannot_write_the_code(image):
    probe = r"""
import json, os, pathlib, sys, django
targets = ["/app/manage.py", "/app/releasecal/__init__.py", "/app/new-file", "/app/staticfiles/new-file",
           "/app/docker/gunicorn.conf.py", os.path.join(os.path.dirname(django.__file__), "__init__.py"),
           "/opt/venv/bin/new-file"]
result = {"user": os.getuid()}
for target in targets:
    try:
        with open(target, "a"):
            pass
        result[target] = "written"
    except PermissionError:
        result[target] = "refused"
var = pathlib.Path(os.environ["RELEASECAL_VAR_DIR"])
var.mkdir(parents=True, exist_ok=True)
(var / "probe").write_text("ok")
result["var"] = "written"
print(json.dumps(result))
"""
    with container(image, "perms") as ctr:
        result = run_inside(ctr, ["python", "-c", probe])
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)
    assert outcome.pop("user") == APP_UID
    assert outcome.pop("var") == "written", "the app's own scratch directory must stay writable"
    assert set(outcome.values()) == {"refused"}, outcome


# --------------------------------------------------------------- a first deployment

SETUP_SCRIPT = """
import datetime as dt, json, os
from releasecal import tz
from releasecal.models import MilestoneKind, Release
from releasecal.services import milestone_create
from reminders.models import Channel, Delivery, ReminderRule

channel = Channel.objects.create(name="image test", kind="slack_bot", config={"channel": os.environ["T_CHANNEL"]})
kind = MilestoneKind.objects.create(slug="image-checkpoint", name="Image checkpoint")
rule = ReminderRule.objects.create(name="image: in a minute", applies_to="milestones", offsets="1m", channel=channel)
rule.kinds.set([kind])
due = dt.datetime.fromisoformat(os.environ["T_DUE_AT"]).replace(microsecond=0)
release = Release.objects.order_by("-slug").first()
milestone = milestone_create(release=release, kind=kind, title="Image checkpoint", at=due + dt.timedelta(minutes=1))
delivery = Delivery.objects.get(milestone=milestone, offset="1m")
print(json.dumps({"delivery": delivery.pk, "release": release.slug, "state": delivery.state}))
"""

DELIVERY_SCRIPT = """
import json, os
from reminders.models import Delivery
d = Delivery.objects.get(pk=int(os.environ["T_DELIVERY"]))
print(json.dumps({"state": d.state, "attempts": d.attempts}))
"""


def _database_and_redis() -> str:
    database = os.environ.get("DATABASE_URL", "")
    redis_url = os.environ.get("REDIS_URL", "")
    if not database.startswith("postgres"):
        unavailable("needs PostgreSQL: set DATABASE_URL=postgres://postgres@127.0.0.1:5432/<name>")
    if not redis_url.startswith("redis"):
        unavailable("needs Redis: set REDIS_URL=redis://127.0.0.1:6379/<db>")
    return redis_url


def _json_line(result: subprocess.CompletedProcess) -> dict:
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def _get(url: str) -> tuple[int, dict, bytes]:
    # Through the proxy in front (TLS ends there): plain HTTP would be redirected.
    request = urllib.request.Request(url, headers={"X-Forwarded-Proto": "https"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, dict(response.headers), response.read()


def _container_main_pid(launcher: int) -> int | None:
    """The image's process that ``buildah run`` (pid ``launcher``) started: its first
    descendant running as the image's user. SIGTERM goes to it, as a container engine
    sends it to the container's first process (buildah run itself kills, not forwards)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    queue = [launcher]
    while queue:
        pid = queue.pop(0)
        with contextlib.suppress(OSError):
            proc = Path(f"/proc/{pid}")
            # buildah-chroot-exec (already the image's user) waits for the command.
            if proc.stat().st_uid == APP_UID and not (proc / "cmdline").read_bytes().startswith(b"buildah"):
                return pid
        queue.extend(sorted(children.get(pid, [])))
    return None


def _stop_gracefully(process: Process, timeout: float = 40) -> int:
    pid = wait_for(lambda: _container_main_pid(process.proc.pid), 10, f"{process.name}'s process in the container")
    os.kill(pid, 15)
    return process.proc.wait(timeout=timeout)


def test_migrate_web_worker_and_beat_run_inside_the_image(image, tmp_path, capsys):
    redis_url = _database_and_redis()
    queue = f"releasecal-image-{uuid.uuid4().hex[:12]}"
    slack = FakeSlack().start()
    procs = Processes(log_dir=tmp_path, extra_details=[slack.summary])
    try:
        with (
            fresh_database("releasecal_image", sqlite_path=tmp_path / "unused.sqlite3") as database,
            contextlib.ExitStack() as containers,
        ):
            env = {
                "SECRET_KEY": secrets.token_urlsafe(60),
                "ALLOWED_HOSTS": "127.0.0.1,localhost",
                "DATABASE_URL": database,
                "REDIS_URL": redis_url,
                "CELERY_BROKER_URL": redis_url,
                "CELERY_QUEUE": queue,
                "CACHE_KEY_PREFIX": queue,
                "GUNICORN_BIND": "127.0.0.1:0",  # gunicorn binds a free port; read back from its log
                "WEB_CONCURRENCY": "2",
                "SITE_URL": "https://releasecal.example.org",  # links in messages; nothing follows them
                "SLACK_API_URL": slack.api_url,
                "SLACK_BOT_TOKEN": "xoxb-image-test-not-a-real-token",
                "CONN_MAX_AGE": "0",
                # The test is the proxy in front (TLS ends there), on loopback: gunicorn
                # believes its X-Forwarded-Proto only because this says so (no proxy by default).
                "FORWARDED_ALLOW_IPS": "127.0.0.1",
            }
            ctr = {
                role: containers.enter_context(container(image, role)) for role in ("migrate", "web", "worker", "beat")
            }
            try:
                _first_deploy(image, env, ctr, procs, slack, capsys=capsys)
            finally:
                procs.stop_all()  # before the database is dropped
    finally:
        slack.stop()
        forget_queue(redis_url, queue)


def _first_deploy(image: str, env, ctr, procs: Processes, slack: FakeSlack, *, capsys) -> None:
    # ------------------------------------------------------------ migrate (a job)
    migrate = run_inside(ctr["migrate"], compose_command("migrate"), env)
    assert migrate.returncode == 0, migrate.stdout + migrate.stderr
    assert "Applying" in migrate.stdout, migrate.stdout

    # -------------------------- worker and beat (beat's first sweep is a minute away)
    worker = procs.start(
        "worker",
        inside(ctr["worker"], compose_command("worker", {"${WORKER_CONCURRENCY:-4}": "2"}), env),
        dict(os.environ),
    )
    beat = procs.start("beat", inside(ctr["beat"], compose_command("beat"), env), dict(os.environ))
    wait_for(lambda: "beat: Starting..." in beat.output(), 60, "Celery beat to start", procs.tails)

    # --------------------------------- data: the demo, and a reminder falling due soon
    seed = run_inside(ctr["migrate"], ["python", "manage.py", "seed_demo"], env)
    assert seed.returncode == 0, seed.stdout + seed.stderr
    due = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=10)
    setup = _json_line(
        run_inside(
            ctr["migrate"],
            ["python", "manage.py", "shell", "-c", SETUP_SCRIPT],
            {**env, "T_CHANNEL": REMINDER_CHANNEL, "T_DUE_AT": due.isoformat()},
        )
    )
    assert setup["state"] == "pending", setup

    # ---------------------------------------------------------------- web (gunicorn)
    started = time.monotonic()
    gunicorn = procs.start("gunicorn", inside(ctr["web"], compose_command("web"), env), dict(os.environ))
    port = None  # gunicorn's master logs the port it bound ("Listening at: ...")
    listening = None  # when it does (container started)
    while port is None or http_status(f"http://127.0.0.1:{port}/healthz") != 200:
        assert gunicorn.running, gunicorn.tail()
        assert time.monotonic() - started < 90, f"no 200 on /healthz after 90s\n{procs.tails()}"
        if port is None:
            port = gunicorn_port(gunicorn.log_path)
            listening = None if port is None else time.monotonic() - started
        time.sleep(0.05)
    answered = time.monotonic() - started
    web = f"http://127.0.0.1:{port}"
    _report(
        capsys,
        "gunicorn start to first /healthz 200",
        f"{answered:.2f}s from `buildah run` (master listening at {listening or answered:.2f}s)",
    )
    assert gunicorn.output().count("Booting worker with pid") == 2, gunicorn.tail()
    assert "[ERROR]" not in gunicorn.output(), gunicorn.tail()

    # The image's own HEALTHCHECK, exactly as the image records it, inside the web container.
    healthcheck = _inspect(image)["Docker"]["config"]["Healthcheck"]["Test"]
    assert healthcheck[0] == "CMD", healthcheck
    check = run_inside(ctr["web"], healthcheck[1:], {**env, "GUNICORN_BIND": f"127.0.0.1:{port}"})
    assert check.returncode == 0, check.stdout + check.stderr

    # A page, with its CSS by hashed name, and that file from WhiteNoise.
    status, _, body = _get(f"{web}/releases/{setup['release']}/")
    assert status == 200
    css = re.search(rb'/static/(releasecal\.[0-9a-f]{12}\.css)"', body)
    assert css, "the page links the hashed (manifest) name of releasecal.css"
    status, headers, body = _get(f"{web}/static/{css.group(1).decode()}")
    assert status == 200
    assert "immutable" in headers.get("Cache-Control", "") or "max-age=315360000" in headers.get("Cache-Control", "")
    sources = list(ROOT.glob("*/static/releasecal.css"))  # an app's static/ folder
    assert len(sources) == 1, sources
    assert body == sources[0].read_bytes()
    # A feed.
    status, headers, body = _get(f"{web}/calendar/{setup['release']}.ics")
    assert status == 200
    assert headers["Content-Type"].startswith("text/calendar")
    assert body.startswith(b"BEGIN:VCALENDAR")
    assert b"BEGIN:VEVENT" in body
    # The API schema.
    status, _, body = _get(f"{web}/api/schema/")
    assert status == 200
    assert b"openapi:" in body
    assert b"/api/v1/" in body

    # --------------------------------------- the reminder, sent by beat's sweep, once
    def reminders():
        return slack.matching(lambda call: call.data.get("channel") == REMINDER_CHANNEL)

    wait_for(reminders, 150, f"reminder delivery #{setup['delivery']} at the fake Slack", procs.tails)
    first = reminders()[0]
    assert f"releasecal delivery #{setup['delivery']}" in first.text
    assert "Image checkpoint in 1 minute" in first.text
    assert first.authorization == "Bearer xoxb-image-test-not-a-real-token"
    row = _json_line(
        run_inside(
            ctr["migrate"],
            ["python", "manage.py", "shell", "-c", DELIVERY_SCRIPT],
            {**env, "T_DELIVERY": str(setup["delivery"])},
        )
    )
    assert row == {"state": "sent", "attempts": 1}, row
    assert len(reminders()) == 1

    # Compose's health checks of the worker and beat, inside their own containers.
    for service in ("worker", "beat"):
        test = load_compose()["services"][service]["healthcheck"]["test"]
        command = ["sh", "-c", test[1].replace("$$", "$")] if test[0] == "CMD-SHELL" else test[1:]
        check = run_inside(ctr[service], command, env, timeout=60)
        assert check.returncode == 0, (service, command, check.stdout, check.stderr)

    # ------------------------------------------------- SIGTERM: graceful, exit code 0
    for process in (gunicorn, worker, beat):
        assert process.running, process.tail()
        assert "Traceback" not in process.output(), process.tail(60)
    assert _stop_gracefully(gunicorn) == 0, gunicorn.tail()
    assert "Shutting down: Master" in gunicorn.output()
    assert _stop_gracefully(worker, timeout=70) == 0, worker.tail()
    assert _stop_gracefully(beat) == 0, beat.tail()
