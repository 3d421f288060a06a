// pgjdbc (Debian libpostgresql-jdbc-java, /usr/share/java/postgresql.jar) doing what applications
// do; prints one JSON result. Run: java -cp /usr/share/java/postgresql.jar Pgjdbc.java TAG SCHEMA
// Connection from PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD (optional); TAG is unique to the
// run and SCHEMA one the user may create tables in, used in table names. Printed: values, row counts, checksums, SQLSTATEs; never process ids
// or times. pgjdbc sends an unnamed Parse/Bind/Describe/Execute/Sync per statement until a
// PreparedStatement has run prepareThreshold (5) times, then a named one (S_n); with autocommit
// off and a fetch size it keeps a named portal (C_n) and sends Execute(fetchSize) + Sync per batch.
// A step that fails records its error and the next step goes on (on a new connection if needed).
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.sql.Array;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyManager;

public class Pgjdbc {
  static final int LARGE_ROWS = 50_000;
  static final int CONCURRENT = 20;
  static String tag = "t";
  static String schema = "public";

  /** A table name unique to this program and run. */
  static String t(String kind) {
    return schema + "." + kind + "_" + tag;
  }

  interface Step {
    Object run(Connection c) throws Exception;
  }

  static String env(String k, String d) {
    String v = System.getenv(k);
    return v == null || v.isEmpty() ? d : v;
  }

  static Connection connect() throws SQLException {
    String url = "jdbc:postgresql://" + env("PGHOST", "127.0.0.1") + ":" + env("PGPORT", "5432") + "/" + env("PGDATABASE", "postgres");
    Properties p = new Properties();
    p.setProperty("user", env("PGUSER", "postgres"));
    String pw = System.getenv("PGPASSWORD");
    if (pw != null && !pw.isEmpty()) p.setProperty("password", pw);
    p.setProperty("connectTimeout", "20");
    // Seconds a read may take: a hung session fails its step, not the whole run.
    p.setProperty("socketTimeout", "15");
    return DriverManager.getConnection(url, p);
  }

  static Map<String, Object> map() {
    return new TreeMap<>();
  }

  static Map<String, Object> errorOf(Throwable e) {
    Map<String, Object> m = map();
    m.put("error", e.getClass().getSimpleName());
    m.put("sqlstate", e instanceof SQLException ? ((SQLException) e).getSQLState() : null);
    String msg = String.valueOf(e.getMessage());
    m.put("message", msg.split("\n")[0]);
    return m;
  }

  /** count, sum of the first column, sha256 of "a,b" lines. */
  static final class Checksum {
    final MessageDigest md;
    long count;
    long sum;

    Checksum() throws Exception {
      md = MessageDigest.getInstance("SHA-256");
    }

    void add(long a, String b) {
      md.update((a + "," + b + "\n").getBytes(StandardCharsets.UTF_8));
      count++;
      sum += a;
    }

    Map<String, Object> result() {
      Map<String, Object> m = map();
      m.put("count", count);
      m.put("sum", sum);
      m.put("sha256", HexFormat.of().formatHex(md.digest()));
      return m;
    }
  }

