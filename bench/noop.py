"""A task that does nothing: the bench's baseline for the broker's own cost per task.
Bench workers load it with ``celery worker --include bench.noop``."""

from celery import shared_task


@shared_task(name="bench.noop", ignore_result=True)
def noop_task(n: int = 0) -> int:
    return n
