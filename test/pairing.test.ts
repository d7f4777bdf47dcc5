/**
 * Pairing through the API of a relay in process, on a clock the test moves: a code is
 * claimed once, before it expires, by any account's credential (codes are global; the
 * terminal joins the claimer's account); only the agent that asked, holding its secret,
 * collects the broker credential, once; the claim is an event; the limits answer 429 with
 * Retry-After. The path with real processes is e2e-pairing.test.ts.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pairAgent, PairingFailed } from '../agent/pair.js';
import { hashGeneratedSecret } from '../cloud/accounts/secrets.js';
import { agentClientId } from '../protocol/index.js';
import { post, startTestRelay, type TestRelay } from './support/relay.js';

const OTHER = { username: 'other-account', password: 'other-account-password' };

/** Whether the broker takes this agent credential. */
async function brokerSignIn(username: string, password: string): Promise<boolean> {
  try {
    const client = await mqtt.connectAsync(relay.brokerUrl, {
      username,
      password,
      clientId: agentClientId(username),
      reconnectPeriod: 0,
      connectTimeout: 5000,
    });
    await client.endAsync();
    return true;
  } catch (error) {
    if (/Bad username or password|Not authorized/i.test(String(error))) return false;
    throw error;
  }
}

/** A pairing secret and the hash the agent names when it asks for a code. */
function agentSecret() {
  const secret = randomBytes(32).toString('base64url');
  return { secret, sha256: createHash('sha256').update(secret).digest('hex') };
}

let relay: TestRelay;

