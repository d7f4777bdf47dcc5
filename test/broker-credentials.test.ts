/**
 * Agent broker credentials: the embedded broker checks the `$7$` hashes it now stores and
 * the salted SHA-256 ones stored before them; `tps broker emqx` hands the same hashes to
 * EMQX; `tps broker` says what is missing. (Mosquitto itself: mosquitto-acl.test.ts.)
 */
import { pbkdf2Sync } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashGeneratedSecret } from '../cloud/accounts/secrets.js';
import { newSecret } from '../cloud/ids.js';
import { agentClientId } from '../protocol/index.js';
import { runTpsToEnd } from './support/e2e-parts.js';
import { post, startTestRelay, tempDataDir, type TestRelay } from './support/relay.js';

let relay: TestRelay;
beforeAll(async () => {
  relay = await startTestRelay();
});
afterAll(async () => {
  await relay.close();
});

async function registerAgent(): Promise<{ id: string; secret: string }> {
  const res = await post(relay.baseUrl, 'v1', '/terminal/create', {}, relay.account);
  expect(res.status).toBe(200);
  return { id: res.body.terminal_id, secret: res.body.agent.password };
}

async function signIn(username: string, password: string): Promise<void> {
  const client = await mqtt.connectAsync(relay.brokerUrl, {
    username,
    password,
    // The embedded broker takes an agent's credential under its own client id only.
    clientId: agentClientId(username),
    reconnectPeriod: 0,
    connectTimeout: 5000,
  });
  await client.endAsync();
}

describe('agent broker credentials', () => {
  it('are stored in Mosquitto’s $7$ format, which the embedded broker checks', async () => {
    const agent = await registerAgent();
    expect(await relay.store.findAgentCredential(agent.id)).toMatch(/^\$7\$101\$/);
    await expect(signIn(agent.id, agent.secret)).resolves.toBeUndefined();
    await expect(signIn(agent.id, `${agent.secret}x`)).rejects.toThrow(/Bad username or password/);
  });

  it('stored before the $7$ format (salted SHA-256), still let their agents in', async () => {
    const agent = await registerAgent();
    const secret = newSecret();
    await relay.store.putAgentCredential(
      agent.id,
      hashGeneratedSecret(secret),
      '2024-01-01T00:00:00Z',
    );
    await expect(signIn(agent.id, secret)).resolves.toBeUndefined();
    await expect(signIn(agent.id, agent.secret)).rejects.toThrow(/Bad username or password/);
  });

  it('tps broker emqx: users.json EMQX’s pbkdf2 check accepts, acl.conf, and the older credentials named', async () => {
    const agent = await registerAgent();
    const older = await registerAgent();
    await relay.store.putAgentCredential(
      older.id,
      hashGeneratedSecret(older.secret),
      '2024-01-01T00:00:00Z',
    );
    const out = path.join(tempDataDir(), 'emqx');
    const result = await runTpsToEnd(
      ['broker', 'emqx', '--out', out, '--data-dir', relay.dataDir, '--relay-username', 'relay-1'],
      { TPS_MQTT_PASSWORD: 'the-relay-password' },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(fs.readdirSync(out).sort()).toEqual(['acl.conf', 'users.json']);
    const users = JSON.parse(fs.readFileSync(path.join(out, 'users.json'), 'utf8')) as Array<{
      user_id: string;
      password_hash: string;
      salt: string;
      is_superuser: boolean;
    }>;
    // emqx_passwd: hex(pbkdf2(sha512, Password, Salt, 101, 64)) against password_hash.
    const emqxAccepts = (userId: string, password: string) => {
      const user = users.find((u) => u.user_id === userId);
      return (
        user !== undefined &&
        pbkdf2Sync(password, Buffer.from(user.salt, 'utf8'), 101, 64, 'sha512').toString('hex') ===
          user.password_hash
      );
    };
    expect(emqxAccepts(agent.id, agent.secret)).toBe(true);
    expect(emqxAccepts(agent.id, older.secret)).toBe(false);
    expect(emqxAccepts('relay-1', 'the-relay-password')).toBe(true);
    expect(users.find((u) => u.user_id === older.id)).toBeUndefined();
    expect(users.every((u) => u.is_superuser === false)).toBe(true);
    expect(fs.readFileSync(path.join(out, 'acl.conf'), 'utf8')).toContain(
      '{allow, {username, "relay-1"}, all, ["tps/v1/#"]}.',
    );
    expect(result.stdout).toContain('mac_fun = sha512, iterations = 101, dk_length = 64');
    expect(result.stderr).toContain(older.id);

    const json = await runTpsToEnd(
      [
        'broker',
        'emqx',
        '--out',
        out,
        '--data-dir',
        relay.dataDir,
        '--relay-username',
        'relay-1',
        '--json',
      ],
      { TPS_MQTT_PASSWORD: 'the-relay-password' },
    );
    expect(json.code, json.stderr).toBe(0);
    const written = JSON.parse(json.stdout) as { agents: number; left_out: string[] };
    expect(written).toEqual({
      broker: 'emqx',
      files: [
        { path: path.join(out, 'users.json'), kind: 'credentials' },
        { path: path.join(out, 'acl.conf'), kind: 'acl' },
      ],
      agents: users.length - 1,
      relay_username: 'relay-1',
      left_out: expect.arrayContaining([older.id]),
    });
  });

  it('tps broker says what is missing: the subcommand, --out, the relay password, the store', async () => {
    const usage = await runTpsToEnd(['broker']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('tps broker mosquitto --out DIR');

    const out = path.join(tempDataDir(), 'broker');
    const noOut = await runTpsToEnd(['broker', 'mosquitto', '--data-dir', relay.dataDir], {
      TPS_MQTT_PASSWORD: 'p',
    });
    expect(noOut.code).toBe(2);
    expect(noOut.stderr).toContain('--out DIR is needed');

    const noPassword = await runTpsToEnd(
      ['broker', 'mosquitto', '--out', out, '--data-dir', relay.dataDir],
      { TPS_MQTT_PASSWORD: '' },
    );
    expect(noPassword.code).toBe(2);
    expect(noPassword.stderr).toContain('TPS_MQTT_PASSWORD');

    const noStore = await runTpsToEnd(
      ['broker', 'mosquitto', '--out', out, '--data-dir', path.join(out, 'nothing-here')],
      { TPS_MQTT_PASSWORD: 'p' },
    );
    expect(noStore.code).toBe(1);
    expect(noStore.stderr).toContain('no relay store at');
    expect(fs.existsSync(out)).toBe(false);
  });
});
