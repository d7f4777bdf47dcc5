/**
 * Every operation's body, bent: valid shapes with fields replaced by wrong types, huge and
 * deep values, removed, unknown fields added, in both revisions, with a terminal
 * credential and the account credential. Never a 5xx, never an error logged, every
 * refusal the spec's error object. `npm run fuzz` runs the same with many more runs.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATIONS, type OperationPath } from '../protocol/index.js';
import {
  OPERATION_PATHS,
  REVISIONS,
  expectErrorObject,
  sendJsonText,
  smallPngBase64,
} from './support/api.js';
import {
  bentBody,
  errorRecordingLogger,
  fuzzParameters,
  nestedArrays,
  nestedObjects,
} from './support/fuzz.js';
import { posFor, startTestRelay, type TestRelay } from './support/relay.js';

let relay: TestRelay;
let pos: ReturnType<typeof posFor>;
const { logger, errors } = errorRecordingLogger();

beforeAll(async () => {
  relay = await startTestRelay({ simulatorMode: 'in-process' }, undefined, { logger });
  pos = posFor(relay, await relay.newSimulator());
});
afterAll(async () => {
  await relay?.close();
});

/** A valid body of every operation with every optional field the spec has, for one terminal. */
function validBody(path: OperationPath, terminalId: string): Record<string, unknown> {
  const amounts = { requested_amount: 1250, currency: 'EUR', wait_seconds: 0 };
  const bodies: Record<OperationPath, Record<string, unknown>> = {
    '/transaction/purchase': {
      terminal_id: terminalId,
      external_id: 'fuzz-1',
      ...amounts,
      metadata: { order: 'o-1', lines: [1, 2] },
      options: { wait_seconds: 0 },
    },
    '/transaction/refund': {
      terminal_id: terminalId,
      external_id: 'fuzz-r1',
      ...amounts,
      original_external_id: 'fuzz-1',
      metadata: { order: 'o-1' },
    },
    '/transaction/confirm': {
      terminal_id: terminalId,
      external_id: 'fuzz-1',
      result_code: 'SUCCESS',
      captured_amount: 1250,
      metadata: { note: 'n' },
    },
    '/transaction/get': {
      terminal_id: terminalId,
      external_id: 'fuzz-1',
      wait_seconds: 0,
      options: { extra_amounts: true, wait_seconds: 0 },
    },
    '/transaction/continue': {
      terminal_id: terminalId,
      external_id: 'fuzz-1',
      wait_seconds: 0,
      metadata: { a: 1 },
    },
    '/transaction/unconfirmed': { terminal_id: terminalId },
    '/terminal/status': { terminal_id: terminalId },
    '/terminal/print': {
      terminal_id: terminalId,
      format: 'PNG',
      contents: smallPngBase64(),
      continue: false,
    },
    '/event/list': {
      filter: { subject: { eq: terminalId }, type: { eq: 'eu.vendor.api.pos.v0.Transaction' } },
      limit: 10,
      wait_seconds: 0,
    },
    '/webhook/create': {
      url: 'https://127.0.0.1:9/hooks',
      filter: { subject: { eq: terminalId } },
      mode: 'ALL',
    },
    '/webhook/list': {},
    '/webhook/delete': { id: `wh-${'0'.repeat(26)}` },
    '/webhook/enable': { id: `wh-${'0'.repeat(26)}` },
    '/webhook/disable': { id: `wh-${'0'.repeat(26)}` },
    '/terminal/create': { printer: true, battery: false },
    '/simulator/create': {},
    '/terminal/claim': {
      code: 'ABCD-EFGH',
      name: 'till 1',
      cohort: 'cohort-front',
      printer: true,
      battery: false,
    },
    '/transaction/search': {
      terminal_id: terminalId,
      external_id: 'fuzz-1',
      state: 'COMMITTED',
      result_code: 'SUCCESS',
      created_from: '2026-01-01T00:00:00Z',
      created_to: '2027-01-01T00:00:00Z',
      limit: 10,
    },
    '/terminal/list': {},
    '/terminal/local-trust': { terminal_id: terminalId },
    '/credential/revoke': { type: 'API', username: 'nobody' },
    '/credential/rotate': { type: 'API', username: 'nobody' },
    '/fleet/config/set': {
      scope: { terminal_id: terminalId },
      config: {
        heartbeat_s: 30,
        log_level: 'info',
        printer_head_width: 384,
        idle_screen_text: 'Welcome',
        reader: { baud_rate: 9600, profile: 'generic' },
        maintenance_window: { start: '02:00', end: '04:00' },
      },
    },
    '/fleet/config/get': { scope: { cohort: 'cohort-front' } },
    '/fleet/config/merchant-settings/get': {},
    '/fleet/config/merchant-settings/set': { settings: ['heartbeat_s', 'idle_screen_text'] },
    '/fleet/facts': { terminal_id: terminalId, cohort: 'cohort-front' },
    '/fleet/diagnostics': { terminal_id: terminalId, kind: 'logs', lines: 10, wait_seconds: 1 },
    '/fleet/end-of-day': { terminal_id: terminalId },
    '/account/create': { name: 'Fuzz cafe' },
    '/account/list': {},
    '/account/get': { account_id: 'acct-nobody' },
    '/account/disable': { account_id: 'acct-nobody' },
    '/account/enable': { account_id: 'acct-nobody' },
    '/account/credential/add': { account_id: 'acct-nobody' },
  };
  return bodies[path];
}

