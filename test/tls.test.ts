/** With TPS_TLS_CERT and TPS_TLS_KEY the relay serves HTTPS, TLS 1.2 or later only. */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  basicAuth,
  startTestRelay,
  tempDataDir,
  TEST_ACCOUNT,
  type TestRelay,
} from './support/relay.js';

const hasOpenssl = (() => {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

describe.skipIf(!hasOpenssl)('HTTPS', () => {
  let relay: TestRelay;
  let cert: Buffer;
  beforeAll(async () => {
    const dir = tempDataDir();
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
    cert = fs.readFileSync(certFile);
    relay = await startTestRelay({ tlsCert: certFile, tlsKey: keyFile }, path.join(dir, 'data'));
  });
  afterAll(async () => {
    await relay?.close();
  });

  const request = (options: https.RequestOptions, body: string) =>
    new Promise<{ status: number; protocol: string | null; body: string }>((resolve, reject) => {
      const req = https.request(options, (res) => {
        let text = '';
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            protocol: (res.socket as tls.TLSSocket).getProtocol(),
            body: text,
          }),
        );
      });
      req.on('error', reject);
      req.end(body);
    });

  it('answers the API over TLS 1.2 or later with the configured certificate', async () => {
    expect(relay.baseUrl).toMatch(/^https:\/\//);
    const url = new URL(`${relay.baseUrl}/v1/simulator/create`);
    const answer = await request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        ca: cert,
        agent: false,
        headers: { authorization: basicAuth(TEST_ACCOUNT), 'content-type': 'application/json' },
      },
      '{}',
    );
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body).terminal_id).toMatch(/^t-\d+$/);
    expect(['TLSv1.2', 'TLSv1.3']).toContain(answer.protocol);
  });

  it('marks the console session cookie Secure over HTTPS', async () => {
    const url = new URL(relay.baseUrl);
    const cookie = await new Promise<string | undefined>((resolve, reject) => {
      const req = https.request(
        {
          host: url.hostname,
          port: url.port,
          path: '/console/session',
          method: 'POST',
          ca: cert,
          agent: false,
          headers: { 'content-type': 'application/json' },
        },
        (res) => {
          res.resume();
          resolve(res.headers['set-cookie']?.[0]);
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify(TEST_ACCOUNT));
    });
    expect(cookie).toMatch(/^tps_console=/);
    expect(cookie).toMatch(/; Secure/);
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
  });

  it('refuses TLS 1.1', async () => {
    const url = new URL(relay.baseUrl);
    const outcome = await new Promise<string>((resolve) => {
      const socket = tls.connect({
        host: url.hostname,
        port: Number(url.port),
        ca: cert,
        minVersion: 'TLSv1',
        maxVersion: 'TLSv1.1',
        ciphers: 'DEFAULT@SECLEVEL=0',
      });
      socket.once('secureConnect', () => {
        socket.destroy();
        resolve('connected');
      });
      socket.once('error', () => resolve('refused'));
    });
    expect(outcome).toBe('refused');
  });
});
