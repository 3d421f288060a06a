// Every key of quicpool.toml: type, default, meaning and whether RELOAD applies it live. The
// validator, the env/flag overrides, SHOW CONFIG and docs/config.md all come from this table.
import { CONNECT_KEYS } from './connect-schema.js';

export type KeyType = 'string' | 'int' | 'port' | 'bool' | 'string[]' | 'enum';

export interface KeySpec {
  readonly type: KeyType;
  readonly default: string | number | boolean | readonly string[] | null;
  readonly doc: string;
  /** RELOAD (SIGHUP) applies a change without a restart. */
  readonly live: boolean;
  readonly values?: readonly string[];
  /** Never printed (SHOW CONFIG, logs). */
  readonly secret?: boolean;
}

const k = (type: KeyType, def: KeySpec['default'], live: boolean, doc: string, values?: readonly string[]): KeySpec =>
  values === undefined ? { type, default: def, doc, live } : { type, default: def, doc, live, values };

/** section -> key -> spec. `users` is separate: a table of user tables. */
export const SCHEMA = {
  listen: {
    host: k('string', '127.0.0.1', false, 'Address the TCP and QUIC listeners bind ("0.0.0.0" for every interface).'),
    port: k('port', 6432, false, 'TCP port for Postgres clients (psql, pg, pgbench); SSLRequest upgrades to TLS when a certificate is configured.'),
    quic: k('bool', true, false, 'Serve Postgres sessions over QUIC streams (UDP).'),
    quic_port: k('port', 6432, false, 'UDP port of the QUIC listener.'),
    tls: k('bool', true, false, 'Answer SSLRequest on the TCP port with TLS (using [tls]); false answers N.'),
  },
  upstream: {
    host: k('string', null, false, 'The real PostgreSQL server: a host name or IP, or a directory holding its unix socket ("/var/run/postgresql": `<dir>/.s.PGSQL.<port>`, as libpq). Unset: quicpool starts the embedded PostgreSQL.'),
    port: k('port', 5432, false, 'Port of the real PostgreSQL server (for a socket directory, the number in the socket\'s name).'),
    hosts: k('string[]', [], false, 'Several servers instead of host and port, as libpq\'s host=a,b,c: "host", "host:port", "[v6addr]:port" or a socket directory; a host without a port uses upstream.port. Each login tries the host its pool used last, then the others in this order, for the first that target_session_attrs accepts (a failover is followed without DNS).'),
    target_session_attrs: k('enum', 'read-write', true, 'Which server a pool uses (libpq\'s names and meanings): "read-write" (not a standby, default_transaction_read_only off), "primary" (not a standby), "any", "read-only", "standby", "prefer-standby" (a standby if one answers, else any). Known from the server\'s in_hot_standby/default_transaction_read_only (PostgreSQL 14+) or one query at login (older). A server that changes role (a promoted standby) is left by pools it no longer suits. Per database: [databases.NAME].', ['read-write', 'any', 'read-only', 'primary', 'standby', 'prefer-standby']),
    outage_wait_ms: k('int', 60_000, true, 'While logins fail for a reason that passes (connection refused or reset, 57P03 starting up or shutting down, 53300 too many connections, no host of the wanted kind during a failover), clients that need a server connection wait up to this long (and at most pool.query_wait_timeout_ms) while the pool retries the login with backoff (10 ms doubling to 250 ms, with jitter); then they get the server\'s error. 0 = such errors reach clients at once. Wrong passwords, missing databases and login timeouts always do.'),
    connect_timeout_ms: k('int', 10_000, true, 'Server connect + login deadline (ms).'),
    tls: k('enum', 'disable', false, 'TLS to the server after SSLRequest (TCP only): "verify-full" (the certificate must chain to tls_ca_file, or the public roots, and carry the host name), "require" (encrypted, not verified: only against passive eavesdroppers), "disable". A server that refuses TLS is an error, never a silent fallback.', ['disable', 'require', 'verify-full']),
    tls_ca_file: k('string', null, false, 'CA certificates (PEM) the server\'s certificate must chain to. Unset: Node\'s bundled public roots.'),
    tls_server_name: k('string', null, false, 'Name the server\'s certificate must carry. Unset: upstream.host.'),
    tls_cert_file: k('string', null, false, 'Client certificate (PEM) for servers that ask for one (clientcert in pg_hba.conf).'),
    tls_key_file: k('string', null, false, 'Private key (PEM) of tls_cert_file.'),
  },
  embedded: {
    state_dir: k('string', '.quicpool', false, 'Folder of the embedded PostgreSQL data, its credentials and the development certificate (relative to the working directory).'),
    port: k('port', 54329, false, 'Port of the embedded PostgreSQL on its first start (kept afterwards).'),
  },
  tls: {
    cert_file: k('string', null, false, 'Server certificate chain (PEM) for TLS and QUIC. Unset: a development CA and certificate are generated in the state folder.'),
    key_file: k('string', null, false, 'Private key (PEM) of cert_file.'),
    server_names: k('string[]', ['localhost', '127.0.0.1', '::1'], false, 'Names in the generated development certificate (QUIC clients verify a DNS name).'),
    client_ca_file: k('string', null, false, 'CA certificates (PEM) that client certificates must chain to, for users with auth = "cert". Set: QUIC and TLS clients are asked for a certificate; on QUIC one that does not verify fails the handshake, on TLS over TCP it is ignored (the session then has none); clients without one connect as before (password users are unaffected). Unset: no client certificates.'),
  },
  quic: {
    alpn: k('string[]', ['pgsql/3'], false, 'ALPN protocols accepted on QUIC.'),
    idle_timeout_ms: k('int', 30_000, false, 'QUIC connection idle timeout (ms; 0 = none).'),
    max_streams_per_connection: k('int', 1000, false, 'Concurrent sessions (bidirectional streams) per QUIC connection.'),
    max_connections: k('int', 10_000, false, 'QUIC connections accepted at once.'),
    early_data: k('enum', 'accept', false, 'Sessions that begin in 0-RTT early data (replayable): "accept" (startup and login run at once, nothing reaches PostgreSQL before the handshake is confirmed), "read-only" (as accept, and single read-only simple queries - SELECT, WITH, VALUES, TABLE, SHOW - run before confirmation inside a READ ONLY transaction the pooler opens: first row in one round trip; see docs/security.md for what a replay can still cause), "defer" (early streams are handed to the pooler only once the handshake is confirmed).', ['accept', 'read-only', 'defer']),
  },
  pool: {
    mode: k('enum', 'transaction', true, 'When a client gets a server connection: per transaction or for its whole session.', ['transaction', 'session']),
    size: k('int', 20, true, 'Server connections per (database, user) pool, for the whole daemon (its workers share them: one whose clients wait gets connections another holds idle, and busy ones are shared out as transactions end).'),
    min_size: k('int', 0, true, 'Server connections kept open once the pool exists (in the whole daemon).'),
    query_wait_timeout_ms: k('int', 120_000, true, 'Longest wait for a server connection (ms; 0 = forever), then 57014.'),
    server_idle_timeout_ms: k('int', 600_000, true, 'Idle server connections closed after (ms; 0 = never).'),
    server_lifetime_ms: k('int', 3_600_000, true, 'Server connections closed on release after (ms; 0 = never).'),
    server_reset_query: k('string', 'DISCARD ALL', true, 'Run before reuse in session mode and after session-state changes.'),
    server_check_delay_ms: k('int', 30_000, true, 'Idle longer than this: health check before reuse (ms; 0 = always).'),
    server_check_query: k('string', '', true, 'The health check ("" = the empty query).'),
    max_logins_in_progress: k('int', 1, true, 'Server logins under way at once per pool (per worker); a client that needs another connection meanwhile waits for one to open or to come free. 1, as PgBouncer: a burst of clients opens connections one after another while those already open serve them, instead of PostgreSQL starting many backends at once. Raise it when a login to the upstream takes long (a far server).'),
    client_idle_timeout_ms: k('int', 0, true, 'Client with no request in flight closed after (ms; 0 = off), 57P05.'),
    idle_transaction_timeout_ms: k('int', 0, true, 'Client idle inside a transaction closed after (ms; 0 = off), 25P03.'),
    query_timeout_ms: k('int', 0, true, 'Request unanswered after this closes client and server connection (ms; 0 = off).'),
    session_state_policy: k('enum', 'pin', true, 'Transaction pooling, a statement that leaves state in the server session (SET of an untracked setting, SQL PREPARE, LISTEN, LOAD, session advisory locks, set_config(), temp tables, WITH HOLD cursors): "pin" keeps that server connection for the client until it disconnects (safe; SHOW CLIENTS `pinned` and the metric quicpool_clients_pinned say so), "reject" answers the statement with ERROR 0A000, "reset" runs it and resets the connection (server_reset_query) when the transaction ends: the client silently loses the state. New sessions get a RELOADed value. Per database: [databases.NAME].', ['pin', 'reject', 'reset']),
  },
  workers: {
    count: k('int', 0, false, 'Worker threads, each with its own event loop, pools, listeners and timers, all on the same TCP and UDP port (SO_REUSEPORT; QUIC datagrams steered to their connection\'s worker by connection id). 0 = one per core (os.availableParallelism()); 1 = everything in the main thread. Limits, the server budget (pool.size, limits.max_server_connections), cancels, the admin console and /metrics hold for the whole daemon. Without the native UDP module quicpool runs one worker and logs why.'),
  },
  limits: {
    max_client_connections: k('int', 10_000, true, 'Client sessions over all pools; the next gets 53300.'),
    max_server_connections: k('int', 0, true, 'Server connections over all pools and workers (PgBouncer\'s max_db_connections, for every database together); a pool that would go past it waits, and idle server connections of other pools are closed to make room. 0 = no limit.'),
    max_clients_per_pool: k('int', 0, true, 'Client sessions per (database, user); 0 = no limit.'),
    max_message_size: k('int', 64 * 1024 * 1024, true, 'Largest client message (bytes).'),
    auth_timeout_ms: k('int', 60_000, true, 'Startup + authentication deadline (ms).'),
    auth_failure_delay_ms: k('int', 500, true, 'A failed password login (wrong password or unknown user) is answered 28P01 only after this delay (ms; 0 = at once); the session keeps its client slot meanwhile.'),
    allow_insecure_password_auth: k('bool', false, true, 'Allow md5/password auth on unencrypted TCP.'),
    ignore_startup_parameters: k('string[]', ['extra_float_digits'], true, 'Startup parameters accepted and ignored (also names inside `options`). statement_timeout, lock_timeout, idle_in_transaction_session_timeout, default_transaction_isolation, default_transaction_read_only, search_path, application_name and the reported ones (TimeZone, DateStyle ...) are kept per client and applied to every server connection it gets, also from `options` (-c name=value, --name=value); any other parameter is refused (0A000) unless listed here. The pooler SETs these on a server connection under the statement_timeout the previous client left there: a value of a few milliseconds can cancel that SET, and the next client then fails with 57014.'),
  },
  auth: {
    users_file: k('string', null, true, 'A separate TOML file with [users.NAME] tables (merged over [users]; keeps secrets out of the main file).'),
    auth_user: k('string', null, false, 'auth_query mode (PgBouncer\'s auth_user): a user not in [users] is looked up on the server with auth_query, over one connection logged in as this user, which must be a [users.NAME] with its server password (a superuser, or any role allowed to run auth_query). The user found logs in with SCRAM against its server secret and the pooler logs in to the server with the keys of the client\'s proof: no secret or password is copied into the config. Unset: off.'),
    auth_query: k('string', 'SELECT usename, passwd FROM pg_shadow WHERE usename=$1', true, 'The lookup: takes the user name as $1 and returns (name, SCRAM-SHA-256 secret); the first row counts, none means no such user. pg_shadow needs a superuser: else a SECURITY DEFINER function that returns the two columns.'),
    auth_dbname: k('string', 'postgres', false, 'The database the auth_query connection logs in to.'),
    auth_cache_size: k('int', 1000, true, 'Names whose lookup result (found or not) is remembered; the oldest goes first.'),
    auth_cache_ttl_ms: k('int', 60_000, true, 'How long a lookup result is remembered (ms): a changed or new password on the server counts after this at the latest. A failed lookup (server down) is retried after 1 s.'),
  },
  admin: {
    database: k('string', 'quicpool', false, 'Name of the admin console database: psql -p 6432 quicpool.'),
    users: k('string[]', [], true, 'Users allowed into the admin console (the embedded default adds its own user).'),
    pause_timeout_ms: k('int', 30_000, true, 'Longest PAUSE waits for running transactions (ms).'),
  },
  metrics: {
    enabled: k('bool', true, false, 'Serve Prometheus metrics over HTTP.'),
    host: k('string', '127.0.0.1', false, 'Address of the metrics endpoint.'),
    port: k('port', 9432, false, 'Port of the metrics endpoint (GET /metrics).'),
  },
  log: {
    level: k('enum', 'info', true, 'Log level.', ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']),
    format: k('enum', 'auto', false, '"json" (pino), "pretty" (one readable line per event), "auto" (pretty on a terminal, else json).', ['auto', 'json', 'pretty']),
  },
  shutdown: {
    drain_timeout_ms: k('int', 30_000, false, 'SIGTERM/SIGINT: longest graceful drain before the rest is closed (ms).'),
  },
  /** `quicpool connect` (the local agent); ignored by `quicpool start`. */
  connect: CONNECT_KEYS,
} as const satisfies Record<string, Record<string, KeySpec>>;

export type Section = keyof typeof SCHEMA;

export const USER_KEYS = {
  password: { type: 'string', default: null, doc: 'Plaintext password: every auth method, and the server login.', live: true, secret: true },
  scram_secret: { type: 'string', default: null, doc: 'A Postgres SCRAM-SHA-256 secret (pg_authid.rolpassword) instead of password. Without server_password the pooler logs in to the server with the keys of the client\'s SCRAM proof, which works when this is the server\'s own secret for the user.', live: true, secret: true },
  auth: { type: 'enum', default: 'scram-sha-256', doc: 'Client auth method. "cert": the session\'s QUIC or TLS connection presented a client certificate that verified against tls.client_ca_file and is listed in cert_common_names or cert_fingerprints; no password (anything else: FATAL 28000).', live: true, values: ['scram-sha-256', 'md5', 'password', 'trust', 'cert'] },
  server_password: { type: 'string', default: null, doc: 'Password for the server login (default: password; without either, the keys of the client\'s SCRAM proof). When the server refuses it the client gets 08004 "pooler could not log in to the server as ..." (never 28P01, which means its own password was wrong) and the log says why.', live: true, secret: true },
  cert_common_names: { type: 'string[]', default: [], doc: 'auth = "cert": subject common names (CN) of the client certificates that may log in as this user.', live: true },
  cert_fingerprints: { type: 'string[]', default: [], doc: 'auth = "cert": SHA-256 fingerprints of client certificates that may log in as this user ("AB:CD:..." as openssl x509 -fingerprint -sha256 prints it; colons and case optional).', live: true },
} as const satisfies Record<string, KeySpec>;

export type UserKey = keyof typeof USER_KEYS;

/** Keys of a [databases.NAME] table: that database's own value of the [pool] key of the same name. */
export const DATABASE_KEYS = {
  session_state_policy: { type: 'enum', default: null, doc: 'This database\'s pool.session_state_policy (unset: pool.session_state_policy).', live: true, values: ['pin', 'reject', 'reset'] },
  target_session_attrs: { type: 'enum', default: null, doc: 'This database\'s upstream.target_session_attrs (unset: upstream.target_session_attrs).', live: true, values: ['read-write', 'any', 'read-only', 'primary', 'standby', 'prefer-standby'] },
} as const satisfies Record<string, KeySpec>;

export type DatabaseKey = keyof typeof DATABASE_KEYS;
