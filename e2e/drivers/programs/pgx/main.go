// pgx v4 (Debian golang-github-jackc-pgx-v4-dev) doing what applications do; prints one JSON
// result. Build offline: GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE=<dir> go build -o BIN .
// Connection from PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD (optional); argv[1] is a tag
// unique to the run and argv[2] a schema the user may create tables in, used in table names. Printed: values, row counts, checksums, SQLSTATEs; never
// process ids or times. pgx v4 prepares every query text as a named statement (lrupsc_N_M: Parse +
// Describe + Sync, then Bind + Execute + Sync) and caches it per connection; SendBatch pipelines
// many queries before one Sync; CopyFrom sends binary COPY data. A step that fails records its
// error and the next step goes on (on a new connection if the old one broke).
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgtype"
	"github.com/jackc/pgx/v4"
)

const largeRows = 50000
const concurrent = 20

var tag = "t"
var schema = "public"

// t is a table name unique to this program and run.
func t(kind string) string {
	return schema + "." + kind + "_" + tag
}

type obj = map[string]interface{}

func getenv(k, d string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return d
}

func connect(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig("")
	if err != nil {
		return nil, err
	}
	cfg.Host = getenv("PGHOST", "127.0.0.1")
	var port uint16
	fmt.Sscan(getenv("PGPORT", "5432"), &port)
	cfg.Port = port
	cfg.User = getenv("PGUSER", "postgres")
	cfg.Database = getenv("PGDATABASE", "postgres")
	cfg.Password = os.Getenv("PGPASSWORD")
	cfg.ConnectTimeout = 20 * time.Second
	return pgx.ConnectConfig(ctx, cfg)
}

func sqlstate(err error) interface{} {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return nil
}

func errorOf(err error) obj {
	return obj{"error": fmt.Sprintf("%T", err), "sqlstate": sqlstate(err), "message": strings.SplitN(err.Error(), "\n", 2)[0]}
}

type checksum struct {
	h     [32]byte
	buf   bytes.Buffer
	count int64
	sum   int64
}

func (c *checksum) add(a int64, b string) {
	fmt.Fprintf(&c.buf, "%d,%s\n", a, b)
	c.count++
	c.sum += a
}

func (c *checksum) result() obj {
	c.h = sha256.Sum256(c.buf.Bytes())
	return obj{"count": c.count, "sum": c.sum, "sha256": hex.EncodeToString(c.h[:])}
}

func stepConnect(ctx context.Context, c *pgx.Conn) (interface{}, error) {
	var user, enc string
	var two int
	if err := c.QueryRow(ctx, "select current_user, 1 + 1, current_setting('server_encoding')").Scan(&user, &two, &enc); err != nil {
		return nil, err
	}
	return obj{"user": user, "two": two, "encoding": enc}, nil
}

func stepPrepared(ctx context.Context, c *pgx.Conn) (interface{}, error) {
	rows := []interface{}{}
	for i := 0; i < 12; i++ {
		var n int
		var s string
		if err := c.QueryRow(ctx, "select $1::int + $2::int, $3::text || '!'", i, i*2, fmt.Sprintf("v%d", i)).Scan(&n, &s); err != nil {
			return nil, err
		}
		rows = append(rows, []interface{}{n, s})
	}
	// An explicitly prepared statement, executed by name.
	if _, err := c.Prepare(ctx, "times_ten", "select $1::int * 10"); err != nil {
		return nil, err
	}
	explicit := []int{}
	for i := 0; i < 5; i++ {
		var n int
		if err := c.QueryRow(ctx, "times_ten", i).Scan(&n); err != nil {
			return nil, err
		}
		explicit = append(explicit, n)
	}
	return obj{"rows": rows, "explicit": explicit}, nil
}

