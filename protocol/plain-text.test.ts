/**
 * Every text field of the agent's fleet messages refuses what a terminal would obey, and
 * the multi-line ones keep their newlines.
 */
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { ConfigReportMessage } from './fleet-config.js';
import { DiagnosticReplyMessage, FactsMessage } from './fleet-diagnostics.js';
import { PresenceMessage } from './mqtt.js';
import { UpdateStatusMessage } from './update.js';

const at = '2026-11-27T10:00:00.000Z';
const requestId = 'ab'.repeat(12);

/** A valid message and where its free text is: [path, multi-line]. */
const CASES: Array<{
  name: string;
  schema: z.ZodType;
  valid: Record<string, unknown>;
  fields: Array<[Array<string | number>, boolean]>;
}> = [
  {
    name: 'facts',
    schema: FactsMessage,
    valid: { agent_version: '1.4.0', reader: { protocol: 'zvt', model: 'X', firmware: 'F' }, at },
    fields: [
      [['agent_version'], false],
      [['reader', 'protocol'], false],
      [['reader', 'model'], false],
      [['reader', 'firmware'], false],
    ],
  },
  {
    name: 'config report',
    schema: ConfigReportMessage,
    valid: { version: 'a'.repeat(16), status: 'REJECTED', reason: 'no such profile', at },
    fields: [[['reason'], false]],
  },
  {
    name: 'update status',
    schema: UpdateStatusMessage,
    valid: {
      phase: 'some-new-phase',
      last: { order_id: 'o-1', version: '1.4.0', result: 'some-new-result', reason: 'x', at },
      at,
    },
    fields: [
      [['phase'], false],
      [['last', 'result'], false],
      [['last', 'reason'], false],
    ],
  },
  {
    name: 'presence',
    schema: PresenceMessage,
    valid: { connected: true, agent_version: '1.4.0' },
    fields: [[['agent_version'], false]],
  },
  {
    name: 'doctor reply',
    schema: DiagnosticReplyMessage,
    valid: {
      request_id: requestId,
      kind: 'doctor',
      doctor: { checks: [{ status: 'fail', title: 'reader', detail: 'timed out' }] },
    },
    fields: [
      [['doctor', 'checks', 0, 'title'], false],
      [['doctor', 'checks', 0, 'detail'], true],
    ],
  },
  {
    name: 'logs reply',
    schema: DiagnosticReplyMessage,
    valid: { request_id: requestId, kind: 'logs', logs: { lines: ['a line'], truncated: false } },
    fields: [[['logs', 'lines', 0], true]],
  },
  {
    name: 'trace reply',
    schema: DiagnosticReplyMessage,
    valid: {
      request_id: requestId,
      kind: 'trace',
      trace: {
        transaction_id: 'tx-1',
        frames: [{ at, direction: 'host→reader', text: 'frame' }],
        truncated: false,
      },
    },
    fields: [
      [['trace', 'transaction_id'], false],
      [['trace', 'frames', 0, 'text'], true],
    ],
  },
  {
    name: 'error reply',
    schema: DiagnosticReplyMessage,
    valid: { request_id: requestId, kind: 'logs', error: 'no log lines' },
    fields: [[['error'], true]],
  },
];

function withText(body: unknown, path: Array<string | number>, text: string): unknown {
  const copy = structuredClone(body) as Record<string | number, unknown>;
  let at = copy;
  for (const key of path.slice(0, -1)) at = at[key] as Record<string | number, unknown>;
  at[path.at(-1)!] = text;
  return copy;
}

const OBEYED = {
  'ESC (OSC 52)': '\x1b]52;c;ZXZpbA==\x07',
  'ESC (cursor up)': 'x\x1b[1A',
  NUL: 'a\x00b',
  BEL: 'a\x07',
  'carriage return': 'NOT in sync\rin sync    ',
  DEL: 'a\x7f',
  'C1 CSI': 'a\x9b2J',
  'C1 NEL': 'a\x85',
  'bidi override': 'abc\u202edef',
  'line separator': 'a\u2028b',
};

describe('fleet messages refuse control characters in their text', () => {
  for (const { name, schema, valid, fields } of CASES) {
    it(name, () => {
      expect(schema.safeParse(valid).success).toBe(true);
      for (const [path, multiline] of fields) {
        for (const [what, text] of Object.entries(OBEYED)) {
          const parsed = schema.safeParse(withText(valid, path, text));
          expect(parsed.success, `${path.join('.')} with ${what}`).toBe(false);
        }
        const lines = schema.safeParse(withText(valid, path, 'one\n\ttwo'));
        expect(lines.success, `${path.join('.')} with a newline`).toBe(multiline);
        const unicode = schema.safeParse(withText(valid, path, 'Lesegerät — ok ✓'));
        expect(unicode.success, `${path.join('.')} with letters and marks`).toBe(true);
      }
    });
  }
});
