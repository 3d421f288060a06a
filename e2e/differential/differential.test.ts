// The differential test: every scripted session of scripts.ts runs straight against Postgres and
// through the pooler (session mode, and transaction mode where the behaviour is defined the
// same), over TCP and over QUIC, and what the client receives must match message by message:
// type, SQLSTATE and severity, tags, rows, transaction status, order, and the close. Only the
// differences in differences.ts (documented in docs/compatibility.md) are allowed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownDifference } from './differences.js';
import { scripts, setupSql, teardownSql } from './scripts.js';
import type { Script } from './scripts.js';
import { Admin, directTarget, ScriptContext, startPoolerTargets } from './targets.js';
import type { PoolerTargets, Target } from './targets.js';

let admin: Admin;
let poolers: PoolerTargets;

beforeAll(async () => {
  admin = await Admin.connect();
  await admin.run(setupSql());
  poolers = await startPoolerTargets();
});
afterAll(async () => {
  await poolers?.close();
  await admin?.run(teardownSql());
  await admin?.end();
});

async function transcript(script: Script, target: Target): Promise<Record<string, string[]>> {
  const ctx = new ScriptContext(target, admin);
  try {
    await script.run(ctx);
    return await ctx.finish();
  } catch (e) {
    ctx.destroyAll();
    throw new Error(`${script.name} on ${target.name}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

describe('differential: the pooler answers as Postgres does', () => {
  for (const script of scripts) {
    it(script.name, async () => {
      const direct = await transcript(script, directTarget);
      for (const target of poolers.targets) {
        if (target.mode === 'direct' || !script.modes.includes(target.mode)) continue;
        const got = await transcript(script, target);
        const known = knownDifference(script.name, target.mode);
        if (known === undefined) expect(got, `${target.name}: ${script.name}`).toEqual(direct);
        else expect(got, `${target.name}: listed as a known difference (${known.note}) but it no longer shows`).not.toEqual(direct);
      }
    });
  }
});
