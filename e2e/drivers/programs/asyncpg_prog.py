"""asyncpg (Debian python3-asyncpg) doing what applications do; prints one JSON result.

Connection from PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD (optional); argv[1] is a tag
unique to the run and argv[2] a schema, used in table names. Printed: values, row counts, checksums, SQLSTATEs;
never process ids or times. asyncpg uses the extended protocol in binary format and caches a
named prepared statement per query text on each connection (statement_cache_size, default 100).
A step that fails records its error and the next step goes on (on a new connection if needed).
"""
import asyncio
import datetime
import decimal
import hashlib
import io
import json

import asyncpg
from driver_common import CONCURRENT, LARGE_ROWS, SCHEMA, TAG, checksum, env_params, t

PARAMS = dict(
    **env_params(),
    timeout=20,
    # Seconds a command may take: a hung session fails its step, not the whole run.
    command_timeout=15,
)


def connect():
    return asyncpg.connect(**PARAMS)


def error_of(e):
    return {"error": type(e).__name__, "sqlstate": getattr(e, "sqlstate", None), "message": str(e).splitlines()[0] if str(e) else ""}


async def step_connect(conn):
    r = await conn.fetchrow("select current_user, 1 + 1, current_setting('server_encoding')")
    return {"user": r[0], "two": r[1], "encoding": r[2]}


async def step_prepared(conn):
    # The same text 12 times: parsed once as a named statement, then Bind/Execute only.
    out = []
    for i in range(12):
        r = await conn.fetchrow("select $1::int + $2::int, $3::text || '!'", i, i * 2, f"v{i}")
        out.append(list(r))
    # An explicit prepared statement, used with several argument sets.
    stmt = await conn.prepare("select $1::int * 10")
    explicit = [await stmt.fetchval(i) for i in range(5)]
    return {"rows": out, "explicit": explicit}


async def step_types(conn):
    r = await conn.fetchrow(
        "select $1::numeric, $2::bytea, $3::int[], $4::jsonb, $5::date, $6::bool, $7::text, $8::float8, null::int",
        decimal.Decimal("12345.678"), b"\x00\x01\xff", [1, 2, 3], json.dumps({"a": [1, "x"]}), datetime.date(2024, 2, 29), True, "h\u00e9llo", 1.5,
    )
    return [str(r[0]), r[1].hex(), list(r[2]), json.loads(r[3]), r[4].isoformat(), r[5], r[6], r[7], r[8]]


async def step_errors(conn):
    out = {}
    try:
        await conn.fetchval("select 1 / $1::int", 0)
    except asyncpg.PostgresError as e:
        out["autocommitError"] = e.sqlstate
    out["afterAutocommit"] = await conn.fetchval("select 'after autocommit error'")
    tr = conn.transaction()
    await tr.start()
    await conn.execute(f"create table {t('uv')} (id int primary key)")
    await conn.execute(f"insert into {t('uv')} values (1)")
    try:
        await conn.execute(f"insert into {t('uv')} values ($1)", 1)
    except asyncpg.PostgresError as e:
        out["uniqueViolation"] = e.sqlstate
    try:
        await conn.fetchval("select 1")
    except asyncpg.PostgresError as e:
        out["inFailedTransaction"] = e.sqlstate
    out["inTransactionBeforeRollback"] = conn.is_in_transaction()
    await tr.rollback()
    out["inTransactionAfterRollback"] = conn.is_in_transaction()
    out["tableGoneAfterRollback"] = await conn.fetchval("select to_regclass($1) is null", t("uv"))
    try:
        async with conn.transaction():
            await conn.fetchval("select 1 / 0")
    except asyncpg.PostgresError as e:
        out["divisionByZeroInTransaction"] = e.sqlstate
    out["afterRollback"] = await conn.fetchval("select 40 + $1::int", 2)
    return out


