/**
 * The embedded broker over TLS: with the relay's certificate its listener speaks
 * `mqtts://` only, `tps terminal create` writes that address (and the CA to check it
 * against) into the agent's config, and an agent started from that file verifies the
 * relay and pays. A plain-text listener on an address others reach is refused at start
 * unless the operator allows it.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import mqtt from 'mqtt';
import { Agent, getGlobalDispatcher, setGlobalDispatcher, type Dispatcher } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../cloud/config-settings.js';
import {
  eventually,
  posFor,
  runTpsToEnd,
  startAgentProcess,
  type TpsChild,
} from './support/e2e-parts.js';
import { startTestRelay, tempDataDir, TEST_ACCOUNT, type TestRelay } from './support/relay.js';

const hasOpenssl = (() => {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/** A self-signed certificate for 127.0.0.1, as an operator's private CA would issue. */
function selfSigned(dir: string): { certFile: string; keyFile: string } {
  const certFile = path.join(dir, 'cert.pem');
  const keyFile = path.join(dir, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ],
    { stdio: 'ignore' },
  );
  return { certFile, keyFile };
}

describe.skipIf(!hasOpenssl)('the embedded broker with the relay’s certificate', () => {
  const dir = tempDataDir();
  let relay: TestRelay;
  let certFile = '';
  const children: TpsChild[] = [];
  let dispatcher: Dispatcher | undefined;

  beforeAll(async () => {
    const files = selfSigned(dir);
    certFile = files.certFile;
    // The POS calls the API over HTTPS with the same certificate, which it trusts.
    dispatcher = getGlobalDispatcher();
    setGlobalDispatcher(new Agent({ connect: { ca: fs.readFileSync(certFile) } }));
    relay = await startTestRelay(
      { tlsCert: files.certFile, tlsKey: files.keyFile, simulatorDelayMs: 200 },
      path.join(dir, 'data'),
    );
  }, 30_000);
  afterAll(async () => {
    await Promise.all(children.map((c) => c.stop()));
    await relay?.close();
    if (dispatcher) setGlobalDispatcher(dispatcher);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('tps terminal create writes mqtts://; the agent verifies the relay with the CA and pays', async () => {
    expect(relay.brokerUrl).toMatch(/^mqtts:\/\/127\.0\.0\.1:\d+$/);
    const configFile = path.join(dir, 'terminal', 'agent.json');
    const created = await runTpsToEnd(
      [
        'terminal',
        'create',
        '--out',
        configFile,
        '--emulated-reader',
        '--broker-ca',
        certFile,
        '--json',
        '--base-url',
        relay.baseUrl,
        '--username',
        TEST_ACCOUNT.username,
        '--password',
        TEST_ACCOUNT.password,
      ],
      // The API is on HTTPS with the same self-signed certificate.
      { NODE_EXTRA_CA_CERTS: certFile },
    );
    expect(created.code, created.stderr).toBe(0);
    const pos = JSON.parse(created.stdout) as {
      terminal_id: string;
      username: string;
      password: string;
    };
    const config = JSON.parse(fs.readFileSync(configFile, 'utf8'));
    expect(config.broker.url).toBe(relay.brokerUrl);
    expect(config.broker.ca).toBe(certFile);
    // The emulated reader works fast enough for a test.
    config.reader.emulated.delay_ms = 200;
    config.data_dir = 'agent-data';
    fs.writeFileSync(configFile, JSON.stringify(config));

    const agent = startAgentProcess(configFile);
    children.push(agent);
    const call = posFor(() => relay.baseUrl, pos);
    await eventually(
      () => call('/terminal/status', {}),
      (r) => r.body?.status?.connected === true,
      { ms: 20_000, what: 'the agent to connect over TLS', context: () => agent.output() },
    );
    const paid = await call('/transaction/purchase', {
      external_id: 'over-tls',
      requested_amount: 1250,
      currency: 'EUR',
      wait_seconds: 30,
    });
    expect(paid.body.transaction, agent.output()).toMatchObject({
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
    });
  }, 60_000);

  it('speaks no plain MQTT, and an agent without the CA does not connect', async () => {
    const port = Number(new URL(relay.brokerUrl).port);
    const plain = mqtt.connect(`mqtt://127.0.0.1:${port}`, {
      username: 'nobody',
      password: 'nothing',
      reconnectPeriod: 0,
      connectTimeout: 3000,
    });
    const unverified = mqtt.connect(relay.brokerUrl, {
      username: 'nobody',
      password: 'nothing',
      reconnectPeriod: 0,
      connectTimeout: 3000,
    });
    const outcome = (client: mqtt.MqttClient) =>
      new Promise<string>((resolve) => {
        client.once('connect', () => resolve('connected'));
        client.once('error', (error) => resolve(error.message));
        client.once('close', () => resolve('closed'));
      }).finally(() => client.end(true));
    expect(await outcome(plain)).not.toBe('connected');
    expect(await outcome(unverified)).toMatch(/self[- ]signed/i);
  });

  it('hosts its simulated terminals on the TLS broker', async () => {
    const sim = await relay.newSimulator();
    const call = posFor(() => relay.baseUrl, sim);
    await eventually(
      () => call('/terminal/status', {}),
      (r) => r.body?.status?.connected === true,
      { ms: 10_000, what: 'the simulator to connect' },
    );
    const paid = await call('/transaction/purchase', {
      external_id: 'simulated-over-tls',
      requested_amount: 700,
      currency: 'EUR',
      wait_seconds: 30,
    });
    expect(paid.body.transaction).toMatchObject({
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
    });
  }, 30_000);
});

describe('a plain-text broker listener on an address others reach', () => {
  it('is refused at start, saying how to allow it', async () => {
    const started = startTestRelay({ host: '0.0.0.0' });
    await expect(started).rejects.toBeInstanceOf(ConfigError);
    await expect(started).rejects.toThrow(
      /TPS_MQTT_ALLOW_PLAINTEXT \(--mqtt-allow-plaintext\): the embedded MQTT broker would listen in plain text on 0\.0\.0\.0, which is not loopback.*TPS_MQTT_ALLOW_PLAINTEXT=true/s,
    );
    // The same for the broker's own address.
    await expect(startTestRelay({ mqttHost: '::' })).rejects.toThrow(/plain text/);
    // Started anyway, the relay would have been listening: nothing must be.
    started.then((relay) => relay.close()).catch(() => undefined);
  });

  it('starts when the operator allows it explicitly, or on loopback', async () => {
    const allowed = await startTestRelay({ host: '0.0.0.0', mqttAllowPlaintext: 'true' });
    try {
      expect(allowed.brokerUrl).toMatch(/^mqtt:\/\/0\.0\.0\.0:\d+$/);
      expect(net.isIP(new URL(allowed.baseUrl).hostname) !== 0).toBe(true);
    } finally {
      await allowed.close();
    }
    const loopback = await startTestRelay({ host: '0.0.0.0', mqttHost: '127.0.0.1' });
    await loopback.close();
  });
});
