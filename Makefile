# Two commands do all the set-up: `make run` and `make test`.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
export DJANGO_SETTINGS_MODULE ?= config.settings.base

.PHONY: run test lint install migrate demo clean image-tools image-test

$(STAMP): requirements/base.txt requirements/test.txt requirements/constraints.txt
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "$(PYTHON) not found; set PYTHON=/path/to/python3.11"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -r requirements/test.txt -c requirements/constraints.txt
	touch $(STAMP)

install: $(STAMP)

migrate: install
	$(PY) manage.py migrate --noinput

demo: migrate
	$(PY) manage.py seed_demo
	$(PY) manage.py ensure_admin

# The embedded default: SQLite, console email, demo data, an admin login printed, on
# http://127.0.0.1:$(PORT) (`make run PORT=8001`). A Celery worker with its beat
# (reminders) runs beside the web server on the file-system broker under var/celery/
# (Redis when CELERY_BROKER_URL/REDIS_URL is set), started again if it exits. With
# Debian's dovecot installed, a local IMAP mailbox holding one exception request is
# started too (in a temporary directory under /tmp: dovecot's processes run as another
# user and must reach it) and the worker's beat polls it (docs/intake.md): the request
# appears in the admin within seconds. Without dovecot, README says how to try it.
# Ctrl-C, or a TERM to the process group, stops all of it in under 3 s (config/run.py).
PORT ?= 8000
run: export DEBUG ?= 1
run: demo
	$(PY) config/run.py --port $(PORT)

# ical.js (the parser inside Thunderbird) reads our feeds in the tests; pinned in package-lock.json.
node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

# The whole suite. Uses PostgreSQL when DATABASE_URL is set, SQLite otherwise.
# tests/deploy/ render deploy/kubernetes/ with `kubectl kustomize` (kubectl with kustomize v5):
# without kubectl they skip locally and fail under CI=true.
CHROMIUM ?= /usr/bin/chromium
DOVECOT ?= /usr/sbin/dovecot
LIBICAL ?= /usr/share/doc/gir1.2-ical-3.0
# pytest-xdist: TEST_WORKERS processes, each with its own test database (test_<name>_gw0),
# cache key prefix and Celery queue (tests/settings.py). --dist load hands each worker
# tests in collection order, so pytest-django's order holds in each (transactional tests,
# which flush the migrations' rows, after the others); --dist loadfile breaks it.
# --maxschedchunk 20 caps each hand-out: without it a worker took up to ~260 tests at
# once near the end (the e2e and make run tests among them) while the other sat idle.
# TEST_WORKERS=0 runs the suite in this one process (docs/testing.md).
TEST_WORKERS ?= 2
test: install node_modules/.installed $(CHROMIUM) $(DOVECOT) $(LIBICAL)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) manage.py makemigrations --check --dry-run
	DJANGO_SETTINGS_MODULE=tests.settings $(PY) -m pytest -n $(TEST_WORKERS) --dist load --maxschedchunk 20

# Headless Chromium for the browser tests of the pages (Debian's package; never
# `playwright install`). Without it the browser tests skip locally and fail in CI.
$(CHROMIUM):
	command -v apt-get >/dev/null 2>&1 && (apt-get update && apt-get install -y chromium) \
		|| { echo "Chromium missing: install Debian's chromium package"; test "$$CI" != true; }

# libical validates every feed (tests/feeds/test_ical_span.py, through the system
# python3 and GObject introspection: libical is not on PyPI). Debian's gir1.2-ical-3.0
# and python3-gi; without them that test skips locally and fails in CI.
$(LIBICAL):
	command -v apt-get >/dev/null 2>&1 && (apt-get update && apt-get install -y -o DPkg::Lock::Timeout=300 gir1.2-ical-3.0 python3-gi) \
		|| { echo "libical missing: install Debian's gir1.2-ical-3.0 and python3-gi packages"; test "$$CI" != true; }

# A real IMAP server for the intake mailbox tests (tests/intake/): Debian's dovecot-imapd.
# The tests start their own server in a temporary directory on a free port and never use
# the package's system service. Without it the tests skip locally and fail in CI.
$(DOVECOT):
	command -v apt-get >/dev/null 2>&1 && (apt-get update && apt-get install -y -o DPkg::Lock::Timeout=300 dovecot-imapd) \
		|| { echo "dovecot missing: install Debian's dovecot-imapd package"; test "$$CI" != true; }

# The production image, built with Debian's buildah (no Docker, no registry: the base is a
# Debian bookworm made by debootstrap, cached per machine) and run: migrate, gunicorn,
# worker and beat inside it (tests/config/test_image.py; `make test` leaves it out). Needs root.
# Without buildah/debootstrap (and no apt to install them) it skips; under CI=true it fails.
image-tools:
	@command -v buildah >/dev/null 2>&1 && command -v debootstrap >/dev/null 2>&1 \
		|| { command -v apt-get >/dev/null 2>&1 && apt-get update && apt-get install -y -o DPkg::Lock::Timeout=300 buildah debootstrap; } \
		|| { echo "buildah/debootstrap missing and not installable (apt-get install -y buildah debootstrap, as root): the image test skips"; test "$$CI" != true; }

image-test: install image-tools
	$(PY) -m pytest -m image tests/config/test_image.py

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

clean:
	rm -rf $(VENV) var staticfiles node_modules
