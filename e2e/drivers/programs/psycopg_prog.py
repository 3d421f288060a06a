"""psycopg 3 (Debian python3-psycopg) doing what applications do; prints one JSON result.

Connection from PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD (optional); argv[1] is a tag
unique to the run and argv[2] a schema, used in table names. Everything printed is the same for a run straight
against Postgres and one through a pooler: values, row counts, checksums, SQLSTATEs; never
process ids or times. A step that fails records its error and the next step goes on (on a new
connection if the old one broke), so one run shows every step that differs.
"""
import json
import threading

import psycopg
from driver_common import CONCURRENT, LARGE_ROWS, TAG, checksum, env_params, t

CONNINFO = {k: v for k, v in env_params().items() if v is not None}
CONNINFO["dbname"] = CONNINFO.pop("database")
CONNINFO["connect_timeout"] = 20


def connect(**kw):
    return psycopg.connect(**CONNINFO, **kw)


def error_of(e):
    return {"error": type(e).__name__, "sqlstate": getattr(e, "sqlstate", None), "message": str(e).splitlines()[0] if str(e) else ""}


def step_connect(conn):
    with conn.cursor() as cur:
        cur.execute("select current_user, 1 + 1, current_setting('server_encoding')")
        user, two, enc = cur.fetchone()
    return {"user": user, "two": two, "encoding": enc}


def step_prepared(conn):
    # prepare_threshold is 5 (the default): executions 6..12 use the named statement _pg3_N.
    out = []
    with conn.cursor() as cur:
        for i in range(12):
            cur.execute("select %s::int + %s::int, %s::text || '!'", (i, i * 2, f"v{i}"))
            out.append(list(cur.fetchone()))
        prepared = sorted(conn._prepared._names.values() if hasattr(conn._prepared, "_names") else [])
    return {"rows": out, "namedStatements": len(prepared)}


def step_types(conn):
    import datetime
    import decimal
    with conn.cursor() as cur:
        cur.execute(
            "select %s::numeric, %s::bytea, %s::int[], %s::jsonb, %s::date, %s::bool, %s::text, %s::float8, null::int",
            (decimal.Decimal("12345.678"), b"\x00\x01\xff", [1, 2, 3], psycopg.types.json.Jsonb({"a": [1, "x"]}), datetime.date(2024, 2, 29), True, "h\u00e9llo", 1.5),
        )
        r = cur.fetchone()
    return [str(r[0]), r[1].hex(), r[2], r[3], r[4].isoformat(), r[5], r[6], r[7], r[8]]


def step_errors(conn):
    out = {}
    # An error in autocommit: the next statement works.
    with conn.cursor() as cur:
        try:
            cur.execute("select 1 / %s::int", (0,))
        except psycopg.Error as e:
            out["autocommitError"] = e.sqlstate
        cur.execute("select 'after autocommit error'")
        out["afterAutocommit"] = cur.fetchone()[0]
    # A transaction: unique violation, then 25P02 for the next statement, then rollback.
    conn.autocommit = False
    try:
        with conn.cursor() as cur:
            cur.execute(f"create table {t('uv')} (id int primary key)")
            cur.execute(f"insert into {t('uv')} values (1)")
            try:
                cur.execute(f"insert into {t('uv')} values (%s)", (1,))
            except psycopg.Error as e:
                out["uniqueViolation"] = e.sqlstate
            try:
                cur.execute("select 1")
            except psycopg.Error as e:
                out["inFailedTransaction"] = e.sqlstate
            out["statusBeforeRollback"] = conn.info.transaction_status.name
        conn.rollback()
        out["statusAfterRollback"] = conn.info.transaction_status.name
        with conn.cursor() as cur:
            cur.execute("select to_regclass(%s) is null", (t("uv"),))
            out["tableGoneAfterRollback"] = cur.fetchone()[0]
        conn.commit()
    finally:
        conn.autocommit = True
    # Division by zero inside `with conn.transaction()` (rolled back by the context manager).
    try:
        with conn.transaction():
            conn.execute("select 1 / 0")
    except psycopg.Error as e:
        out["divisionByZeroInTransaction"] = e.sqlstate
    out["afterRollback"] = conn.execute("select 40 + %s", (2,)).fetchone()[0]
    return out


