"""The support workflow's booking agent in Python, on Baton's Python SDK.

The same agent as main.go beside it, with the SDK doing the plumbing: the
server POSTs each piece of work, signed with the secret both share, and the
agent answers with its outcome at once. It proposes a slot for a booking
request and hands any other request back to triage. The first call for a
request that says "urgent" fails as unavailable, to show the state's retry
policy at work.

    pip install ./sdk/python
    SUPPORT_BOOKING_SECRET=... python3 examples/support/booking/booking.py

It listens on BOOKING_ADDR (default 127.0.0.1:8091), the address the
workflow's url names.
"""

import logging
import os
import threading
from datetime import datetime, timedelta, timezone

import baton

failed: set[str] = set()  # instances whose first call failed
lock = threading.Lock()


def booking(work: baton.Work) -> baton.Outcome:
    text = str(work.input.get("message", "")).lower()
    if "urgent" in text:
        with lock:
            first = work.instance_id not in failed
            failed.add(work.instance_id)
        if first:
            raise baton.Fail("unavailable", "the calendar is busy, try again")
    if any(word in text for word in ("book", "visit", "appointment", "come on")):
        slot = next_slot(datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return baton.Outcome("proposed", {"slot": slot})
    return baton.Outcome("not_mine")  # the workflow hands the request back to triage


def next_slot(now: datetime) -> datetime:
    """10:00 UTC on the next weekday."""
    day = now + timedelta(days=1)
    while day.weekday() >= 5:
        day += timedelta(days=1)
    return day.replace(hour=10, minute=0, second=0, microsecond=0)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    host, _, port = os.environ.get("BOOKING_ADDR", "127.0.0.1:8091").rpartition(":")
    baton.serve({"booking": booking}, host=host, port=int(port), secret=os.environ["SUPPORT_BOOKING_SECRET"])
