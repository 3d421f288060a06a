"""pg8000 1.10.6 (Debian python3-pg8000, DB-API only) doing what applications do; prints JSON.

Connection from PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD (optional); argv[1] is a tag
unique to the run and argv[2] a schema, used in table names. Printed: values, row counts, checksums, SQLSTATEs;
never process ids or times. This pg8000 names every statement it parses (pg8000_statement_N:
Parse + Describe + Flush + Sync, then Bind + Execute(100 rows) + Sync, more Execute + Sync for
the next 100 rows of a suspended portal, Close portal + Sync), caches them per connection, and
by DB-API rule opens a transaction before the first statement (autocommit off by default).
A step that fails records its error and the next step goes on (on a new connection if needed).
"""
import datetime
import decimal
import hashlib
import io
import json
import re
import threading

import pg8000
from driver_common import CONCURRENT, LARGE_ROWS, TAG, checksum, env_params, t

PARAMS = dict(
    **env_params(),
    # Seconds a socket read or write may take: a hung session fails its step, not the whole run.
    timeout=10,
)
SEVERITIES = {"ERROR", "FATAL", "PANIC"}


def connect():
    return pg8000.connect(**PARAMS)


def sqlstate(e):
    """pg8000 1.10 puts the ErrorResponse's fields in args, in wire order (S, V, C, M ...)."""
    for a in getattr(e, "args", ()):
        if isinstance(a, str) and re.fullmatch(r"[0-9A-Z]{5}", a) and a not in SEVERITIES:
            return a
    return None


def error_of(e):
    return {"error": type(e).__name__, "sqlstate": sqlstate(e), "message": " ".join(str(a) for a in getattr(e, "args", ()))[:300]}


def step_connect(conn):
    cur = conn.cursor()
    cur.execute("select current_user, 1 + 1, current_setting('server_encoding')")
    user, two, enc = cur.fetchone()
    conn.commit()
    return {"user": user, "two": two, "encoding": enc}


def step_prepared(conn):
    # The same text 12 times: one named statement, Bind/Execute for the others.
    out = []
    cur = conn.cursor()
    for i in range(12):
        cur.execute("select %s::int + %s::int, %s::text || '!'", (i, i * 2, f"v{i}"))
        out.append(list(cur.fetchone()))
        if i % 4 == 3:
            conn.commit()  # the statement outlives its transaction
    conn.commit()
    return {"rows": out}


def step_types(conn):
    cur = conn.cursor()
    cur.execute(
        "select %s::numeric, %s::bytea, %s::int[], %s::text::jsonb::text, %s::date, %s::bool, %s::text, %s::float8, null::int",
        (decimal.Decimal("12345.678"), b"\x00\x01\xff", [1, 2, 3], json.dumps({"a": [1, "x"]}), datetime.date(2024, 2, 29), True, "h\u00e9llo", 1.5),
    )
    r = cur.fetchone()
    conn.commit()
    return [str(r[0]), bytes(r[1]).hex(), list(r[2]), json.loads(r[3]), r[4].isoformat(), r[5], r[6], r[7], r[8]]


def step_errors(conn):
    out = {}
    cur = conn.cursor()
    # A transaction (DB-API: implicit BEGIN): unique violation, 25P02, rollback.
    cur.execute(f"create table {t('uv')} (id int primary key)")
    cur.execute(f"insert into {t('uv')} values (1)")
    try:
        cur.execute(f"insert into {t('uv')} values (%s)", (1,))
    except pg8000.ProgrammingError as e:
        out["uniqueViolation"] = sqlstate(e)
    try:
        cur.execute("select 1")
    except pg8000.ProgrammingError as e:
        out["inFailedTransaction"] = sqlstate(e)
    conn.rollback()
    cur.execute("select to_regclass(%s) is null", (t("uv"),))
    out["tableGoneAfterRollback"] = cur.fetchone()[0]
    conn.commit()
    try:
        cur.execute("select 1 / %s::int", (0,))
    except pg8000.ProgrammingError as e:
        out["divisionByZeroInTransaction"] = sqlstate(e)
    conn.rollback()
    cur.execute("select 40 + %s::int", (2,))
    out["afterRollback"] = cur.fetchone()[0]
    conn.commit()
    # autocommit on: an error outside a transaction, then the next statement.
    conn.autocommit = True
    try:
        try:
            cur.execute("select 1 / %s::int", (0,))
        except pg8000.ProgrammingError as e:
            out["autocommitError"] = sqlstate(e)
        cur.execute("select 'after autocommit error'")
        out["afterAutocommit"] = cur.fetchone()[0]
    finally:
        conn.autocommit = False
    return out