async def step_copy(conn):
    out = {}
    async with conn.transaction():
        await conn.execute(f"create table {t('cp')} (id int, name text)")
        status = await conn.copy_records_to_table(f"cp_{TAG}", schema_name=SCHEMA, records=[(i, f"name {i}\ttab") for i in range(1, 2001)], columns=["id", "name"])
        out["copiedIn"] = status
        r = await conn.fetchrow(f"select count(*), sum(id), md5(string_agg(name, ',' order by id)) from {t('cp')}")
        out["table"] = {"count": r[0], "sum": int(r[1]), "md5": r[2]}
        chunks = []

        async def sink(data):
            chunks.append(bytes(data))

        status = await conn.copy_from_query(f"select id, name from {t('cp')} order by id", output=sink, format="csv")
        text = b"".join(chunks).decode()
        out["copiedOut"] = {"status": status, "bytes": len(text), "sha256": hashlib.sha256(text.encode()).hexdigest()}
        await conn.execute(f"drop table {t('cp')}")
    try:
        async with conn.transaction():
            await conn.execute(f"create table {t('cpbad')} (id int)")
            await conn.copy_to_table(f"cpbad_{TAG}", schema_name=SCHEMA, source=io.BytesIO(b"1\nnot a number\n"))
    except Exception as e:
        out["badCopy"] = getattr(e, "sqlstate", type(e).__name__)
    out["afterBadCopy"] = await conn.fetchval("select 'ok'")
    return out


async def step_large(conn):
    rows = await conn.fetch("select i, md5(i::text) from generate_series(1, $1::int) i", LARGE_ROWS)
    return checksum((r[0], r[1]) for r in rows)


async def step_cursor(conn):
    # A protocol-level portal: Bind once, then Execute with a row limit, prefetch rows at a time.
    rows = []
    async with conn.transaction():
        async for r in conn.cursor("select i, repeat('x', mod(i, 7)) from generate_series(1, 10000) i", prefetch=1000):
            rows.append((r[0], r[1]))
        cur = await conn.cursor("select i, i::text from generate_series(1, 100) i")
        first = await cur.fetch(30)
        await cur.forward(20)
        rest = await cur.fetch(100)
    return {"iterated": checksum(rows), "fetched": [len(first), len(rest), first[0][0], rest[0][0]]}


async def step_temp_table(conn):
    # Last on this connection: a temp table (transaction pooling pins the backend after it).
    async with conn.transaction():
        await conn.execute(f"create temp table tt_{TAG} (v int) on commit drop")
        await conn.execute(f"insert into tt_{TAG} values (1), (2), (3)")
        s = await conn.fetchval(f"select sum(v)::int from tt_{TAG}")
    return {"sum": s, "after": await conn.fetchval("select 'after temp table'")}


async def worker(i):
    c = await connect()
    try:
        total = 0
        for k in range(6):
            total += await c.fetchval("select $1::int * $2::int", i, k)
        async with c.transaction():
            total += await c.fetchval("select $1::int", i)
            total += await c.fetchval("select coalesce(sum(g), 0)::int from generate_series(1, $1::int) g", i)
        return total
    finally:
        await c.close()


async def step_concurrent():
    results = await asyncio.gather(*(worker(i) for i in range(CONCURRENT)), return_exceptions=True)
    ok = [r for r in results if not isinstance(r, BaseException)]
    errors = sorted(f"{type(r).__name__}:{getattr(r, 'sqlstate', None)}" for r in results if isinstance(r, BaseException))
    return {"sessions": CONCURRENT, "ok": len(ok), "sum": sum(ok), "errors": errors}


async def main():
    result = {"driver": "asyncpg", "version": asyncpg.__version__}
    conn = None
    steps = [("connect", step_connect), ("prepared", step_prepared), ("types", step_types), ("errors", step_errors), ("copy", step_copy), ("large", step_large), ("cursor", step_cursor), ("tempTable", step_temp_table)]
    for name, fn in steps:
        try:
            if conn is None or conn.is_closed():
                conn = await connect()
            result[name] = await fn(conn)
        except Exception as e:
            result[name] = error_of(e)
            if conn is not None and not conn.is_closed() and conn.is_in_transaction():
                try:
                    await conn.execute("rollback")
                except Exception:
                    pass
    if conn is not None:
        await conn.close()
    try:
        result["concurrent"] = await step_concurrent()
    except Exception as e:
        result["concurrent"] = error_of(e)
    print(json.dumps(result, sort_keys=True))


asyncio.run(main())
