import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { LogLevels, LogRing, MAX_KEPT_LINE, keepingLines } from './fleet-logs.js';
import { createAgentLogger } from './logging.js';
import { partLogger } from '../common/logging.js';

const sink = () =>
  new Writable({
    write(_chunk, _encoding, done) {
      done();
    },
  });

describe('the agent’s kept log lines', () => {
  it('keeps the newest lines, a bounded number of bounded length, redacted as written', () => {
    const ring = new LogRing(3);
    const logger = createAgentLogger('info', 't-1', keepingLines(ring, sink()));
    for (let i = 1; i <= 5; i++) logger.info({ broker: { password: `secret-${i}` } }, `line ${i}`);
    logger.info('x'.repeat(MAX_KEPT_LINE * 2));
    const lines = ring.newest(10);
    expect(lines).toHaveLength(3);
    expect(lines[0]).toContain('line 4');
    expect(lines[1]).toContain('line 5');
    expect(lines[2]!.length).toBeLessThanOrEqual(MAX_KEPT_LINE + 10);
    expect(lines.join('\n')).not.toMatch(/secret-\d/);
    expect(ring.newest(1)).toEqual([lines[2]]);
  });

  it('sets the level of the root logger and of every child made from it', () => {
    const ring = new LogRing();
    const levels = new LogLevels();
    const root = createAgentLogger('warn', 't-1', keepingLines(ring, sink()), levels.onChild);
    levels.root = root;
    const part = partLogger(partLogger(root, 'link'), 'socket');
    part.info('before');
    levels.set('info');
    part.info('after');
    root.info('root after');
    expect(ring.newest(10).map((l) => JSON.parse(l).msg)).toEqual(['after', 'root after']);
  });
});
