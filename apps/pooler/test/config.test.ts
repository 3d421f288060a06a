// Config validation through the CLI: each broken file fails with exit 2 and a message naming the
// file and the key; flags and environment override the file; `cert` writes a usable certificate.
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_KEYS } from '../src/config/load.js';
import { configReference } from '../src/config/reference.js';
import { DATABASE_KEYS, USER_KEYS } from '../src/config/schema.js';
import { freePort } from '@quicpool/pg-fixture';
import { runCli } from './daemon.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'quicpool-config-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function check(name: string, toml: string, env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string; file: string }> {
  const file = join(dir, name);
  await writeFile(file, toml);
  return { ...(await runCli(['check-config', file], env)), file };
}

describe('quicpool check-config', () => {
  it('accepts a complete valid file', async () => {
    const r = await check(
      'ok.toml',
      `[upstream]\nhost = "127.0.0.1"\nport = 5432\n[pool]\nmode = "session"\nsize = 5\n[users.app]\npassword = "pw"\n[admin]\nusers = ["app"]\n`,
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/OK \(upstream 127\.0\.0\.1:5432, 1 user\(s\)\)/);
  });

  const cases: readonly (readonly [string, string, RegExp])[] = [
    ['unknown key', '[pool]\nsize = 5\npool_sizee = 3\n', /pool\.pool_sizee: unknown key/],
    ['unknown section', '[pooler]\nsize = 5\n', /pooler: unknown section/],
    ['wrong type', '[pool]\nsize = "ten"\n', /pool\.size: expected a whole number, got string "ten"/],
    ['bad enum', '[pool]\nmode = "statement"\n', /pool\.mode: expected one of "transaction", "session"/],
    ['bad port', '[listen]\nport = 70000\n', /listen\.port: expected a port number \(0-65535\), got number 70000/],
    ['negative port', '[upstream]\nport = -1\n', /upstream\.port: expected a port number/],
    ['missing certificate file', '[tls]\ncert_file = "nope.pem"\nkey_file = "nope.key"\n', /tls\.cert_file: file not found: .*nope\.pem/],
    ['unknown user key', '[users.app]\npasswd = "x"\n', /users\.app\.passwd: unknown key/],
    ['invalid TOML', '[pool\nsize = 1\n', /line 1: invalid TOML/],
    ['a cert user without a certificate map', '[users.app]\nauth = "cert"\n', /users\.app: cert needs the certificates .*cert_common_names or cert_fingerprints/],
    ['a cert fingerprint that is not one', '[users.app]\nauth = "cert"\ncert_fingerprints = ["AB:CD"]\n', /users\.app\.cert_fingerprints: "AB:CD" is not a SHA-256 fingerprint/],
    ['a certificate map that is not a list', '[users.app]\nauth = "cert"\ncert_common_names = "agent-1"\n', /users\.app\.cert_common_names: expected an array of strings/],
    ['min_size above size', '[pool]\nsize = 2\nmin_size = 5\n', /pool\.min_size: must not exceed poolSize \(2\), got 5/],
  ];
  for (const [what, toml, message] of cases) {
    it(`refuses ${what}, naming the file and the key`, async () => {
      const r = await check(`${what.replace(/\s/g, '-')}.toml`, toml);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(r.file);
      expect(r.stderr).toMatch(message);
    });
  }

  it('reads pool.session_state_policy and [databases.NAME] session_state_policy, refusing values that are not a policy', async () => {
    const ok = await check('policy.toml', `[upstream]\nhost = "127.0.0.1"\n[pool]\nsession_state_policy = "reset"\n[databases.reports]\nsession_state_policy = "reject"\n`);
    expect(ok.code).toBe(0);
    const bad = await check('policy-bad.toml', `[databases.reports]\nsession_state_policy = "sometimes"\n`);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(`${bad.file}: databases.reports.session_state_policy: expected one of "pin", "reject", "reset"`);
    const unknown = await check('db-unknown.toml', `[databases.reports]\npool_size = 3\n`);
    expect(unknown.stderr).toContain('databases.reports.pool_size: unknown key (expected one of session_state_policy, target_session_attrs)');
  });

  it('reads upstream.hosts and target_session_attrs (also per database), refusing what does not make sense', async () => {
    const ok = await check(
      'hosts.toml',
      `[upstream]
hosts = ["db-a:5432", "[::1]:5433", "db-c", "/var/run/postgresql"]
target_session_attrs = "primary"
outage_wait_ms = 5000
[databases.reports]
target_session_attrs = "prefer-standby"
`,
    );
    expect([ok.code, ok.stderr]).toEqual([0, '']);
    expect(ok.stdout).toContain('OK (upstream db-a:5432, [::1]:5433, db-c, /var/run/postgresql, 0 user(s))');
    const both = await check('hosts-both.toml', `[upstream]
host = "db-a"
hosts = ["db-b"]
`);
    expect(both.stderr).toContain(`${both.file}: upstream.hosts: set together with upstream.host`);
    const port = await check('hosts-port.toml', `[upstream]
hosts = ["db-a:99999"]
`);
    expect(port.stderr).toContain('upstream.hosts: entry 1 "db-a:99999": port "99999" is not 1-65535');
    const attrs = await check('attrs.toml', `[upstream]
host = "db-a"
target_session_attrs = "master"
`);
    expect(attrs.stderr).toContain('upstream.target_session_attrs: expected one of "read-write", "any", "read-only", "primary", "standby", "prefer-standby"');
  });

  it('reads auth_query mode ([auth] auth_user, auth_query ...) and checks that auth_user is a configured user', async () => {
    const ok = await check('aq.toml', `[upstream]\nhost = "127.0.0.1"\n[auth]\nauth_user = "pooler"\nauth_cache_ttl_ms = 5000\n[users.pooler]\npassword = "pw"\n`);
    expect([ok.code, ok.stderr]).toEqual([0, '']);
    const bad = await check('aq-bad.toml', `[upstream]\nhost = "127.0.0.1"\n[auth]\nauth_user = "nobody"\n`);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('auth.auth_user: "nobody" is not a configured user (the lookups log in as it, with its server password)');
    const noParam = await check('aq-query.toml', `[upstream]\nhost = "127.0.0.1"\n[auth]\nauth_user = "pooler"\nauth_query = "SELECT 1"\n[users.pooler]\npassword = "pw"\n`);
    expect(noParam.stderr).toContain('auth.auth_query: must take the user name as $1');
  });

  it('reads a separate users file and names it in errors', async () => {
    await writeFile(join(dir, 'users.toml'), '[users.app]\npassword = "pw"\n[users.ops]\nauth = "trust"\n');
    const ok = await check('with-users.toml', '[auth]\nusers_file = "users.toml"\n');
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/embedded PostgreSQL, 2 user\(s\)/);
    await writeFile(join(dir, 'bad-users.toml'), '[users.app]\npassword = 42\n');
    const bad = await check('with-bad-users.toml', '[auth]\nusers_file = "bad-users.toml"\n');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/bad-users\.toml: users\.app\.password: expected a string, got number 42/);
  });

  it('accepts a cert user mapped by CN and fingerprint', async () => {
    const r = await check('cert-user.toml', `[users.app]\nauth = "cert"\ncert_common_names = ["agent-1"]\ncert_fingerprints = ["${'ab'.repeat(32)}"]\n`);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });

  it('checks what the pooler engine checks (a user whose auth method has no secret)', async () => {
    const r = await check('md5-no-password.toml', '[users.app]\nauth = "md5"\n');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/md5-no-password\.toml: users\.app: md5 needs a plaintext password/);
  });

  it('prints help for every command', async () => {
    for (const command of ['start', 'check-config', 'cert']) {
      const r = await runCli([command, '--help']);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`quicpool ${command}`);
    }
    const none = await runCli([]);
    expect(none.code).toBe(2);
    expect(none.stdout).toMatch(/Exit codes: 0 stopped cleanly/);
  });

  it('checks environment overrides by key too', async () => {
    const r = await check('env.toml', '[pool]\nsize = 5\n', { QUICPOOL_POOL_SIZE: 'many' });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/environment QUICPOOL_POOL_SIZE: pool\.size: expected a whole number/);
  });

  it('refuses a bad flag value on start, naming the key', async () => {
    const r = await runCli(['start', '--port', '99999']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/command line: listen\.port: expected a port number/);
    const s = await runCli(['start', '--set', 'pool.nope=1']);
    expect(s.code).toBe(2);
    expect(s.stderr).toMatch(/pool\.nope: unknown key/);
  });

  it('checks the upstream at start: an unreachable server is a clear error (exit 1), not every client\'s 08001', async () => {
    const closed = await freePort(); // nothing listens there
    const state = join(dir, 'upstream-check');
    const r = await runCli(['start', '--state-dir', state, '--port', '0', '--quic-port', '0', '--metrics-port', '0', '--set', 'upstream.host=127.0.0.1', '--set', `upstream.port=${closed}`]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`quicpool: upstream.host/upstream.port: the PostgreSQL server is not reachable: cannot reach 127.0.0.1:${closed}: ECONNREFUSED`);
  });
});

