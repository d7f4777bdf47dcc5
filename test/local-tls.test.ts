/**
 * TLS for the agent's local API, end to end: a real relay (SQLite, aedes in process, HTTP
 * on an ephemeral port), a real agent on its MQTT link, node's TLS. The agent's certificate
 * verifies against the authority the trust call answers, and against nothing else; another
 * terminal's credential gets no trust of this one; the agent renews near the end; hostile
 * requests are refused with their reason, and a flood is dropped.
 */
import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import mqtt, { type MqttClient } from 'mqtt';
import pino from 'pino';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../client/index.js';
import { startAgent, type RunningAgent } from '../agent/agent.js';
import { emulatedReader } from '../agent/emulated-reader.js';
import type { LocalTlsCredentials } from '../agent/local-api/tls-identity.js';
import { LocalAuthority } from '../cloud/local-tls/authority.js';
import {
  LOCAL_CERT_MAX_IP_ADDRESSES,
  LocalCertMessage,
  localDnsName,
  terminalTopics,
  type LocalTrustResponse,
  type TerminalCreateResponse,
} from '../protocol/index.js';
import { agentConfig } from './agent-harness.js';
import { post, startTestRelay, tempDataDir, type TestRelay } from './support/relay.js';

const DAY_MS = 86_400_000;
/** Relay and agent read this clock: a test moves both at once. */
let offsetMs = 0;
const clock = { now: () => new Date(Date.now() + offsetMs) };

let relay: TestRelay;
const stops: Array<() => Promise<unknown>> = [];
beforeAll(async () => {
  relay = await startTestRelay({}, tempDataDir(), { clock });
});
afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await relay.close();
});

async function register(): Promise<TerminalCreateResponse> {
  const res = await post(relay.baseUrl, 'v1', '/terminal/create', {}, relay.account);
  expect(res.status).toBe(200);
  return res.body as TerminalCreateResponse;
}

const trust = (terminalId: string, credential: { username: string; password: string }) =>
  post(relay.baseUrl, 'v1', '/terminal/local-trust', { terminal_id: terminalId }, credential);

async function startLocalAgent(
  t: TerminalCreateResponse,
): Promise<{ agent: RunningAgent; dataDir: string }> {
  const emulated = emulatedReader({ delayMs: 20, battery: false });
  const config = agentConfig({
    terminal_id: t.terminal_id,
    broker: { url: t.agent.broker_url, username: t.agent.username, password: t.agent.password },
  });
  const agent = await startAgent(config, {
    reader: emulated.reader,
    logger: pino({ level: 'silent' }),
    clock,
    localTls: {
      enabled: true,
      port: 8443,
      addresses: () => ({ ip_addresses: ['127.0.0.1', '::1'], dns_names: ['localhost'] }),
    },
  });
  stops.push(async () => {
    await agent.stop();
    await emulated.close();
  });
  return { agent, dataDir: config.data_dir };
}

/** The credentials the agent holds once its certificate came (or came anew). */
async function nextCertificate(agent: RunningAgent): Promise<LocalTlsCredentials> {
  const [credentials] = (await once(agent.localTls!, 'renewed')) as [LocalTlsCredentials];
  return credentials;
}

/** An MQTT client signed in as the terminal's agent. */
async function connectAsAgent(t: TerminalCreateResponse): Promise<MqttClient> {
  const client = mqtt.connect(t.agent.broker_url, {
    username: t.agent.username,
    password: t.agent.password,
    clientId: `agent-${t.terminal_id}`,
    reconnectPeriod: 0,
  });
  await new Promise((resolve, reject) => {
    client.once('connect', resolve);
    client.once('error', reject);
  });
  stops.push(() => client.endAsync());
  return client;
}

/** An HTTPS server as the local API will be, answering "ok"; its port. */
async function serve(credentials: LocalTlsCredentials): Promise<number> {
  const server = https.createServer({ key: credentials.key, cert: credentials.cert }, (_req, res) =>
    res.end('ok'),
  );
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  stops.push(() => new Promise((resolve) => server.close(resolve)));
  return (server.address() as AddressInfo).port;
}