func stepTypes(ctx context.Context, c *pgx.Conn) (interface{}, error) {
	var num pgtype.Numeric
	var by []byte
	var arr []int32
	var js map[string]interface{}
	var d time.Time
	var b bool
	var t string
	var f float64
	var null *int32
	err := c.QueryRow(ctx, "select $1::numeric, $2::bytea, $3::int[], $4::jsonb, $5::date, $6::bool, $7::text, $8::float8, null::int",
		"12345.678", []byte{0, 1, 0xff}, []int32{1, 2, 3}, map[string]interface{}{"a": []interface{}{1, "x"}}, time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), true, "h\u00e9llo", 1.5,
	).Scan(&num, &by, &arr, &js, &d, &b, &t, &f, &null)
	if err != nil {
		return nil, err
	}
	nval, err := num.Value()
	if err != nil {
		return nil, err
	}
	ns := fmt.Sprint(nval)
	var nv interface{}
	if null != nil {
		nv = *null
	}
	return []interface{}{ns, hex.EncodeToString(by), arr, js, d.Format("2006-01-02"), b, t, f, nv}, nil
}

func stepErrors(ctx context.Context, c *pgx.Conn) (interface{}, error) {
	out := obj{}
	var x int
	err := c.QueryRow(ctx, "select 1 / $1::int", 0).Scan(&x)
	out["autocommitError"] = sqlstate(err)
	var s string
	if err := c.QueryRow(ctx, "select 'after autocommit error'").Scan(&s); err != nil {
		return nil, err
	}
	out["afterAutocommit"] = s
	tx, err := c.Begin(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, "create table "+t("uv")+" (id int primary key)"); err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, "insert into "+t("uv")+" values (1)"); err != nil {
		return nil, err
	}
	_, err = tx.Exec(ctx, "insert into "+t("uv")+" values ($1)", 1)
	out["uniqueViolation"] = sqlstate(err)
	_, err = tx.Exec(ctx, "select 1")
	out["inFailedTransaction"] = sqlstate(err)
	if err := tx.Rollback(ctx); err != nil {
		return nil, err
	}
	var gone bool
	if err := c.QueryRow(ctx, "select to_regclass($1) is null", t("uv")).Scan(&gone); err != nil {
		return nil, err
	}
	out["tableGoneAfterRollback"] = gone
	err = c.BeginFunc(ctx, func(tx pgx.Tx) error {
		var y int
		return tx.QueryRow(ctx, "select 1 / 0").Scan(&y)
	})
	out["divisionByZeroInTransaction"] = sqlstate(err)
	if err := c.QueryRow(ctx, "select 40 + $1::int", 2).Scan(&x); err != nil {
		return nil, err
	}
	out["afterRollback"] = x
	return out, nil
}

func stepBatch(ctx context.Context, c *pgx.Conn) (interface{}, error) {
	// SendBatch: every query of the batch, then one Sync.
	out := obj{}
	err := c.BeginFunc(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "create table "+t("b")+" (id int primary key, v text)"); err != nil {
			return err
		}
		b := &pgx.Batch{}
		for i := 0; i < 100; i++ {
			b.Queue("insert into "+t("b")+" values ($1, $2)", i, fmt.Sprintf("b%d", i))
		}
		b.Queue("select count(*), sum(id) from " + t("b"))
		b.Queue("drop table " + t("b"))
		br := tx.SendBatch(ctx, b)
		var updated int64
		for i := 0; i < 100; i++ {
			ct, err := br.Exec()
			if err != nil {
				br.Close()
				return err
			}
			updated += ct.RowsAffected()
		}
		var cnt, sum int64
		if err := br.QueryRow().Scan(&cnt, &sum); err != nil {
			br.Close()
			return err
		}
		if _, err := br.Exec(); err != nil {
			br.Close()
			return err
		}
		if err := br.Close(); err != nil {
			return err
		}
		out["batchUpdated"] = updated
		out["table"] = []int64{cnt, sum}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// A batch with an error in the middle (outside a transaction: an implicit one up to the Sync).
	b := &pgx.Batch{}
	b.Queue("select $1::int", 1)
	b.Queue("select 1 / $1::int", 0)
	b.Queue("select $1::int", 3)
	br := c.SendBatch(ctx, b)
	var v int
	first := br.QueryRow().Scan(&v)
	second := br.QueryRow().Scan(&v)
	third := br.QueryRow().Scan(&v)
	closeErr := br.Close()
	out["errorBatch"] = []interface{}{first == nil, sqlstate(second), third != nil, sqlstate(closeErr)}
	var s string
	if err := c.QueryRow(ctx, "select 'after batch'").Scan(&s); err != nil {
		return nil, err
	}
	out["after"] = s
	return out, nil
}

