"""The web container's health check: GET /readyz from gunicorn on its own port.

Exit 0 on a 200 (the database answers, the migrations are applied, Redis answers), 1
otherwise. The port comes from GUNICORN_BIND (docker/gunicorn.conf.py
binds there, 0.0.0.0:8000 by default; read through config/env.py), so a changed bind
keeps the check right. Run by the image's HEALTHCHECK and by compose's web service:
python docker/healthcheck.py
"""

import sys
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout, for config.env

from config import env

bind = env.read("GUNICORN_BIND").split(",")[0].strip()
host, _, port = bind.rpartition(":")
host = host.strip("[]")
if host in ("", "0.0.0.0", "::"):  # noqa: S104 (bound everywhere: ask on loopback)
    host = "127.0.0.1"
elif ":" in host:
    host = f"[{host}]"
try:
    with urllib.request.urlopen(f"http://{host}:{port}/readyz", timeout=4) as response:
        sys.exit(0 if response.status == 200 else 1)
except OSError as exc:  # refused, timed out, or an HTTP error status (503 when a service is down)
    print(f"healthcheck: {exc}", file=sys.stderr)
    sys.exit(1)
