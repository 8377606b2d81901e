#!/bin/sh
# supervise.sh COMMAND [ARGS...]: run COMMAND, and run it again a second after it exits,
# until this script gets TERM or INT (then COMMAND gets TERM and is waited for).
# `make run` starts its Celery worker through it: kombu's Redis transport can end the
# worker when the broker connection drops (issue 13 item 13), and compose's
# `restart: unless-stopped` only supervises the containers.
child=
stop() {
    if [ -n "$child" ]; then
        kill "$child" 2>/dev/null
        wait "$child" 2>/dev/null
    fi
    exit 0
}
trap stop TERM INT
while :; do
    "$@" &
    child=$!
    wait "$child"
    status=$?
    echo "supervise: $1 exited with status $status; starting it again in 1 s" >&2
    sleep 1
done