func stepCopy(ctx context.Context, c *pgx.Conn) (interface{}, error) {
	out := obj{}
	err := c.BeginFunc(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "create table "+t("cp")+" (id int, name text)"); err != nil {
			return err
		}
		rows := [][]interface{}{}
		for i := 1; i <= 2000; i++ {
			rows = append(rows, []interface{}{int32(i), fmt.Sprintf("name %d\ttab", i)})
		}
		n, err := tx.CopyFrom(ctx, pgx.Identifier{schema, "cp_" + tag}, []string{"id", "name"}, pgx.CopyFromRows(rows))
		if err != nil {
			return err
		}
		out["copiedIn"] = n
		var cnt, sum int64
		var md5 string
		if err := tx.QueryRow(ctx, "select count(*), sum(id), md5(string_agg(name, ',' order by id)) from "+t("cp")).Scan(&cnt, &sum, &md5); err != nil {
			return err
		}
		out["table"] = obj{"count": cnt, "sum": sum, "md5": md5}
		var sink bytes.Buffer
		ct, err := tx.Conn().PgConn().CopyTo(ctx, &sink, "copy (select id, name from "+t("cp")+" order by id) to stdout with csv")
		if err != nil {
			return err
		}
		h := sha256.Sum256(sink.Bytes())
		out["copiedOut"] = obj{"rowcount": ct.RowsAffected(), "sha256": hex.EncodeToString(h[:])}
		_, err = tx.Exec(ctx, "drop table "+t("cp"))
		return err
	})
	if err != nil {
		return nil, err
	}
	err = c.BeginFunc(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "create table "+t("cpbad")+" (id int)"); err != nil {
			return err
		}
		_, err := tx.Conn().PgConn().CopyFrom(ctx, strings.NewReader("1\nnot a number\n"), "copy "+t("cpbad")+" from stdin")
		return err
	})
	out["badCopy"] = sqlstate(err)
	var s string
	if err := c.QueryRow(ctx, "select 'ok'").Scan(&s); err != nil {
		return nil, err
	}
	out["afterBadCopy"] = s
	return out, nil
}

func stepLarge(ctx context.Context, c *pgx.Conn) (interface{}, error) {
	rows, err := c.Query(ctx, "select i, md5(i::text) from generate_series(1, $1::int) i", largeRows)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	ck := &checksum{}
	for rows.Next() {
		var i int64
		var s string
		if err := rows.Scan(&i, &s); err != nil {
			return nil, err
		}
		ck.add(i, s)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return ck.result(), nil
}

func stepCursor(ctx context.Context, c *pgx.Conn) (interface{}, error) {
	// pgx has no portal API: SQL-level DECLARE / FETCH inside a transaction.
	ck := &checksum{}
	batches := 0
	err := c.BeginFunc(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "declare cur_"+tag+" cursor for select i, repeat('x', mod(i, 7)) from generate_series(1, 10000) i"); err != nil {
			return err
		}
		for {
			rows, err := tx.Query(ctx, "fetch forward 1000 from cur_"+tag)
			if err != nil {
				return err
			}
			n := 0
			for rows.Next() {
				var i int64
				var s string
				if err := rows.Scan(&i, &s); err != nil {
					rows.Close()
					return err
				}
				ck.add(i, s)
				n++
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			if n == 0 {
				break
			}
			batches++
		}
		_, err := tx.Exec(ctx, "close cur_"+tag)
		return err
	})
	if err != nil {
		return nil, err
	}
	r := ck.result()
	r["batches"] = batches
	return r, nil
}

