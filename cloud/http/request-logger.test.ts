import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { RequestLogger } from './request-logger.js';

function capture(level: string) {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level }, stream), lines };
}

describe("a request's logger", () => {
  it('writes enabled lines with the request id, and nothing below the level', () => {
    const { logger, lines } = capture('warn');
    const log = RequestLogger.create(logger, { reqId: 'req-a' }, {});
    log.info('not written');
    log.debug({ detail: 1 }, 'not written either');
    log.warn({ code: 'X' }, 'written');
    log.info('still not written');
    log.child({ part: 'http' }).error('from a child');
    expect(lines.map(({ reqId, msg, code, part }) => ({ reqId, msg, code, part }))).toEqual([
      { reqId: 'req-a', msg: 'written', code: 'X', part: undefined },
      { reqId: 'req-a', msg: 'from a child', code: undefined, part: 'http' },
    ]);
    expect(log.level).toBe('warn');
  });

  it("follows a route's own level", () => {
    const { logger, lines } = capture('warn');
    const log = RequestLogger.create(logger, { reqId: 'req-b' }, { level: 'debug' });
    log.debug('written at the route level');
    expect(lines).toMatchObject([{ reqId: 'req-b', msg: 'written at the route level' }]);
  });

  it('follows a level raised on the request', () => {
    const { logger, lines } = capture('warn');
    const log = RequestLogger.create(logger, { reqId: 'req-c' }, {});
    log.level = 'info';
    log.info('written after the change');
    expect(lines).toMatchObject([{ reqId: 'req-c', msg: 'written after the change' }]);
    expect(logger.level).toBe('warn');
  });
});
