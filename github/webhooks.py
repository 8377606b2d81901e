"""``POST /github/webhook``: GitHub's deliveries of the board's events.

Verified first: ``X-Hub-Signature-256`` is ``sha256=`` and the HMAC-SHA256 of the body
with ``GITHUB_WEBHOOK_SECRET``, compared in constant time. Anything unverifiable (no
secret configured, no signature, a malformed or wrong one) is one 401 with one text, the
reason only logged; a body over ``MAX_BODY_BYTES`` is a 413; never a 500.

Then, of a verified delivery: ``ping`` is answered; a ``projects_v2_item`` edit or
creation of an item linked to a request queues a pull of that item alone
(``github.board_item_pull``: one small GraphQL request, deduplicated per item, so a
burst of events for one item is one or two reads); any other ``projects_v2_item``
(deleted, archived, restored, converted, an item no request is linked to, a board
whose project is not known yet) and ``issues`` (labeled, unlabeled, milestoned,
demilestoned, closed) queue a pull of the whole board (``github.board_pull``: the
reconcile, deduplicated per board). ``reordered`` changes nothing releasecal reads, and
any other event or action is 202, ignored and logged. A verified body that is not a
JSON object is a 400. Extra keys are accepted, as GitHub adds them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re

from celery import current_app
from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from github.models import Board, BoardItem

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 1024 * 1024  # GitHub caps a payload at 25 MB; the board's events are a few KB
UNVERIFIED = "The GitHub webhook signature could not be verified."
ISSUE_ACTIONS = ("labeled", "unlabeled", "milestoned", "demilestoned", "closed")
PULL_TASK = "github.board_pull"
ITEM_PULL_TASK = "github.board_item_pull"
ITEM_ACTIONS = ("edited", "created")  # what one item's read answers (when it is linked)
IGNORED_ITEM_ACTIONS = ("reordered",)  # an item's position: nothing releasecal reads
PULL_DEDUPE_SECONDS = 120  # a pull queued and not yet started covers every event meanwhile
_SIGNATURE = re.compile(r"\Asha256=[0-9a-f]{64}\Z")


class Unverified(Exception):
    pass


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def verify(*, secret: str, body: bytes, header: str | None) -> None:
    """Return quietly when GitHub signed ``body`` with ``secret``; raise :class:`Unverified`."""
    if not secret:
        raise Unverified("GITHUB_WEBHOOK_SECRET is not set")
    if not header:
        raise Unverified("no X-Hub-Signature-256 header (a hook without a secret?)")
    if not _SIGNATURE.match(header):
        raise Unverified("a malformed X-Hub-Signature-256")
    if not hmac.compare_digest(signature(secret, body).encode("ascii"), header.encode("ascii")):
        raise Unverified("the signature does not match (another secret, or a changed body)")


def _text(message: str, status: int) -> HttpResponse:
    return HttpResponse(message + "\n", status=status, content_type="text/plain; charset=utf-8")


def pull_key(board_id: int) -> str:
    return f"github:board-pull:{board_id}"


def board_pull_enqueue(board_id: int) -> bool:
    """Queue a pull of the board unless one is queued and not started; True when queued."""
    try:
        if not cache.add(pull_key(board_id), "1", timeout=PULL_DEDUPE_SECONDS):
            return False
    except Exception:  # the cache is down: queue it anyway (a pull twice is harmless)
        log.warning("github webhook: no dedupe (cache down) for board %s", board_id, exc_info=True)
    try:
        current_app.tasks[PULL_TASK].delay(board_id)
    except Exception:  # the broker is down: beat's reconcile reads the board anyway
        log.warning("github webhook: could not queue a pull of board %s", board_id, exc_info=True)
        pull_started(board_id)
        return False
    return True


def pull_started(board_id: int) -> None:
    """Forget the dedupe mark: an event from now on queues the next pull."""
    try:
        cache.delete(pull_key(board_id))
    except Exception:  # the cache is down: the mark expires by itself
        log.warning("github board pull: could not clear the dedupe mark of board %s", board_id, exc_info=True)


def item_pull_key(board_id: int, item_id: str) -> str:
    return f"github:item-pull:{board_id}:{item_id}"


def _board_pull_queued(board_id: int) -> bool:
    try:
        return cache.get(pull_key(board_id)) is not None
    except Exception:  # the cache is down: say no (a pull twice is harmless)
        log.warning("github webhook: could not read the dedupe mark of board %s", board_id, exc_info=True)
        return False


def item_pull_enqueue(board_id: int, item_id: str) -> bool:
    """Queue a pull of one item unless one of it, or of its whole board, is queued and
    not started; True when queued."""
    if _board_pull_queued(board_id):
        return False  # the board's pull reads the item too, after this event
    key = item_pull_key(board_id, item_id)
    try:
        if not cache.add(key, "1", timeout=PULL_DEDUPE_SECONDS):
            return False
    except Exception:  # the cache is down: queue it anyway
        log.warning("github webhook: no dedupe (cache down) for item %s of board %s", item_id, board_id, exc_info=True)
    try:
        current_app.tasks[ITEM_PULL_TASK].delay(board_id, item_id)
    except Exception:  # the broker is down: beat's reconcile reads the board anyway
        log.warning("github webhook: could not queue a pull of item %s of board %s", item_id, board_id, exc_info=True)
        item_pull_started(board_id, item_id)
        return False
    return True


def item_pull_started(board_id: int, item_id: str) -> None:
    """Forget the item's dedupe mark: an event from now on queues the next pull."""
    try:
        cache.delete(item_pull_key(board_id, item_id))
    except Exception:  # the cache is down: the mark expires by itself
        log.warning("github item pull: could not clear the dedupe mark of %s", item_id, exc_info=True)


