import { describe, expect, it } from 'vitest';
import { DiagnosticReplyMessage } from './fleet-diagnostics.js';
import {
  maskDiagnosticReplyText,
  maskFreeText,
  maskReportText,
  maskUpdateStatusText,
} from './free-text.js';
import { TerminalReport } from './terminal-link.js';
import { UpdateStatusMessage } from './update.js';

const PAN = '4111111111111111';
const MASKED = '411111******1111';

describe('the free text of what a terminal says', () => {
  it('masks card numbers in each free-text member, keeps the schema, and leaves the input alone', () => {
    const report = TerminalReport.parse({
      type: 'transaction',
      transaction_id: 'tx-1',
      phase: 'COMPLETED',
      result_code: 'SUCCESS',
      result_description: `Approved ${PAN}`,
      details: {
        payment_method_details: { payment_method: 'CARD', application_name: PAN },
        receipt_details_customer: `CARD ${PAN}\n`,
        dcc: { provider: `P ${PAN}` },
        reference: '123456789012',
      },
    });
    const before = JSON.stringify(report);
    const masked = maskReportText(report);
    expect(JSON.stringify(report)).toBe(before);
    expect(masked.fields).toEqual([
      'result_description',
      'details.receipt_details_customer',
      'details.payment_method_details.application_name',
      'details.dcc.provider',
    ]);
    expect(TerminalReport.parse(masked.value)).toEqual(masked.value);
    expect(JSON.stringify(masked.value)).not.toContain(PAN);
    expect(masked.value).toMatchObject({
      result_description: `Approved ${MASKED}`,
      details: { reference: '123456789012', receipt_details_customer: `CARD ${MASKED}\n` },
    });
  });

  it('masks every element of arrays, and ids and versions are no free text', () => {
    const reply = DiagnosticReplyMessage.parse({
      request_id: '0123456789abcdef',
      kind: 'logs',
      error: `e ${PAN}`,
      doctor: {
        checks: [
          { status: 'ok', title: 'a' },
          { status: 'warn', title: PAN },
        ],
      },
      logs: { lines: ['fine', `line ${PAN}`], truncated: false },
      trace: {
        transaction_id: PAN,
        frames: [{ at: '2026-01-01T00:00:00.000Z', direction: 'reader→host', text: PAN }],
        truncated: false,
      },
    });
    const masked = maskDiagnosticReplyText(reply);
    expect(masked.fields).toEqual([
      'error',
      'doctor.checks[].title',
      'logs.lines[]',
      'trace.frames[].text',
    ]);
    expect(masked.value.logs!.lines).toEqual(['fine', `line ${MASKED}`]);
    expect(masked.value.doctor!.checks[0]).toBe(reply.doctor!.checks[0]);
    expect(masked.value.trace!.transaction_id).toBe(PAN);

    const status = UpdateStatusMessage.parse({
      phase: 'idle',
      last: {
        order_id: PAN,
        version: '1.2.3',
        result: 'failed',
        reason: `disk ${PAN}`,
        at: '2026-01-01T00:00:00.000Z',
      },
      at: '2026-01-01T00:00:00.000Z',
    });
    expect(maskUpdateStatusText(status).value.last).toMatchObject({
      order_id: PAN,
      reason: `disk ${MASKED}`,
    });
  });

  it('returns the very input when nothing is masked, and tolerates any shape', () => {
    const value = { a: { b: ['x', 1, null] } };
    expect(maskFreeText(value, ['a.b[]', 'a.c', 'z.y[].x'])).toEqual({ value, fields: [] });
    expect(maskFreeText(value, ['a.b[]']).value).toBe(value);
    expect(maskFreeText(null, ['a.b']).value).toBeNull();
    expect(maskFreeText({ a: 'x' }, ['a.b[]', 'a[]']).fields).toEqual([]);
  });
});
