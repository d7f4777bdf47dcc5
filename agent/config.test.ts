import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentConfigError, loadAgentConfig, parseAgentConfig } from './config.js';

const EXAMPLE = {
  terminal_id: 'T-0001',
  broker: { url: 'mqtts://relay.example.com:8883', username: 'T-0001', password: 'correct horse' },
  reader: { port: '/dev/ttyACM0' },
};

function problemsOf(raw: unknown, dir = '/etc/tps-agent'): string[] {
  const result = parseAgentConfig(raw, dir);
  return result.ok ? [] : result.problems;
}

describe('agent config', () => {
  it('accepts the minimal example and fills the defaults', () => {
    const result = parseAgentConfig(EXAMPLE, '/etc/tps-agent');
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.config).toMatchObject({
      heartbeat_s: 30,
      data_dir: '/var/lib/tps-agent',
      log_level: 'info',
      printer: { type: 'none' },
      reader: { port: '/dev/ttyACM0', baud_rate: 115_200 },
      broker: { keepalive_s: 30 },
    });
  });

  it('names every problem, field by field', () => {
    const problems = problemsOf({
      terminal_id: 'T 1',
      broker: { url: 'http://relay', username: 'x', password: 'y', extra: 1 },
      reader: { port: '/dev/ttyACM0' },
      printer: { type: 'usb' },
      heartbeat_s: 0,
      log_level: 'loud',
      typo: true,
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^terminal_id: /),
        expect.stringMatching(/^broker\.url: must be an mqtt:\/\/ or mqtts:\/\/ URL/),
        expect.stringMatching(/^broker: Unrecognized key: "extra"/),
        expect.stringMatching(/^printer\.type: /),
        expect.stringMatching(/^heartbeat_s: /),
        expect.stringMatching(/^log_level: /),
        expect.stringMatching(/Unrecognized key: "typo"/),
      ]),
    );
  });

  it('says which required field is missing', () => {
    expect(problemsOf({})).toEqual([
      'terminal_id: is required',
      'broker: is required',
      'reader: is required',
    ]);
  });

  it('checks the credentials and the reader choice', () => {
    expect(problemsOf({ ...EXAMPLE, broker: { url: 'mqtt://relay:1883' } })).toEqual([
      'broker.password: give broker.username and broker.password, or broker.cert and broker.key',
    ]);
    expect(problemsOf({ ...EXAMPLE, broker: { url: 'mqtt://relay', cert: 'a.pem' } })).toEqual(
      expect.arrayContaining([
        'broker.key: broker.cert and broker.key must be given together',
        'broker.cert: needs an mqtts:// broker.url (TLS)',
      ]),
    );
    expect(problemsOf({ ...EXAMPLE, broker: { url: 'mqtt://relay', password: 'p' } })).toEqual([
      'broker.username: is required with broker.password',
    ]);
    expect(problemsOf({ ...EXAMPLE, reader: {} })).toEqual([
      'reader.port: give exactly one of reader.port (a serial device) or reader.emulated',
    ]);
    expect(
      problemsOf({ ...EXAMPLE, printer: { type: 'tcp', host: 'p', head_width: 500 } }),
    ).toEqual(['printer.head_width: must be a multiple of 8 dots']);
  });

  it('takes a ZVT terminal on a serial device or over TCP, with its own line defaults', () => {
    const zvt = (reader: object) => parseAgentConfig({ ...EXAMPLE, reader }, '/etc/tps-agent');
    expect(zvt({ protocol: 'zvt', port: '/dev/ttyUSB0' })).toMatchObject({
      ok: true,
      config: { reader: { protocol: 'zvt', port: '/dev/ttyUSB0', baud_rate: 9600 } },
    });
    expect(
      zvt({ protocol: 'zvt', tcp: '192.168.1.50:20007', password: '123456', profile: 'generic' }),
    ).toMatchObject({
      ok: true,
      config: { reader: { protocol: 'zvt', tcp: '192.168.1.50:20007', password: '123456' } },
    });
    expect(zvt({ port: '/dev/ttyACM0' })).toMatchObject({
      ok: true,
      config: { reader: { protocol: 'native', baud_rate: 115_200 } },
    });
    // A terminal that sends ISO 8859-1 without announcing it (docs/zvt.md, "Character sets").
    expect(zvt({ protocol: 'zvt', port: '/dev/ttyUSB0', charset: 'iso-8859-1' })).toMatchObject({
      ok: true,
      config: { reader: { charset: 'iso-8859-1' } },
    });
  });

  it('names every mistake in a ZVT reader', () => {
    const problems = (reader: object) => problemsOf({ ...EXAMPLE, reader });
    expect(problems({ protocol: 'zvt' })).toEqual([
      'reader.port: give exactly one of reader.port (a serial device), reader.tcp (HOST:PORT) or reader.emulated',
    ]);
    expect(problems({ protocol: 'zvt', port: '/dev/ttyUSB0', tcp: 'pt:20007' })).toEqual([
      'reader.port: give exactly one of reader.port (a serial device), reader.tcp (HOST:PORT) or reader.emulated',
    ]);
    expect(problems({ protocol: 'zvt', tcp: 'pt:20007', baud_rate: 9600 })).toEqual([
      'reader.baud_rate: has no meaning with reader.tcp (a network connection)',
    ]);
    for (const tcp of ['pt', 'pt:', 'pt:0', 'pt:70000', 'tcp://pt:20007', ':20007']) {
      expect(problems({ protocol: 'zvt', tcp })).toEqual([
        'reader.tcp: must be HOST:PORT with a port 1-65535, e.g. 192.168.1.50:20007',
      ]);
    }
    expect(problems({ protocol: 'zvt', tcp: 'pt:20007', password: '12345' })).toEqual([
      'reader.password: must be the terminal\'s password, 6 digits, e.g. "000000"',
    ]);
    expect(problems({ protocol: 'ZVT', port: '/dev/ttyUSB0' })).toEqual([
      expect.stringMatching(/^reader\.protocol: .*"native".*"zvt"/),
    ]);
    expect(problems({ port: '/dev/ttyACM0', tcp: 'pt:20007', password: '000000' })).toEqual([
      'reader.tcp: is for reader.protocol "zvt"; the native reader is on a serial device',
      'reader.password: is for reader.protocol "zvt" only',
    ]);
    expect(problems({ port: '/dev/ttyACM0', charset: 'cp437' })).toEqual([
      'reader.charset: is for reader.protocol "zvt" only',
    ]);
    expect(problems({ protocol: 'zvt', port: '/dev/ttyUSB0', charset: 'latin1' })).toEqual([
      expect.stringMatching(/^reader\.charset: .*"cp437".*"iso-8859-1"/),
    ]);
  });

  it('resolves paths against the config file and checks that key files are readable', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'agent-config-'));
    writeFileSync(path.join(dir, 'ca.pem'), 'x');
    const result = parseAgentConfig(
      {
        ...EXAMPLE,
        broker: { url: 'mqtts://relay', cert: 'agent.pem', key: 'agent.key', ca: 'ca.pem' },
        reader: { emulated: { state_file: 'reader.jsonl' } },
        data_dir: 'data',
      },
      dir,
    );
    expect(result).toEqual({
      ok: false,
      problems: [
        `broker.cert: cannot read ${path.join(dir, 'agent.pem')}`,
        `broker.key: cannot read ${path.join(dir, 'agent.key')}`,
      ],
    });
    writeFileSync(path.join(dir, 'agent.pem'), 'x');
    writeFileSync(path.join(dir, 'agent.key'), 'x');
    writeFileSync(
      path.join(dir, 'agent.json'),
      JSON.stringify({
        ...EXAMPLE,
        broker: { url: 'mqtts://relay', cert: 'agent.pem', key: 'agent.key' },
        reader: { emulated: { state_file: 'reader.jsonl' } },
        data_dir: 'data',
      }),
    );
    const config = loadAgentConfig(path.join(dir, 'agent.json'));
    expect(config.broker.cert).toBe(path.join(dir, 'agent.pem'));
    expect(config.reader.emulated?.state_file).toBe(path.join(dir, 'reader.jsonl'));
    expect(config.data_dir).toBe(path.join(dir, 'data'));
  });

  it('reports an unreadable or malformed file as one problem', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'agent-config-'));
    const file = path.join(dir, 'agent.json');
    expect(() => loadAgentConfig(file)).toThrow(AgentConfigError);
    writeFileSync(file, '{"terminal_id": ');
    try {
      loadAgentConfig(file);
      expect.unreachable();
    } catch (error) {
      expect((error as AgentConfigError).problems).toEqual([
        expect.stringMatching(/^not valid JSON: /),
      ]);
      expect((error as Error).message).toContain(file);
    }
  });
});