  static Object stepConnect(Connection c) throws Exception {
    try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("select current_user, 1 + 1, current_setting('server_encoding')")) {
      r.next();
      Map<String, Object> m = map();
      m.put("user", r.getString(1));
      m.put("two", r.getInt(2));
      m.put("encoding", r.getString(3));
      return m;
    }
  }

  static Object stepPrepared(Connection c) throws Exception {
    List<Object> rows = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement("select ?::int + ?::int, ?::text || '!'")) {
      for (int i = 0; i < 12; i++) {
        ps.setInt(1, i);
        ps.setInt(2, i * 2);
        ps.setString(3, "v" + i);
        try (ResultSet r = ps.executeQuery()) {
          r.next();
          rows.add(List.of(r.getInt(1), r.getString(2)));
        }
      }
      Map<String, Object> m = map();
      m.put("rows", rows);
      m.put("serverPrepared", ps.unwrap(org.postgresql.PGStatement.class).isUseServerPrepare());
      return m;
    }
  }

  static Object stepTypes(Connection c) throws Exception {
    try (PreparedStatement ps = c.prepareStatement("select ?::numeric, ?::bytea, ?::int[], ?::jsonb, ?::date, ?::bool, ?::text, ?::float8, null::int")) {
      ps.setBigDecimal(1, new BigDecimal("12345.678"));
      ps.setBytes(2, new byte[] {0, 1, (byte) 0xff});
      ps.setArray(3, c.createArrayOf("int4", new Integer[] {1, 2, 3}));
      ps.setString(4, "{\"a\": [1, \"x\"]}");
      ps.setDate(5, java.sql.Date.valueOf("2024-02-29"));
      ps.setBoolean(6, true);
      ps.setString(7, "h\u00e9llo");
      ps.setDouble(8, 1.5);
      try (ResultSet r = ps.executeQuery()) {
        r.next();
        List<Object> out = new ArrayList<>();
        out.add(r.getBigDecimal(1).toPlainString());
        out.add(HexFormat.of().formatHex(r.getBytes(2)));
        Array a = r.getArray(3);
        List<Object> ints = new ArrayList<>();
        for (Integer x : (Integer[]) a.getArray()) ints.add(x);
        out.add(ints);
        out.add(r.getString(4));
        out.add(r.getDate(5).toString());
        out.add(r.getBoolean(6));
        out.add(r.getString(7));
        out.add(r.getDouble(8));
        r.getInt(9);
        out.add(r.wasNull() ? null : "not null");
        return out;
      }
    }
  }

  static Object stepErrors(Connection c) throws Exception {
    Map<String, Object> out = map();
    try (Statement s = c.createStatement(); PreparedStatement div = c.prepareStatement("select 1 / ?::int")) {
      div.setInt(1, 0);
      try {
        div.executeQuery().close();
      } catch (SQLException e) {
        out.put("autocommitError", e.getSQLState());
      }
      try (ResultSet r = s.executeQuery("select 'after autocommit error'")) {
        r.next();
        out.put("afterAutocommit", r.getString(1));
      }
      c.setAutoCommit(false);
      try {
        s.execute("create table " + t("uv") + " (id int primary key)");
        s.execute("insert into " + t("uv") + " values (1)");
        try (PreparedStatement ins = c.prepareStatement("insert into " + t("uv") + " values (?)")) {
          ins.setInt(1, 1);
          ins.executeUpdate();
        } catch (SQLException e) {
          out.put("uniqueViolation", e.getSQLState());
        }
        try {
          s.executeQuery("select 1").close();
        } catch (SQLException e) {
          out.put("inFailedTransaction", e.getSQLState());
        }
        c.rollback();
        try (PreparedStatement q = c.prepareStatement("select to_regclass(?) is null")) {
          q.setString(1, t("uv"));
          try (ResultSet r = q.executeQuery()) {
            r.next();
            out.put("tableGoneAfterRollback", r.getBoolean(1));
          }
        }
        c.commit();
        // Division by zero in a transaction, with a savepoint rolled back to first.
        s.execute("create table " + t("sp") + " (v int)");
        s.execute("insert into " + t("sp") + " values (1)");
        java.sql.Savepoint sp = c.setSavepoint("before_div");
        try {
          s.executeQuery("select 1 / 0").close();
        } catch (SQLException e) {
          out.put("divisionByZeroInTransaction", e.getSQLState());
        }
        c.rollback(sp);
        try (ResultSet r = s.executeQuery("select count(*) from " + t("sp"))) {
          r.next();
          out.put("rowsAfterSavepointRollback", r.getLong(1));
        }
        c.rollback();
      } finally {
        c.setAutoCommit(true);
      }
      try (ResultSet r = s.executeQuery("select 40 + 2")) {
        r.next();
        out.put("afterRollback", r.getInt(1));
      }
    }
    return out;
  }

  static Object stepBatch(Connection c) throws Exception {
    // executeBatch: the inserts go out as one pipeline (Parse/Bind/Execute ..., one Sync).
    Map<String, Object> out = map();
    c.setAutoCommit(false);
    try (Statement s = c.createStatement()) {
      s.execute("create table " + t("b") + " (id int primary key, v text)");
      try (PreparedStatement ps = c.prepareStatement("insert into " + t("b") + " values (?, ?)")) {
        for (int i = 0; i < 200; i++) {
          ps.setInt(1, i);
          ps.setString(2, "b" + i);
          ps.addBatch();
        }
        int[] counts = ps.executeBatch();
        long n = 0;
        for (int x : counts) n += x;
        out.put("batchUpdated", n);
      }
      try (ResultSet r = s.executeQuery("select count(*), sum(id) from " + t("b"))) {
        r.next();
        out.put("table", List.of(r.getLong(1), r.getLong(2)));
      }
      // A batch that fails in the middle: BatchUpdateException with the first error's SQLSTATE.
      try (PreparedStatement ps = c.prepareStatement("insert into " + t("b") + " values (?, ?)")) {
        for (int i = 198; i < 203; i++) {
          ps.setInt(1, i);
          ps.setString(2, "dup" + i);
          ps.addBatch();
        }
        ps.executeBatch();
      } catch (SQLException e) {
        out.put("batchError", e.getSQLState());
      }
      c.rollback();
    } finally {
      c.setAutoCommit(true);
    }
    return out;
  }

  static Object stepCopy(Connection c) throws Exception {
    Map<String, Object> out = map();
    CopyManager cm = c.unwrap(PGConnection.class).getCopyAPI();
    c.setAutoCommit(false);
    try (Statement s = c.createStatement()) {
      s.execute("create table " + t("cp") + " (id int, name text)");
      StringBuilder sb = new StringBuilder();
      for (int i = 1; i <= 2000; i++) sb.append(i).append("\tname ").append(i).append("\\ttab\n");
      out.put("copiedIn", cm.copyIn("copy " + t("cp") + " (id, name) from stdin", new ByteArrayInputStream(sb.toString().getBytes(StandardCharsets.UTF_8))));
      try (ResultSet r = s.executeQuery("select count(*), sum(id), md5(string_agg(name, ',' order by id)) from " + t("cp"))) {
        r.next();
        Map<String, Object> t = map();
        t.put("count", r.getLong(1));
        t.put("sum", r.getLong(2));
        t.put("md5", r.getString(3));
        out.put("table", t);
      }
      ByteArrayOutputStream sink = new ByteArrayOutputStream();
      long n = cm.copyOut("copy (select id, name from " + t("cp") + " order by id) to stdout with csv", sink);
      Map<String, Object> o = map();
      o.put("rowcount", n);
      o.put("sha256", HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(sink.toByteArray())));
      out.put("copiedOut", o);
      s.execute("drop table " + t("cp"));
      c.commit();
      s.execute("create table " + t("cpbad") + " (id int)");
      try {
        cm.copyIn("copy " + t("cpbad") + " from stdin", new ByteArrayInputStream("1\nnot a number\n".getBytes(StandardCharsets.UTF_8)));
      } catch (SQLException e) {
        out.put("badCopy", e.getSQLState());
      }
      c.rollback();
    } finally {
      c.setAutoCommit(true);
    }
    try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("select 'ok'")) {
      r.next();
      out.put("afterBadCopy", r.getString(1));
    }
    return out;
  }

  static Object stepLarge(Connection c) throws Exception {
    try (PreparedStatement ps = c.prepareStatement("select i, md5(i::text) from generate_series(1, ?) i")) {
      ps.setInt(1, LARGE_ROWS);
      Checksum ck = new Checksum();
      try (ResultSet r = ps.executeQuery()) {
        while (r.next()) ck.add(r.getLong(1), r.getString(2));
      }
      return ck.result();
    }
  }

  static Object stepCursor(Connection c) throws Exception {
    // setFetchSize with autocommit off: a portal, Execute(1000) + Sync per batch.
    c.setAutoCommit(false);
    try (PreparedStatement ps = c.prepareStatement("select i, repeat('x', mod(i, 7)) from generate_series(1, ?) i")) {
      ps.setFetchSize(1000);
      ps.setInt(1, 10000);
      Checksum ck = new Checksum();
      try (ResultSet r = ps.executeQuery()) {
        while (r.next()) ck.add(r.getLong(1), r.getString(2));
      }
      c.commit();
      return ck.result();
    } finally {
      c.setAutoCommit(true);
    }
  }

  static Object stepTempTable(Connection c) throws Exception {
    // Last on this connection: a temp table (transaction pooling pins the backend after it).
    Map<String, Object> out = map();
    c.setAutoCommit(false);
    try (Statement s = c.createStatement()) {
      s.execute("create temp table tt_" + tag + " (v int) on commit drop");
      s.execute("insert into tt_" + tag + " values (1), (2), (3)");
      try (ResultSet r = s.executeQuery("select sum(v)::int from tt_" + tag)) {
        r.next();
        out.put("sum", r.getInt(1));
      }
      c.commit();
    } finally {
      c.setAutoCommit(true);
    }
    try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("select 'after temp table'")) {
      r.next();
      out.put("after", r.getString(1));
    }
    return out;
  }

  static Object stepConcurrent() throws Exception {
    AtomicLong sum = new AtomicLong();
    AtomicLong ok = new AtomicLong();
    List<String> errors = Collections.synchronizedList(new ArrayList<>());
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < CONCURRENT; i++) {
      final int w = i;
      Thread t = new Thread(() -> {
        try (Connection c = connect()) {
          long total = 0;
          try (PreparedStatement ps = c.prepareStatement("select ?::int * ?::int")) {
            for (int k = 0; k < 6; k++) {
              ps.setInt(1, w);
              ps.setInt(2, k);
              try (ResultSet r = ps.executeQuery()) {
                r.next();
                total += r.getLong(1);
              }
            }
          }
          c.setAutoCommit(false);
          try (PreparedStatement a = c.prepareStatement("select ?::int"); PreparedStatement b = c.prepareStatement("select coalesce(sum(g), 0)::int from generate_series(1, ?) g")) {
            a.setInt(1, w);
            try (ResultSet r = a.executeQuery()) {
              r.next();
              total += r.getLong(1);
            }
            b.setInt(1, w);
            try (ResultSet r = b.executeQuery()) {
              r.next();
              total += r.getLong(1);
            }
          }
          c.commit();
          sum.addAndGet(total);
          ok.incrementAndGet();
        } catch (Exception e) {
          errors.add(e.getClass().getSimpleName() + ":" + (e instanceof SQLException ? ((SQLException) e).getSQLState() : null));
        }
      });
      threads.add(t);
      t.start();
    }
    for (Thread t : threads) t.join();
    Collections.sort(errors);
    Map<String, Object> m = map();
    m.put("sessions", CONCURRENT);
    m.put("ok", ok.get());
    m.put("sum", sum.get());
    m.put("errors", new ArrayList<>(errors));
    return m;
  }

  // ---- JSON out (keys sorted: the maps are TreeMaps) ----
  static void json(StringBuilder sb, Object v) {
    if (v == null) sb.append("null");
    else if (v instanceof String) str(sb, (String) v);
    else if (v instanceof Boolean || v instanceof Integer || v instanceof Long) sb.append(v);
    else if (v instanceof Double) {
      double d = (Double) v;
      sb.append(d == Math.rint(d) && Math.abs(d) < 1e15 ? String.valueOf((long) d) + ".0" : String.valueOf(d));
    } else if (v instanceof Map) {
      sb.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
        if (!first) sb.append(", ");
        first = false;
        str(sb, String.valueOf(e.getKey()));
        sb.append(": ");
        json(sb, e.getValue());
      }
      sb.append('}');
    } else if (v instanceof List) {
      sb.append('[');
      boolean first = true;
      for (Object x : (List<?>) v) {
        if (!first) sb.append(", ");
        first = false;
        json(sb, x);
      }
      sb.append(']');
    } else str(sb, String.valueOf(v));
  }

  static void str(StringBuilder sb, String s) {
    sb.append('"');
    for (char ch : s.toCharArray()) {
      if (ch == '"' || ch == '\\') sb.append('\\').append(ch);
      else if (ch < 0x20 || ch > 0x7e) sb.append(String.format("\\u%04x", (int) ch));
      else sb.append(ch);
    }
    sb.append('"');
  }

  public static void main(String[] args) throws Exception {
    if (args.length > 0) tag = args[0];
    if (args.length > 1) schema = args[1];
    Map<String, Object> result = map();
    result.put("driver", "pgjdbc");
    result.put("version", org.postgresql.Driver.class.getPackage().getImplementationVersion());
    Map<String, Step> steps = new java.util.LinkedHashMap<>();
    steps.put("connect", Pgjdbc::stepConnect);
    steps.put("prepared", Pgjdbc::stepPrepared);
    steps.put("types", Pgjdbc::stepTypes);
    steps.put("errors", Pgjdbc::stepErrors);
    steps.put("batch", Pgjdbc::stepBatch);
    steps.put("copy", Pgjdbc::stepCopy);
    steps.put("large", Pgjdbc::stepLarge);
    steps.put("cursor", Pgjdbc::stepCursor);
    steps.put("tempTable", Pgjdbc::stepTempTable);
    Connection c = null;
    for (Map.Entry<String, Step> step : steps.entrySet()) {
      try {
        if (c == null || c.isClosed()) c = connect();
        result.put(step.getKey(), step.getValue().run(c));
      } catch (Exception e) {
        result.put(step.getKey(), errorOf(e));
        try {
          if (!c.getAutoCommit()) c.rollback();
          c.setAutoCommit(true);
        } catch (Exception ignored) {
          c = null;
        }
      }
    }
    if (c != null) c.close();
    try {
      result.put("concurrent", stepConcurrent());
    } catch (Exception e) {
      result.put("concurrent", errorOf(e));
    }
    StringBuilder sb = new StringBuilder();
    json(sb, result);
    System.out.println(sb);
  }
}
