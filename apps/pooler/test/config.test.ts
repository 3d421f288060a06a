// Config validation through the CLI: each broken file fails with exit 2 and a message naming the
// file and the key; flags and environment override the file; `cert` writes a usable certificate.
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_KEYS } from '../src/config/load.js';
import { USER_KEYS } from '../src/config/schema.js';
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
  });
});