// stepTempTable comes last on this connection: transaction pooling pins the backend after it.
func stepTempTable(ctx context.Context, c *pgx.Conn) (interface{}, error) {
	var sum int
	err := c.BeginFunc(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "create temp table tt_"+tag+" (v int) on commit drop"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "insert into tt_"+tag+" values (1), (2), (3)"); err != nil {
			return err
		}
		return tx.QueryRow(ctx, "select sum(v)::int from tt_"+tag).Scan(&sum)
	})
	if err != nil {
		return nil, err
	}
	var after string
	if err := c.QueryRow(ctx, "select 'after temp table'").Scan(&after); err != nil {
		return nil, err
	}
	return obj{"sum": sum, "after": after}, nil
}

func worker(ctx context.Context, i int) (int64, error) {
	c, err := connect(ctx)
	if err != nil {
		return 0, err
	}
	defer c.Close(ctx)
	var total int64
	for k := 0; k < 6; k++ {
		var n int64
		if err := c.QueryRow(ctx, "select $1::int * $2::int", i, k).Scan(&n); err != nil {
			return 0, err
		}
		total += n
	}
	err = c.BeginFunc(ctx, func(tx pgx.Tx) error {
		var a, s int64
		if err := tx.QueryRow(ctx, "select $1::int", i).Scan(&a); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, "select coalesce(sum(g), 0)::int from generate_series(1, $1::int) g", i).Scan(&s); err != nil {
			return err
		}
		total += a + s
		return nil
	})
	return total, err
}

func stepConcurrent(ctx context.Context) interface{} {
	var mu sync.Mutex
	var wg sync.WaitGroup
	var sum, ok int64
	errs := []string{}
	for i := 0; i < concurrent; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			n, err := worker(ctx, i)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Sprintf("%T:%v", err, sqlstate(err)))
				return
			}
			sum += n
			ok++
		}(i)
	}
	wg.Wait()
	sort.Strings(errs)
	return obj{"sessions": concurrent, "ok": ok, "sum": sum, "errors": errs}
}

func main() {
	if len(os.Args) > 1 {
		tag = os.Args[1]
	}
	if len(os.Args) > 2 {
		schema = os.Args[2]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	result := obj{"driver": "pgx", "version": "v4"}
	type step struct {
		name string
		fn   func(context.Context, *pgx.Conn) (interface{}, error)
	}
	steps := []step{{"connect", stepConnect}, {"prepared", stepPrepared}, {"types", stepTypes}, {"errors", stepErrors}, {"batch", stepBatch}, {"copy", stepCopy}, {"large", stepLarge}, {"cursor", stepCursor}, {"tempTable", stepTempTable}}
	var c *pgx.Conn
	for _, s := range steps {
		if c == nil || c.IsClosed() {
			var err error
			c, err = connect(ctx)
			if err != nil {
				result[s.name] = errorOf(err)
				c = nil
				continue
			}
		}
		// A hung session fails its step, not the whole run.
		stepCtx, stepCancel := context.WithTimeout(ctx, 15*time.Second)
		v, err := s.fn(stepCtx, c)
		stepCancel()
		if err != nil {
			result[s.name] = errorOf(err)
			if !c.IsClosed() && c.PgConn().TxStatus() != 'I' {
				c.Exec(ctx, "rollback")
			}
			continue
		}
		result[s.name] = v
	}
	if c != nil {
		c.Close(ctx)
	}
	result["concurrent"] = stepConcurrent(ctx)
	out, err := json.Marshal(result)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(string(out))
}