describe('pairing', () => {
  let now = Date.parse('2026-11-24T10:00:00.000Z');
  const clock = { now: () => new Date(now) };

  const agentCall = async (operation: string, body: unknown, forwardedFor?: string) => {
    const response = await fetch(`${relay.baseUrl}/v1${operation}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}),
      },
      body: JSON.stringify(body),
    });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const answer: any = await response.json();
    return { status: response.status, headers: response.headers, body: answer };
  };
  const start = async (sha256: string, from = '192.0.2.1') =>
    agentCall('/pairing/start', { secret_sha256: sha256 }, from);
  const claim = (body: Record<string, unknown>, who = relay.account) =>
    post(relay.baseUrl, 'v1', '/terminal/claim', body, who);

  beforeAll(async () => {
    relay = await startTestRelay({ trustProxy: 'loopback' }, undefined, { clock });
    await relay.store.createAccount({
      id: 'acct-other',
      kind: 'merchant',
      createdAt: clock.now().toISOString(),
    });
    await relay.store.putCredential({
      username: OTHER.username,
      secretHash: hashGeneratedSecret(OTHER.password),
      accountId: 'acct-other',
      createdAt: clock.now().toISOString(),
    });
  });
  afterAll(async () => {
    await relay.close();
    fs.rmSync(relay.dataDir, { recursive: true, force: true });
  });

  it('pairs once: the claimer names the terminal, only the agent with the secret gets the credential', async () => {
    const agent = agentSecret();
    const started = await start(agent.sha256, '192.0.2.10');
    expect(started.status).toBe(200);
    expect(started.body.code).toMatch(/^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$/);
    expect(Date.parse(started.body.expires_at) - now).toBe(600_000);

    const waiting = await agentCall('/pairing/wait', { secret: agent.secret, wait_seconds: 0 });
    expect(waiting.body).toEqual({ state: 'WAITING', expires_at: started.body.expires_at });

    // Typed as a person might: lowercase, without the hyphen.
    const typed = (started.body.code as string).replace('-', '').toLowerCase();
    const claimed = await claim({ code: typed, name: 'Front till', cohort: 'cohort-front' });
    expect(claimed.status).toBe(200);
    expect(claimed.body).toMatchObject({ name: 'Front till', cohort: 'cohort-front' });
    const terminalId = claimed.body.terminal_id as string;

    // Whoever read the code has no secret: nothing to collect.
    const stranger = await agentCall('/pairing/wait', { secret: agentSecret().secret });
    expect(stranger.status).toBe(404);
    expect(stranger.body.error.code).toBe('PAIRING_NOT_FOUND');

    const paired = await agentCall('/pairing/wait', { secret: agent.secret, wait_seconds: 5 });
    expect(paired.status).toBe(200);
    expect(paired.body).toMatchObject({
      state: 'PAIRED',
      terminal_id: terminalId,
      name: 'Front till',
      cohort: 'cohort-front',
      broker: { url: relay.brokerUrl, username: terminalId },
    });
    expect(await relay.store.findAgentCredential(terminalId)).toMatch(/^\$7\$/);

    // The code is used: the same or another account is refused, and sees nothing of it.
    const again = await claim({ code: started.body.code });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('PAIRING_CODE_USED');
    expect((await claim({ code: started.body.code }, OTHER)).body.error.code).toBe(
      'PAIRING_CODE_USED',
    );
    const seen = await post(
      relay.baseUrl,
      'v1',
      '/terminal/status',
      { terminal_id: terminalId },
      OTHER,
    );
    expect(seen.body.error.code).toBe('TERMINAL_NOT_FOUND');

    // The claim is an event of the claimer's account.
    const events = await post(
      relay.baseUrl,
      'v1',
      '/event/list',
      { filter: { subject: { eq: terminalId } } },
      relay.account,
    );
    expect(events.body.events).toEqual([
      expect.objectContaining({
        type: 'eu.vendor.api.pos.v0.TerminalPaired',
        subject: terminalId,
        data: {
          terminal_id: terminalId,
          name: 'Front till',
          cohort: 'cohort-front',
          claimed_by: relay.account.username,
          paired_at: new Date(now).toISOString(),
        },
      }),
    ]);
    const otherEvents = await post(relay.baseUrl, 'v1', '/event/list', {}, OTHER);
    expect(otherEvents.body.events).toEqual([]);
  });

  it('hands out the credential once: revoked or rotated, it is not handed out again', async () => {
    for (const change of ['/credential/revoke', '/credential/rotate']) {
      const agent = agentSecret();
      const started = await start(agent.sha256, '192.0.2.14');
      const claimed = await claim({ code: started.body.code, name: `Till ${change}` });
      const terminalId = claimed.body.terminal_id as string;
      const paired = await agentCall('/pairing/wait', { secret: agent.secret, wait_seconds: 5 });
      expect(paired.body.state).toBe('PAIRED');
      await expect(brokerSignIn(terminalId, paired.body.broker.password)).resolves.toBe(true);

      const changed = await post(
        relay.baseUrl,
        'v1',
        change,
        { username: terminalId, type: 'AGENT' },
        relay.account,
      );
      expect(changed.status).toBe(200);
      const stored = await relay.store.findAgentCredential(terminalId);
      // The pairing is spent: its secret collects nothing more, now or later.
      for (const waitSeconds of [0, 1]) {
        const again = await agentCall('/pairing/wait', {
          secret: agent.secret,
          wait_seconds: waitSeconds,
        });
        expect(again.status).toBe(409);
        expect(again.body.error.code).toBe('PAIRING_CODE_USED');
        expect(again.body.error.description).toMatch(/collected its credential already/);
        expect(JSON.stringify(again.body)).not.toMatch(/password/);
      }
      expect(await relay.store.findAgentCredential(terminalId)).toBe(stored);
      await expect(brokerSignIn(terminalId, paired.body.broker.password)).resolves.toBe(false);
      if (change === '/credential/rotate') {
        await expect(brokerSignIn(terminalId, changed.body.credential.password)).resolves.toBe(
          true,
        );
      }
    }
  });

  it('a code of nobody’s is claimed into the claimer’s account, whichever account that is', async () => {
    const agent = agentSecret();
    const started = await start(agent.sha256, '192.0.2.11');
    const claimed = await claim({ code: started.body.code, name: 'Back office' }, OTHER);
    expect(claimed.status).toBe(200);
    const status = await post(
      relay.baseUrl,
      'v1',
      '/terminal/status',
      { terminal_id: claimed.body.terminal_id },
      relay.account,
    );
    expect(status.body.error.code).toBe('TERMINAL_NOT_FOUND');
    expect((await relay.store.getTerminal(claimed.body.terminal_id))?.accountId).toBe('acct-other');
  });

  it('refuses an expired code, to the claimer and to the waiting agent', async () => {
    const agent = agentSecret();
    const started = await start(agent.sha256, '192.0.2.12');
    now += 600_000;
    const late = await claim({ code: started.body.code, name: 'Too late' });
    expect(late.status).toBe(410);
    expect(late.body.error.code).toBe('PAIRING_EXPIRED');
    const waited = await agentCall('/pairing/wait', { secret: agent.secret });
    expect(waited.status).toBe(410);
    expect(waited.body.error.description).toMatch(/expired/);
  });

  it('the agent tells the field engineer that the code expired and what to do', async () => {
    const dir = fs.mkdtempSync(path.join(relay.dataDir, 'agent-'));
    const lines: string[] = [];
    const pairing = pairAgent({
      relay: relay.baseUrl,
      configFile: path.join(dir, 'agent.json'),
      reader: { port: '/dev/ttyACM0' },
      waitSeconds: 1,
      write: (line) => lines.push(line),
    });
    let settled = false;
    const refused = expect(pairing.finally(() => (settled = true))).rejects.toThrow(PairingFailed);
    // Once the code is shown, its ten minutes pass.
    while (!settled && !lines.some((l) => l.startsWith('Pairing code:'))) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    now += 600_000;
    await refused;
    await expect(pairing).rejects.toThrow(/expired.*Run 'tps agent pair' again/);
    expect(fs.existsSync(path.join(dir, 'agent.json'))).toBe(false);
  });

  it('a terminal credential cannot claim', async () => {
    const started = await start(agentSecret().sha256, '192.0.2.13');
    const sim = await relay.newSimulator();
    const refused = await claim({ code: started.body.code }, sim);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('FORBIDDEN');
  });

  it('limits codes per address and failed claims per credential: 429 with Retry-After', async () => {
    const asked = Array.from({ length: 10 }, agentSecret);
    for (const agent of asked) {
      expect((await start(agent.sha256, '198.51.100.7')).status).toBe(200);
    }
    const limited = await start(agentSecret().sha256, '198.51.100.7');
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe('TOO_MANY_REQUESTS');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // Its terminals still wait for the codes it asked for.
    const waiting = await agentCall(
      '/pairing/wait',
      { secret: asked[0]!.secret, wait_seconds: 0 },
      '198.51.100.7',
    );
    expect(waiting.body.state).toBe('WAITING');
    // Another address is not held back.
    expect((await start(agentSecret().sha256, '198.51.100.8')).status).toBe(200);
    // Waits with a secret nobody named count alike: no probing for secrets either.
    const probe = (from: string) =>
      agentCall('/pairing/wait', { secret: agentSecret().secret }, from);
    for (let i = 0; i < 10; i++) expect((await probe('198.51.100.20')).status).toBe(404);
    const probing = await probe('198.51.100.20');
    expect(probing.status).toBe(429);
    expect(Number(probing.headers.get('retry-after'))).toBeGreaterThan(0);

    const real = await start(agentSecret().sha256, '198.51.100.9');
    for (let i = 0; i < 10; i++) {
      expect((await claim({ code: 'ZZZZ-ZZZZ' }, OTHER)).body.error.code).toBe('PAIRING_NOT_FOUND');
    }
    // Past the limit even a right code is refused, before it is looked at.
    const guessed = await claim({ code: real.body.code }, OTHER);
    expect(guessed.status).toBe(429);
    expect(Number(guessed.headers.get('retry-after'))).toBeGreaterThan(0);
    // The window ends: the credential may claim again.
    now += 600_000;
    const fresh = await start(agentSecret().sha256, '198.51.100.9');
    expect((await claim({ code: fresh.body.code }, OTHER)).status).toBe(200);
  });

  it('answers a malformed code with the field named', async () => {
    const bad = await claim({ code: 'IL0O-1234' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.description).toMatch(/^code: /);
  });
});