describe('quicpool cert', () => {
  it('writes a CA and a server certificate for the given names', async () => {
    const out = join(dir, 'certs');
    const r = await runCli(['cert', '--out', out, '--name', 'db.example.test', '--name', '127.0.0.1']);
    expect(r.code).toBe(0);
    const cert = new X509Certificate(await readFile(join(out, 'server.pem')));
    const ca = new X509Certificate(await readFile(join(out, 'ca.pem')));
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(cert.subjectAltName).toContain('DNS:db.example.test');
    expect(r.stdout).toContain(`Fingerprint (SHA-256): ${cert.fingerprint256}`);
  });
});

describe('docs/config.md', () => {
  it('lists every key', async () => {
    const doc = await readFile(new URL('../../../docs/config.md', import.meta.url), 'utf8');
    for (const key of ALL_KEYS) expect(doc).toContain(`| \`${key}\` |`);
    for (const key of Object.keys(USER_KEYS)) expect(doc).toContain(`| \`users.NAME.${key}\` |`);
    for (const key of Object.keys(DATABASE_KEYS)) expect(doc).toContain(`| \`databases.NAME.${key}\` |`);
    // The Keys section is the generated reference, exactly (regenerate: quicpool config-reference).
    expect(doc.slice(doc.indexOf('## Keys\n\n') + '## Keys\n\n'.length)).toBe(configReference());
  });
});