def _pull(board: Board, event: str, action: str, payload: dict) -> bool:
    """Queue what answers the event for one board: its item's pull, or the board's."""
    if event == "projects_v2_item" and action in ITEM_ACTIONS and board.project_node_id:
        node = payload["projects_v2_item"].get("node_id")
        if isinstance(node, str) and node and BoardItem.objects.filter(board=board, item_id=node[:100]).exists():
            return item_pull_enqueue(board.pk, node[:100])
    return board_pull_enqueue(board.pk)


def _live_boards():
    return Board.objects.exclude(mode=Board.Mode.OFF).exclude(release__status="released")


def _boards_for(event: str, payload: dict) -> tuple[list[Board], str]:
    """The boards the event is about, and how to say it in the log."""
    if event == "projects_v2_item":
        item = payload.get("projects_v2_item")
        project = item.get("project_node_id") if isinstance(item, dict) else None
        if not isinstance(project, str) or not project:
            return [], "a projects_v2_item event without a project_node_id"
        boards = list(_live_boards().filter(project_node_id=project))
        if not boards:  # a board never read does not know its node id yet: read those
            boards = list(_live_boards().filter(project_node_id=""))
        node = item.get("node_id")
        return boards, f"item {node} of project {project}"
    repository = payload.get("repository")
    issue = payload.get("issue")
    name = repository.get("full_name") if isinstance(repository, dict) else None
    number = issue.get("number") if isinstance(issue, dict) else None
    if not isinstance(name, str) or "/" not in name or not isinstance(number, int):
        return [], "an issues event without its repository and issue number"
    owner = name.split("/", 1)[0]
    return list(_live_boards().filter(owner__iexact=owner)), f"issue {name}#{number}"


@csrf_exempt
@require_POST
def webhook(request: HttpRequest) -> HttpResponse:
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > MAX_BODY_BYTES:
        return _text(f"The request body is over {MAX_BODY_BYTES} bytes.", 413)
    try:
        body = request.body
    except RequestDataTooBig:
        return _text(f"The request body is over {MAX_BODY_BYTES} bytes.", 413)
    if len(body) > MAX_BODY_BYTES:
        return _text(f"The request body is over {MAX_BODY_BYTES} bytes.", 413)
    delivery = request.headers.get("X-GitHub-Delivery", "")[:64]
    try:
        verify(secret=settings.GITHUB_WEBHOOK_SECRET, body=body, header=request.headers.get("X-Hub-Signature-256"))
    except Unverified as exc:
        log.warning("Refused a GitHub webhook (delivery %r): %s", delivery, exc)
        return _text(UNVERIFIED, 401)
    event = request.headers.get("X-GitHub-Event", "")
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):
        return _text("The request body is not JSON.", 400)
    if not isinstance(payload, dict):
        return _text("The request body is not a JSON object.", 400)
    if not event:
        return _text("The request has no X-GitHub-Event header.", 400)
    action = payload.get("action") if isinstance(payload.get("action"), str) else ""
    if event == "ping":
        return _text("pong", 200)
    if event == "projects_v2_item" and action in IGNORED_ITEM_ACTIONS:
        log.info("Ignored a GitHub webhook: %s.%s (delivery %r)", event, action, delivery)
        return _text(f"Ignored: releasecal does not act on {event}.{action}.", 202)
    if not (event == "projects_v2_item" or (event == "issues" and action in ISSUE_ACTIONS)):
        log.info("Ignored a GitHub webhook: %s.%s (delivery %r)", event[:64], action[:64], delivery)
        return _text(f"Ignored: releasecal does not act on {event[:64]}{'.' + action[:64] if action else ''}.", 202)
    boards, what = _boards_for(event, payload)
    if not boards:
        log.info("Ignored a GitHub webhook %s.%s: %s is on no board releasecal reads", event, action, what)
        return _text(f"Ignored: {what} is on no board releasecal reads.", 202)
    queued = [board for board in boards if _pull(board, event, action, payload)]
    log.info("GitHub webhook %s.%s (delivery %r): %s; pull queued for %s", event, action, delivery, what, queued)
    return _text(f"Accepted: the board{'s' if len(boards) > 1 else ''} will be read.", 202)