/** A request over TLS trusting only `ca`: the body, or the TLS error's code. */
function fetchWith(ca: string, port: number, name?: string): Promise<string> {
  return new Promise((resolve) => {
    // The name the certificate must carry; the connection goes to the loopback address.
    const servername = name === undefined ? {} : { servername: name };
    const req = https.get({ host: '127.0.0.1', ...servername, port, ca, agent: false }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve(body));
    });
    req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

describe('local TLS', () => {
  let t: TerminalCreateResponse;
  let agent: RunningAgent;
  let dataDir: string;
  let first: LocalTlsCredentials;

  beforeAll(async () => {
    t = await register();
    ({ agent, dataDir } = await startLocalAgent(t));
    first = agent.localTls!.current() ?? (await nextCertificate(agent));
  });

  it('keeps its key and certificate readable by the agent alone', () => {
    const folder = path.join(dataDir, 'local-tls');
    expect(fs.statSync(folder).mode & 0o777).toBe(0o700);
    expect(fs.statSync(path.join(folder, 'key.pem')).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(path.join(folder, 'key.pem'), 'utf8')).toBe(first.key);
    expect(fs.statSync(path.join(folder, 'certificate.json')).mode & 0o777).toBe(0o600);
  });

  it("the agent's certificate verifies against the authority the trust call answers, and no other", async () => {
    const res = await trust(t.terminal_id, { username: t.username, password: t.password });
    expect(res.status).toBe(200);
    const answer = res.body as LocalTrustResponse;
    expect(answer.terminal_id).toBe(t.terminal_id);
    expect(answer.ca_certificate).toBe(first.ca);
    expect(answer.port).toBe(8443);
    expect(answer.addresses).toEqual(
      expect.arrayContaining([
        '127.0.0.1',
        '::1',
        'localhost',
        `${t.terminal_id.toLowerCase()}.tps.internal`,
      ]),
    );
    const cert = new X509Certificate(first.cert);
    expect(answer.certificate_expires_at).toBe(cert.validToDate.toISOString());
    expect(cert.validToDate.getTime() - clock.now().getTime()).toBeGreaterThan(29 * DAY_MS);
    expect(cert.subjectAltName).toContain('IP Address:127.0.0.1');

    const port = await serve(first);
    expect(await fetchWith(answer.ca_certificate, port)).toBe('ok');
    expect(await fetchWith(answer.ca_certificate, port, 'localhost')).toBe('ok');

    // The account credential reaches the terminal too, with the same authority.
    const asAccount = await trust(t.terminal_id, relay.account);
    expect((asAccount.body as LocalTrustResponse).ca_certificate).toBe(answer.ca_certificate);

    // Another account's authority, kept in a store of its own, does not vouch for it.
    const settings = new Map<string, string>();
    const otherStore = {
      getSetting: async (key: string) => settings.get(key),
      claimSetting: async (key: string, value: string) => {
        if (!settings.has(key)) settings.set(key, value);
        return settings.get(key)!;
      },
    };
    const other = await LocalAuthority.of(otherStore, 'acct-other', clock);
    expect(await fetchWith(other.certificate, port)).toBe('UNABLE_TO_VERIFY_LEAF_SIGNATURE');
    // The right authority for a name the certificate does not carry fails too.
    expect(await fetchWith(answer.ca_certificate, port, 'elsewhere.example')).toBe(
      'ERR_TLS_CERT_ALTNAME_INVALID',
    );
  });

  it('the client library fetches the trust in one call and reaches the agent with it, nothing configured', async () => {
    const api = new ApiClient({
      baseUrl: `${relay.baseUrl}`,
      username: t.username,
      password: t.password,
    });
    const local = await api.localTrust(t.terminal_id);
    expect(local).toMatchObject({ terminalId: t.terminal_id, ca: first.ca, port: 8443 });
    expect(local.baseUrls).toEqual(
      expect.arrayContaining(['https://127.0.0.1:8443/pos', 'https://[::1]:8443/pos']),
    );
    const port = await serve(first);
    expect(local.serverName).toBe(localDnsName(t.terminal_id));
    const dispatcher = new Agent({ connect: { ca: local.ca, servername: local.serverName } });
    stops.push(() => dispatcher.close());
    const res = await request(`https://127.0.0.1:${port}/`, { dispatcher });
    expect(await res.body.text()).toBe('ok');
  });

  it("another terminal's credential gets no trust of this terminal, as if it did not exist", async () => {
    const other = await register();
    const res = await trust(t.terminal_id, { username: other.username, password: other.password });
    // The spec's answer for a terminal a credential does not reach: 400 TERMINAL_NOT_FOUND.
    expect(res.status).toBe(400);
    const unknown = await trust('t-0000000000', relay.account);
    expect(unknown.status).toBe(400);
    for (const refused of [res, unknown]) {
      expect(JSON.stringify(refused.body)).toContain('TERMINAL_NOT_FOUND');
      expect(JSON.stringify(refused.body)).not.toContain('CERTIFICATE');
    }
  });

  it("another terminal of the account reporting the same address is told apart by the terminal's name", async () => {
    const impostor = await register();
    const client = await connectAsAgent(impostor);
    const topics = terminalTopics(impostor.terminal_id);
    await client.subscribeAsync(topics.localCert, { qos: 1 });
    const answered = new Promise<Buffer>((resolve) =>
      client.once('message', (_topic, payload) => resolve(payload)),
    );
    const keys = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const request = {
      request_id: 'a'.repeat(16),
      public_key: keys.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      ip_addresses: ['127.0.0.1'],
      dns_names: [],
    };
    await client.publishAsync(topics.localCertRequest, JSON.stringify(request), { qos: 1 });
    const answer = LocalCertMessage.parse(JSON.parse((await answered).toString()));
    if (answer.outcome !== 'ISSUED') throw new Error(`refused: ${answer.reason}`);
    const port = await serve({
      key: keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      cert: answer.certificate,
      ca: answer.ca_certificate,
    });
    // Same authority, same address: the address alone cannot tell the two agents apart.
    expect(await fetchWith(first.ca, port)).toBe('ok');
    expect(await fetchWith(first.ca, port, localDnsName(impostor.terminal_id))).toBe('ok');
    // The terminal's own name can.
    expect(await fetchWith(first.ca, port, localDnsName(t.terminal_id))).toBe(
      'ERR_TLS_CERT_ALTNAME_INVALID',
    );
  });

  it('renews the certificate once less than a third of its validity remains', async () => {
    const before = new X509Certificate(first.cert);
    // Ten days in: two thirds remain, nothing is asked.
    offsetMs += 10 * DAY_MS;
    agent.localTls!.check();
    expect(agent.localTls!.current()!.cert).toBe(first.cert);
    // Twenty-one days in: less than a third remains.
    offsetMs += 11 * DAY_MS;
    const renewed = nextCertificate(agent);
    agent.localTls!.check();
    const second = await renewed;
    const after = new X509Certificate(second.cert);
    expect(after.serialNumber).not.toBe(before.serialNumber);
    expect(after.validToDate.getTime()).toBeGreaterThan(before.validToDate.getTime() + 20 * DAY_MS);
    expect(second.key).toBe(first.key);
    const res = await trust(t.terminal_id, relay.account);
    expect((res.body as LocalTrustResponse).certificate_expires_at).toBe(
      after.validToDate.toISOString(),
    );
    // Signed by the same authority (a TLS check would read the real clock, not the moved one).
    expect(after.verify(new X509Certificate(second.ca).publicKey)).toBe(true);
    expect(second.ca).toBe(first.ca);
  });
});

describe('hostile certificate requests', () => {
  let t: TerminalCreateResponse;
  let client: MqttClient;
  const answers = new Map<string, LocalCertMessage>();
  const arrived: Array<() => void> = [];

  beforeAll(async () => {
    t = await register();
    client = await connectAsAgent(t);
    await client.subscribeAsync(terminalTopics(t.terminal_id).localCert, { qos: 1 });
    client.on('message', (_topic, payload) => {
      const answer = LocalCertMessage.parse(JSON.parse(payload.toString()));
      answers.set(answer.request_id ?? '', answer);
      for (const wake of arrived.splice(0)) wake();
    });
  });

  let counter = 0;
  const ecKey = () =>
    generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
      .publicKey.export({ type: 'spki', format: 'pem' })
      .toString();
  function ask(body: Record<string, unknown>): string {
    const requestId = (++counter).toString(16).padStart(16, '0');
    client.publish(
      terminalTopics(t.terminal_id).localCertRequest,
      JSON.stringify({ request_id: requestId, ip_addresses: [], dns_names: [], ...body }),
      { qos: 1 },
    );
    return requestId;
  }
  async function answerTo(requestId: string): Promise<LocalCertMessage> {
    while (!answers.has(requestId)) await new Promise<void>((resolve) => arrived.push(resolve));
    return answers.get(requestId)!;
  }
  const refusal = async (requestId: string) => {
    const answer = await answerTo(requestId);
    expect(answer.outcome).toBe('REFUSED');
    return answer.outcome === 'REFUSED' ? answer.reason : '';
  };

  it('refuses keys that are not EC P-256 or RSA of 2048 bits or more, and malformed or too many addresses', async () => {
    const rsa1024 = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey;
    const p384 = generateKeyPairSync('ec', { namedCurve: 'secp384r1' }).publicKey;
    const privatePem = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey;
    const spki = (key: typeof rsa1024) => key.export({ type: 'spki', format: 'pem' }).toString();
    expect(await refusal(ask({ public_key: spki(rsa1024) }))).toMatch(/EC P-256 or RSA/);
    expect(await refusal(ask({ public_key: spki(p384) }))).toMatch(/EC P-256 or RSA/);
    expect(
      await refusal(
        ask({ public_key: privatePem.export({ type: 'pkcs8', format: 'pem' }).toString() }),
      ),
    ).toMatch(/not a PEM SubjectPublicKeyInfo/);
    expect(await refusal(ask({ public_key: 'x'.repeat(5000) }))).toMatch(/^public_key/);
    const many = Array.from(
      { length: LOCAL_CERT_MAX_IP_ADDRESSES + 1 },
      (_, i) => `10.0.0.${i + 1}`,
    );
    expect(await refusal(ask({ public_key: ecKey(), ip_addresses: many }))).toMatch(
      /^ip_addresses/,
    );
    expect(await refusal(ask({ public_key: ecKey(), ip_addresses: ['10.0.0.256'] }))).toMatch(
      /^ip_addresses\.0/,
    );
    expect(await refusal(ask({ public_key: ecKey(), dns_names: ['bad name.local'] }))).toMatch(
      /^dns_names\.0/,
    );
    // Another terminal's name is the relay's to give, never an agent's to ask for.
    expect(
      await refusal(ask({ public_key: ecKey(), dns_names: [localDnsName('t-1900000001')] })),
    ).toMatch(/relay's to give/);
  });

  it('issues one certificate per interval: the same request gets it again, another is refused until then', async () => {
    offsetMs += 30 * DAY_MS;
    const key = ecKey();
    const first = await answerTo(ask({ public_key: key, ip_addresses: ['192.168.1.20'] }));
    expect(first.outcome).toBe('ISSUED');
    const again = await answerTo(ask({ public_key: key, ip_addresses: ['192.168.1.20'] }));
    expect(again).toMatchObject({
      outcome: 'ISSUED',
      certificate: first.outcome === 'ISSUED' && first.certificate,
    });
    const moved = await answerTo(ask({ public_key: key, ip_addresses: ['192.168.1.21'] }));
    expect(moved).toMatchObject({ outcome: 'REFUSED', retry_after_s: 600 });
  });

  it('drops a flood of requests unanswered beyond ten per ten minutes', async () => {
    offsetMs += DAY_MS;
    const topic = terminalTopics(t.terminal_id).localCertRequest;
    const flood: string[] = [];
    for (let i = 0; i < 15; i++) {
      const requestId = (++counter).toString(16).padStart(16, '0');
      flood.push(requestId);
      // PUBACKed once the broker handed it to the relay: all are read before the clock moves.
      await client.publishAsync(topic, JSON.stringify({ request_id: requestId, public_key: 'x' }), {
        qos: 1,
      });
    }
    await answerTo(flood[9]!);
    expect((await trust(t.terminal_id, relay.account)).status).toBe(200);
    offsetMs += 11 * 60_000;
    await answerTo(ask({ public_key: 'not a key' }));
    expect(flood.filter((id) => answers.has(id))).toEqual(flood.slice(0, 10));
  });
});
