import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { DiagnosticReplyMessage } from '../protocol/fleet-diagnostics.js';
import type { AgentConfig } from './config.js';
import { answerDiagnostic, type DiagnosticsSources } from './fleet-diagnostics.js';
import { LogRing, keepingLines } from './fleet-logs.js';
import { createAgentLogger } from './logging.js';

const sink = () =>
  new Writable({
    write(_chunk, _encoding, done) {
      done();
    },
  });

const sources = (more: Partial<DiagnosticsSources>): DiagnosticsSources => ({
  config: {} as AgentConfig,
  clock: { now: () => new Date() },
  reader: { status: () => Promise.reject(new Error('unused')) },
  brokerConnected: () => true,
  configState: () => 'none',
  logger: pino({ level: 'silent' }),
  ...more,
});

const request = (kind: string) => ({ request_id: 'cd'.repeat(12), kind, lines: 10 });

describe('diagnostic answers', () => {
  it('carry what a reader or a log line holds of control characters as escapes, so the relay takes them', async () => {
    const ring = new LogRing();
    const logger = createAgentLogger('info', 't-1', keepingLines(ring, sink()));
    // pino escapes C0 in its JSON, not DEL or C1.
    logger.info({ model: 'R\x9b2J\x7f' }, 'reader facts');
    logger.info({ noise: '\x9b'.repeat(1900) }, 'a line that escapes grow past its bound');
    const logs = await answerDiagnostic(request('logs'), sources({ logs: ring }));
    expect(DiagnosticReplyMessage.safeParse(logs).success).toBe(true);
    expect(logs?.logs?.lines.join('\n')).toContain('R\\x9b2J\\x7f');

    const failing = {
      newest: () => {
        throw new Error('cannot read\r\n\x1b[2Jthe ring');
      },
    } as unknown as LogRing;
    const error = await answerDiagnostic(request('logs'), sources({ logs: failing }));
    expect(DiagnosticReplyMessage.safeParse(error).success).toBe(true);
    expect(error?.error).toBe('cannot read\\x0d\n\\x1b[2Jthe ring');
  });
});
