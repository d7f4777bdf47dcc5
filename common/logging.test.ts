import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { logDestination, partLogger, partMixin } from './logging.js';

function capture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString().trim());
      done();
    },
  });
  return { lines, logger: pino({ mixin: partMixin }, stream) };
}

describe('part loggers', () => {
  it('write one part key per line, the path of nested parts', async () => {
    const { lines, logger } = capture();
    const simulator = partLogger(logger, 'simulator');
    const terminal = simulator.child({ terminalId: 't-1' });
    partLogger(partLogger(terminal, 'agent'), 'link').info('connected');
    simulator.warn('plain');
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines[0]!.match(/"part":/g)).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      part: 'simulator/agent/link',
      terminalId: 't-1',
      msg: 'connected',
    });
    expect(JSON.parse(lines[1]!)).toMatchObject({ part: 'simulator', msg: 'plain' });
  });

  it('leave lines of the root logger without a part', async () => {
    const { lines, logger } = capture();
    logger.info('root');
    await new Promise((resolve) => setImmediate(resolve));
    expect(JSON.parse(lines[0]!)).not.toHaveProperty('part');
  });

  it('writes readable lines when asked, with the part first and secrets still redacted', async () => {
    const lines: string[] = [];
    const output = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const logger = pino(
      {
        mixin: partMixin,
        hooks: { streamWrite: (line: string) => line.replaceAll('s3cret', '[redacted]') },
      },
      logDestination('pretty', output),
    );
    partLogger(logger, 'link').info({ password: 's3cret', terminalId: 't-1' }, 'connected');
    await new Promise((resolve) => setImmediate(resolve));
    const text = lines.join('');
    expect(text).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: \[link\] connected\n/);
    expect(text).toContain('terminalId: "t-1"');
    expect(text).not.toContain('s3cret');
    expect(text).not.toContain('{"level"');
  });

  it('keeps JSON lines when the output is not a terminal', () => {
    const output = new Writable({ write: (_c, _e, done) => done() });
    expect(logDestination('auto', output)).toBe(output);
    expect(logDestination('json', process.stdout)).toBeUndefined();
  });
});