/** A bent body never waits: a wait in it becomes 0, so no run parks for minutes. */
function noWaiting(body: unknown): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  const record = { ...(body as Record<string, unknown>) };
  if (typeof record.wait_seconds === 'number' && record.wait_seconds > 0) record.wait_seconds = 0;
  const options = record.options;
  if (typeof options === 'object' && options !== null && !Array.isArray(options)) {
    const waits = (options as Record<string, unknown>).wait_seconds;
    if (typeof waits === 'number' && waits > 0) record.options = { ...options, wait_seconds: 0 };
  }
  return record;
}

/** The answer is a 2xx or a 4xx with the error object, never a 5xx. */
function expectNoFault(res: { status: number; body: unknown; text?: string }, sent: string) {
  const context = `HTTP ${res.status} ${res.text?.slice(0, 300)} for ${sent.slice(0, 300)}`;
  expect(res.status, context).toBeLessThan(500);
  if (res.status >= 400) expectErrorObject(res);
  else expect(typeof res.body, context).toBe('object');
}

/** External ids a create was answered 2xx for: those exist, whatever came after. */
const created = new Set<string>();

/**
 * Never a partial write: a purchase or refund refused with a 4xx left no transaction
 * behind (its external id still answers 404, or 400 when the id itself is not one).
 */
async function expectNothingWrittenIfRefused(
  path: OperationPath,
  body: unknown,
  status: number,
  sent: string,
): Promise<void> {
  if (path !== '/transaction/purchase' && path !== '/transaction/refund') return;
  if (typeof body !== 'object' || body === null) return;
  const { terminal_id: terminalId, external_id: externalId } = body as Record<string, unknown>;
  if (terminalId !== pos.terminalId || typeof externalId !== 'string') return;
  if (status < 300) {
    created.add(externalId);
    return;
  }
  if (created.has(externalId)) return;
  const got = await sendJsonText(
    relay.baseUrl,
    'v1',
    '/transaction/get',
    relay.account,
    JSON.stringify({ terminal_id: terminalId, external_id: externalId, wait_seconds: 0 }),
  );
  expect([400, 404], `refused with ${status}, yet stored: ${sent.slice(0, 300)}`).toContain(
    got.status,
  );
}

// Operations that make things (simulators, terminals) are fuzzed with fewer runs.
const EXPENSIVE = new Set<OperationPath>(['/simulator/create', '/terminal/create']);

describe.each(OPERATION_PATHS)('%s, bent', (path) => {
  it('never answers a 5xx, and refuses with the error object', async () => {
    const valid = validBody(path, pos.terminalId);
    expect(Object.keys(OPERATIONS)).toContain(path);
    await fc.assert(
      fc.asyncProperty(
        bentBody(valid),
        fc.constantFrom(...REVISIONS),
        fc.boolean(),
        async (body, revision, asAccount) => {
          const text = JSON.stringify(noWaiting(body)) ?? 'null';
          const credential = asAccount ? relay.account : pos.credential;
          const res = await sendJsonText(relay.baseUrl, revision, path, credential, text);
          expectNoFault(res, text);
          await expectNothingWrittenIfRefused(path, body, res.status, text);
        },
      ),
      fuzzParameters(EXPENSIVE.has(path) ? 5 : 25),
    );
    expect(errors).toEqual([]);
  });
});

describe('deep JSON text', () => {
  it.each([1_000, 10_000, 100_000])(
    'a field nested %i levels deep is refused with the error object',
    async (depth) => {
      for (const path of OPERATION_PATHS.filter((p) => !EXPENSIVE.has(p))) {
        const deep = `${'['.repeat(depth)}${']'.repeat(depth)}`;
        for (const field of ['metadata', 'terminal_id', 'filter', 'unknown_field']) {
          const text = `{"terminal_id":"${pos.terminalId}","wait_seconds":0,"${field}":${deep}}`;
          expectNoFault(await sendJsonText(relay.baseUrl, 'v1', path, pos.credential, text), text);
        }
      }
      expect(errors).toEqual([]);
    },
  );

  it('deep values built as objects and arrays reach the schema and are refused', async () => {
    for (const deep of [nestedArrays(2_000), nestedObjects(2_000)]) {
      const text = JSON.stringify({
        ...validBody('/transaction/purchase', pos.terminalId),
        metadata: deep,
      });
      const res = await sendJsonText(
        relay.baseUrl,
        'v1',
        '/transaction/purchase',
        pos.credential,
        text,
      );
      expectNoFault(res, text);
    }
    expect(errors).toEqual([]);
  });
});