def step_copy(conn):
    out = {}
    cur = conn.cursor()
    cur.execute(f"create table {t('cp')} (id int, name text)")
    data = "".join(f"{i}\tname {i}\\ttab\n" for i in range(1, 2001)).encode()
    cur.execute(f"copy {t('cp')} (id, name) from stdin", stream=io.BytesIO(data))
    out["copiedIn"] = cur.rowcount
    cur.execute(f"select count(*), sum(id), md5(string_agg(name, ',' order by id)) from {t('cp')}")
    c, s, m = cur.fetchone()
    out["table"] = {"count": c, "sum": int(s), "md5": m}
    sink = io.BytesIO()
    cur.execute(f"copy (select id, name from {t('cp')} order by id) to stdout with csv", stream=sink)
    out["copiedOut"] = {"rowcount": cur.rowcount, "sha256": hashlib.sha256(sink.getvalue()).hexdigest()}
    cur.execute(f"drop table {t('cp')}")
    conn.commit()
    try:
        cur.execute(f"create table {t('cpbad')} (id int)")
        cur.execute(f"copy {t('cpbad')} from stdin", stream=io.BytesIO(b"1\nnot a number\n"))
    except pg8000.ProgrammingError as e:
        out["badCopy"] = sqlstate(e)
    conn.rollback()
    cur.execute("select 'ok'")
    out["afterBadCopy"] = cur.fetchone()[0]
    conn.commit()
    return out


def step_large(conn):
    # 50,000 rows arrive 100 at a time: Execute on the suspended portal + Sync, 500 times.
    cur = conn.cursor()
    cur.execute("select i, md5(i::text) from generate_series(1, %s) i", (LARGE_ROWS,))
    r = checksum(cur.fetchall())
    conn.commit()
    return r


def step_cursor(conn):
    # No named cursors in pg8000 1.10: SQL-level DECLARE / FETCH inside the transaction.
    cur = conn.cursor()
    cur.execute(f"declare cur_{TAG} cursor for select i, repeat('x', mod(i, 7)) from generate_series(1, 10000) i")
    rows = []
    batches = 0
    while True:
        cur.execute(f"fetch forward 1000 from cur_{TAG}")
        chunk = cur.fetchall()
        if not chunk:
            break
        batches += 1
        rows.extend(chunk)
    cur.execute(f"close cur_{TAG}")
    conn.commit()
    return {"batches": batches, **checksum(rows)}


def step_temp_table(conn):
    # Last on this connection: a temp table (transaction pooling pins the backend after it).
    cur = conn.cursor()
    cur.execute(f"create temp table tt_{TAG} (v int) on commit drop")
    cur.execute(f"insert into tt_{TAG} values (1), (2), (3)")
    cur.execute(f"select sum(v)::int from tt_{TAG}")
    s = cur.fetchone()[0]
    conn.commit()
    cur.execute("select 'after temp table'")
    after = cur.fetchone()[0]
    conn.commit()
    return {"sum": s, "after": after}


def worker(i, results, errors):
    try:
        c = connect()
        try:
            cur = c.cursor()
            total = 0
            for k in range(6):
                cur.execute("select %s::int * %s::int", (i, k))
                total += cur.fetchone()[0]
            c.commit()
            cur.execute("select %s::int", (i,))
            total += cur.fetchone()[0]
            cur.execute("select coalesce(sum(g), 0)::int from generate_series(1, %s) g", (i,))
            total += cur.fetchone()[0]
            c.commit()
            results[i] = total
        finally:
            c.close()
    except Exception as e:
        errors.append(f"{type(e).__name__}:{sqlstate(e)}")


def step_concurrent():
    results = [None] * CONCURRENT
    errors = []
    threads = [threading.Thread(target=worker, args=(i, results, errors)) for i in range(CONCURRENT)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return {"sessions": CONCURRENT, "ok": sum(r is not None for r in results), "sum": sum(r for r in results if r is not None), "errors": sorted(errors)}


def main():
    result = {"driver": "pg8000", "version": pg8000.__version__}
    conn = None
    steps = [("connect", step_connect), ("prepared", step_prepared), ("types", step_types), ("errors", step_errors), ("copy", step_copy), ("large", step_large), ("cursor", step_cursor), ("tempTable", step_temp_table)]
    for name, fn in steps:
        try:
            if conn is None or conn._sock is None:
                conn = connect()
            result[name] = fn(conn)
        except Exception as e:
            result[name] = error_of(e)
            try:
                conn.rollback()
            except Exception:
                conn = None
    if conn is not None:
        try:
            conn.close()
        except Exception:
            pass
    try:
        result["concurrent"] = step_concurrent()
    except Exception as e:
        result["concurrent"] = error_of(e)
    print(json.dumps(result, sort_keys=True))


main()
