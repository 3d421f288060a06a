"""What the three Python driver programs share: the run's names, the connection settings from the
environment, and the checksum of a large result (so that equal results print equal lines)."""
import hashlib
import os
import sys

TAG = sys.argv[1] if len(sys.argv) > 1 else "t"
# A schema the run's user may create tables in (the test makes one per run and drops it after).
SCHEMA = sys.argv[2] if len(sys.argv) > 2 else "public"
LARGE_ROWS = 50_000
CONCURRENT = 20


def t(kind):
    """A table name unique to this program and run."""
    return f"{SCHEMA}.{kind}_{TAG}"


def env_params():
    """host, port (int), user, database and password (None when unset) from PG* variables."""
    return dict(
        host=os.environ.get("PGHOST", "127.0.0.1"),
        port=int(os.environ.get("PGPORT", "5432")),
        user=os.environ.get("PGUSER", "postgres"),
        database=os.environ.get("PGDATABASE", "postgres"),
        password=os.environ.get("PGPASSWORD") or None,
    )


def checksum(rows):
    """count, sum of the first column, sha256 of 'a,b' lines."""
    h = hashlib.sha256()
    total = 0
    n = 0
    for a, b in rows:
        h.update(f"{a},{b}\n".encode())
        total += int(a)
        n += 1
    return {"count": n, "sum": total, "sha256": h.hexdigest()}
