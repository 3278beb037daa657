#!/usr/bin/env python3
"""The nightly report under the lease "nightly-report", with psycopg2.

Takes the lease, writes the report under its fencing token, renews the
lease before the work, releases it. Connects with libpq's PG* variables.
Exit status: 0 done, 1 failed (no report row to write: the lease was
released), 75 busy (another worker holds the lease), 76 lost (the lease
ended while working: nothing more was written).
"""
import os
import socket
import sys

import psycopg2

LEASE = "nightly-report"
FAILED, BUSY, LOST = 1, 75, 76

# Every write checks in its own transaction that the lease is still ours
# (assert_held), and the row refuses an older token than its own. It answers
# how many rows it updated: 1, the report's, or 0 if that row is missing.
WRITE = """
SELECT dlock.fenced_update('reports', %(token)s,
         jsonb_build_object('status', %(status)s::text, 'total', %(total)s::numeric),
         jsonb_build_object('day', '2026-11-30'))
  FROM dlock.assert_held(%(lease)s, %(token)s)"""


class NoReportRow(Exception):
    """A write updated no report row: there is none for the day."""


def write(cur, token, status, total=None):
    cur.execute(WRITE, {"lease": LEASE, "token": token, "status": status, "total": total})
    if cur.fetchone()[0] != 1:
        raise NoReportRow()
    print(f"wrote {status} with token {token}")


def release(cur, token, owner):
    """True if this released the lease; False if it had already ended."""
    cur.execute("SELECT dlock.release(%s, %s, owner => %s)", (LEASE, token, owner))
    return cur.fetchone()[0]


def main():
    conn = psycopg2.connect("")  # "": the PG* environment variables
    # Each call commits at once: a grant inside an open transaction is
    # invisible to others, and holds the lease's row until it ends.
    conn.autocommit = True
    cur = conn.cursor()
    owner = f"report-worker-{socket.gethostname()}-{os.getpid()}"

    cur.execute("SELECT token FROM dlock.try_acquire(%s, '30 s', owner => %s)", (LEASE, owner))
    (token,) = cur.fetchone()
    if token is None:
        cur.execute("SELECT coalesce(owner, 'nobody now') FROM dlock.get(%s)", (LEASE,))
        print(f"busy: {LEASE} is held by {cur.fetchone()[0]}")
        return BUSY
    print(f"granted token={token}")

    try:
        write(cur, token, "running")
        # A long job renews before each step (at least every third of the ttl).
        cur.execute("SELECT valid_for FROM dlock.renew(%s, %s, owner => %s)", (LEASE, token, owner))
        print("renewed")
        cur.execute("SELECT coalesce(sum(amount), 0) FROM sales WHERE day = '2026-11-30'")
        write(cur, token, "done", cur.fetchone()[0])
    except psycopg2.Error as e:
        if e.pgcode in ("LD001", "LD002"):  # a newer token wrote; the lease ended
            print(f"lost: {e.diag.message_primary} ({e.diag.message_detail})", file=sys.stderr)
            return LOST
        raise
    except NoReportRow:
        release(cur, token, owner)
        print("failed: no report row for 2026-11-30", file=sys.stderr)
        return FAILED

    print("released" if release(cur, token, owner) else "not released: the lease had already ended")
    return 0


if __name__ == "__main__":
    sys.exit(main())