def step_copy(conn):
    out = {}
    with conn.transaction():
        with conn.cursor() as cur:
            cur.execute(f"create table {t('cp')} (id int, name text)")
            with cur.copy(f"copy {t('cp')} (id, name) from stdin") as cp:
                for i in range(1, 2001):
                    cp.write_row((i, f"name {i}\ttab"))
            out["copiedIn"] = cur.rowcount
            cur.execute(f"select count(*), sum(id), md5(string_agg(name, ',' order by id)) from {t('cp')}")
            c, s, m = cur.fetchone()
            out["table"] = {"count": c, "sum": int(s), "md5": m}
            rows = []
            with cur.copy(f"copy (select id, name from {t('cp')} order by id) to stdout") as cp:
                for row in cp.rows():
                    rows.append(row)
            out["copiedOut"] = checksum(rows)
            cur.execute(f"drop table {t('cp')}")
    # A bad COPY row: the error, and the session goes on.
    try:
        with conn.transaction():
            with conn.cursor() as cur:
                cur.execute(f"create table {t('cpbad')} (id int)")
                with cur.copy(f"copy {t('cpbad')} from stdin") as cp:
                    cp.write(b"1\nnot a number\n")
    except psycopg.Error as e:
        out["badCopy"] = e.sqlstate
    out["afterBadCopy"] = conn.execute("select 'ok'").fetchone()[0]
    return out


def step_large(conn):
    with conn.cursor() as cur:
        cur.execute("select i, md5(i::text) from generate_series(1, %s) i", (LARGE_ROWS,))
        return checksum(cur.fetchall())


def step_cursor(conn):
    # A named (server-side) cursor: DECLARE ... then FETCH FORWARD itersize, inside a transaction.
    batches = 0
    rows = []
    with conn.transaction():
        with conn.cursor(name=f"cur_{TAG}") as cur:
            cur.itersize = 1000
            cur.execute("select i, repeat('x', mod(i, 7)) from generate_series(1, 10000) i")
            while True:
                chunk = cur.fetchmany(1000)
                if not chunk:
                    break
                batches += 1
                rows.extend(chunk)
    return {"batches": batches, **checksum(rows)}


def step_pipeline(conn):
    out = {}
    with conn.transaction():
        conn.execute(f"create table {t('pl')} (id int primary key, v text)")
        with conn.pipeline():
            with conn.cursor() as cur:
                for i in range(20):
                    cur.execute(f"insert into {t('pl')} values (%s, %s)", (i, f"p{i}"))
        out["inserted"] = list(conn.execute(f"select count(*), sum(id) from {t('pl')}").fetchone())
        conn.execute(f"drop table {t('pl')}")
    # An error mid-pipeline: the statements after it are skipped up to the sync.
    results = []
    try:
        with conn.pipeline() as p:
            conn.execute("select %s::int", (1,))
            conn.execute("select 1 / %s::int", (0,))
            conn.execute("select %s::int", (3,))
            p.sync()
    except psycopg.Error as e:
        results.append(["error", e.sqlstate or type(e).__name__])
    out["errorPipeline"] = results
    out["after"] = conn.execute("select %s::text", ("pipeline ok",)).fetchone()[0]
    # Many pipelined reads with the prepared-statement threshold passed inside the pipeline.
    with conn.pipeline():
        curs = [conn.execute("select %s::int * 3", (i,)) for i in range(15)]
    out["pipelinedSum"] = sum(c.fetchone()[0] for c in curs)
    return out


def step_temp_table(conn):
    # Last on this connection: a temp table (transaction pooling pins the backend after it).
    with conn.transaction():
        conn.execute(f"create temp table tt_{TAG} (v int) on commit drop")
        conn.execute(f"insert into tt_{TAG} values (1), (2), (3)")
        s = conn.execute(f"select sum(v)::int from tt_{TAG}").fetchone()[0]
    return {"sum": s, "after": conn.execute("select 'after temp table'").fetchone()[0]}


def worker(i, results, errors):
    try:
        with connect(autocommit=True) as c:
            total = 0
            for k in range(6):
                total += c.execute("select %s::int * %s::int", (i, k)).fetchone()[0]
            with c.transaction():
                total += c.execute("select %s::int", (i,)).fetchone()[0]
                total += c.execute("select coalesce(sum(g), 0)::int from generate_series(1, %s) g", (i,)).fetchone()[0]
            results[i] = total
    except Exception as e:  # reported as an aggregate error list
        errors.append(f"{type(e).__name__}:{getattr(e, 'sqlstate', None)}")


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
    result = {"driver": "psycopg", "version": psycopg.__version__}
    conn = None
    steps = [("connect", step_connect), ("prepared", step_prepared), ("types", step_types), ("errors", step_errors), ("copy", step_copy), ("large", step_large), ("cursor", step_cursor), ("pipeline", step_pipeline), ("tempTable", step_temp_table)]
    for name, fn in steps:
        try:
            if conn is None or conn.closed or conn.broken:
                conn = connect(autocommit=True)
            result[name] = fn(conn)
        except Exception as e:
            result[name] = error_of(e)
            if conn is not None and not conn.closed:
                try:
                    conn.rollback()
                except Exception:
                    pass
    if conn is not None:
        conn.close()
    try:
        result["concurrent"] = step_concurrent()
    except Exception as e:
        result["concurrent"] = error_of(e)
    print(json.dumps(result, sort_keys=True))


main()
