/**
 * The agent's TLS identity on fake time: when it asks the relay for a certificate, what it
 * keeps of an answer, and how it waits after silence or a refusal. Answers are signed by
 * the relay's own authority code, so what the agent checks is what a relay sends.
 */
import {
  X509Certificate,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
} from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  LocalTlsIdentity,
  type LocalAddresses,
  type LocalTlsCredentials,
} from '../agent/local-api/tls-identity.js';
import { LocalAuthority } from '../cloud/local-tls/authority.js';
import { ManualTimers } from '../common/testing/manual-timers.js';
import type { LocalCertMessage, LocalCertRequestMessage } from '../protocol/index.js';

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

function memorySettings() {
  const settings = new Map<string, string>();
  return {
    getSetting: async (key: string) => settings.get(key),
    claimSetting: async (key: string, value: string) => {
      if (!settings.has(key)) settings.set(key, value);
      return settings.get(key)!;
    },
  };
}

describe('the agent’s local TLS identity', () => {
  let timers: ManualTimers;
  let dataDir: string;
  let sent: LocalCertRequestMessage[];
  let linkUp: boolean;
  let addresses: LocalAddresses;
  let authority: LocalAuthority;

  beforeEach(async () => {
    timers = new ManualTimers(Date.parse('2026-11-21T12:00:00.000Z'));
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-local-tls-'));
    sent = [];
    linkUp = true;
    addresses = { ip_addresses: ['192.168.1.20'], dns_names: ['till-3'] };
    authority = await LocalAuthority.of(memorySettings(), 'acct-1', timers.clock);
  });

  const identity = (enabled = true) =>
    new LocalTlsIdentity({
      dataDir,
      enabled,
      clock: timers.clock,
      timers,
      logger: pino({ level: 'silent' }),
      send: (request) => linkUp && sent.push(request) > 0,
      addresses: () => addresses,
      port: 8443,
      // The longest wait of each step: the times below are exact.
      retry: { random: () => 1 },
    });

  /** The relay's answer to a request: signed for its key, valid 30 days from now. */
  async function issue(request: LocalCertRequestMessage): Promise<LocalCertMessage> {
    const notAfter = new Date(Math.floor((timers.now + 30 * DAY_MS) / 1000) * 1000);
    const certificate = await authority.sign({
      terminalId: 't-1',
      publicKey: createPublicKey(request.public_key).export({ type: 'spki', format: 'der' }),
      keyType: 'ec',
      ipAddresses: request.ip_addresses,
      dnsNames: request.dns_names,
      notAfter,
    });
    return {
      request_id: request.request_id,
      outcome: 'ISSUED',
      certificate,
      ca_certificate: authority.certificate,
      expires_at: notAfter.toISOString(),
    };
  }

  async function withCertificate(): Promise<LocalTlsIdentity> {
    const agent = identity();
    agent.start();
    agent.received(await issue(sent.at(-1)!));
    sent = [];
    return agent;
  }

  it('asks nothing and makes no key while its local API is off', () => {
    const agent = identity(false);
    agent.start();
    agent.linkUp();
    timers.advance(2 * DAY_MS);
    expect(sent).toEqual([]);
    expect(agent.current()).toBeUndefined();
    expect(fs.existsSync(path.join(dataDir, 'local-tls'))).toBe(false);
  });

  it('asks at start with its key and addresses, and keeps a certificate for that key', async () => {
    const agent = identity();
    const renewed: LocalTlsCredentials[] = [];
    agent.on('renewed', (credentials) => renewed.push(credentials));
    agent.start();
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ ...addresses, port: 8443 });
    agent.received(await issue(sent[0]!));
    expect(renewed).toEqual([agent.current()]);
    const { cert, ca, key } = agent.current()!;
    expect(new X509Certificate(cert).checkPrivateKey(createPrivateKey(key))).toBe(true);
    expect(ca).toBe(authority.certificate);
    // A restart keeps both: nothing to ask while the certificate is good.
    const again = identity();
    sent = [];
    again.start();
    expect(sent).toEqual([]);
    expect(again.current()).toEqual(agent.current());
  });

  it('asks again after silence, waiting longer each time', () => {
    identity().start();
    expect(sent).toHaveLength(1);
    // 60 s for the answer, then 1 min of back-off.
    timers.advance(119_000);
    expect(sent).toHaveLength(1);
    timers.advance(1_000);
    expect(sent).toHaveLength(2);
    expect(sent[1]!.request_id).not.toBe(sent[0]!.request_id);
    // 60 s for the answer, then 2 min.
    timers.advance(179_000);
    expect(sent).toHaveLength(2);
    timers.advance(1_000);
    expect(sent).toHaveLength(3);
    // However long the relay stays silent, at most one request an hour and a minute.
    timers.advance(DAY_MS);
    expect(sent.length).toBeLessThan(3 + 24 + 6);
  });

  it('asks when the link comes up if its request could not leave', () => {
    linkUp = false;
    const agent = identity();
    agent.start();
    expect(sent).toEqual([]);
    linkUp = true;
    agent.linkUp();
    expect(sent).toHaveLength(1);
  });

  it('asks at its next check once its addresses change, and once a third of the validity remains', async () => {
    const moved = await withCertificate();
    timers.advance(HOUR_MS);
    expect(sent).toEqual([]);
    addresses = { ip_addresses: ['192.168.1.21'], dns_names: ['till-3'] };
    timers.advance(HOUR_MS);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.ip_addresses).toEqual(['192.168.1.21']);
    moved.stop();

    sent = [];
    const agent = await withCertificate();
    // 19 days in, more than a third remains; after 20 it does not.
    timers.advance(19 * DAY_MS);
    expect(sent).toEqual([]);
    const before = agent.current()!.cert;
    // Within the day after: at an hourly check once less than a third remains.
    for (let hour = 0; hour < 25 && sent.length === 0; hour++) timers.advance(HOUR_MS);
    expect(sent).toHaveLength(1);
    // The old certificate serves until the new one comes; then the new one, same key.
    expect(agent.current()!.cert).toBe(before);
    agent.received(await issue(sent.at(-1)!));
    expect(agent.current()!.cert).not.toBe(before);
    expect(sent.every((request) => request.public_key === sent[0]!.public_key)).toBe(true);
  });

  it('waits as long as a refusal says before asking again', () => {
    const agent = identity();
    agent.start();
    agent.received({
      request_id: sent[0]!.request_id,
      outcome: 'REFUSED',
      reason: 'a new certificate at most every 600 s',
      retry_after_s: 600,
    });
    agent.linkUp();
    timers.advance(599_000);
    expect(sent).toHaveLength(1);
    timers.advance(1_000);
    expect(sent).toHaveLength(2);
  });

  it('keeps no answer that is for another request, another key or another authority', async () => {
    const agent = identity();
    agent.start();
    // Another request's answer: ignored, the request still waits.
    agent.received({ ...(await issue(sent[0]!)), request_id: 'f'.repeat(16) });
    expect(agent.current()).toBeUndefined();
    // A certificate for another key.
    const foreignKey = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey;
    const foreign = await issue({
      ...sent[0]!,
      public_key: foreignKey.export({ type: 'spki', format: 'pem' }).toString(),
    });
    agent.received(foreign);
    expect(agent.current()).toBeUndefined();
    // Asked again; answered with its key signed by another account's authority, while the
    // answer names this one.
    timers.advance(60_000);
    expect(sent).toHaveLength(2);
    const ours = authority.certificate;
    authority = await LocalAuthority.of(memorySettings(), 'acct-2', timers.clock);
    agent.received({ ...(await issue(sent[1]!)), ca_certificate: ours });
    expect(agent.current()).toBeUndefined();
    expect(fs.existsSync(path.join(dataDir, 'local-tls', 'certificate.json'))).toBe(false);
  });
});
