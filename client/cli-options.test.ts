import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { connection, localPath, type Values } from './cli-options.js';

const base: Values = { username: 'key-1', password: 'secret', terminal: 't-1900000001' };

describe("tps pos's local path settings", () => {
  it('is absent without --local', () => {
    expect(localPath(connection(base))).toBeUndefined();
  });

  it('reads the trusted certificates from the file and the preference from --local-first', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-local-ca-'));
    const file = path.join(dir, 'ca.pem');
    fs.writeFileSync(file, '-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n');
    const conn = connection({
      ...base,
      local: 'https://192.168.1.20:8443/pos',
      'local-ca': file,
      'local-first': true,
    });
    expect(localPath(conn)).toEqual({
      baseUrl: 'https://192.168.1.20:8443/pos',
      ca: fs.readFileSync(file, 'utf8'),
      serverName: 't-1900000001.tps.internal',
      prefer: 'local',
    });
  });

  it('names what is wrong', () => {
    expect(() => connection({ ...base, 'local-first': true })).toThrow(
      /--local-first: needs the terminal's local address \(--local \/ TPS_LOCAL_URL\)/,
    );
    expect(() => connection({ ...base, local: 'not a url' })).toThrow(/--local \/ TPS_LOCAL_URL/);
    const conn = connection({ ...base, local: 'https://192.0.2.1:8443/pos', 'local-ca': '/nope' });
    expect(() => localPath(conn)).toThrow(/--local-ca \/ TPS_LOCAL_CA: cannot read \/nope/);
  });
});
