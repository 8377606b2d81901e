"""The bench's baselines, without the ledger: a task that does nothing (the broker's own
cost per task) and a task that makes the same HTTP post a reminder makes (the Slack
client's webhook post of a rendered reminder). Bench workers load them with
``celery worker --include bench.noop``."""

from celery import shared_task


@shared_task(name="bench.noop", ignore_result=True)
def noop_task(n: int = 0) -> int:
    return n


@shared_task(name="bench.post", ignore_result=True)
def post_task(url: str, payload: dict) -> None:
    from slack_integration.client import post_webhook

    post_webhook(url, payload, wait_on_rate_limit=False)
