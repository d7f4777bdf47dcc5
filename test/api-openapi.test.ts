/**
 * The OpenAPI documents against reality: each revision answers an OpenAPI 3.1 document,
 * and the real answers of a full run (every operation, success and error) validate against
 * that document's schema for their path and status. Also the revision differences a POS
 * sees: timestamp lengths and where `refundable_amount` lives.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import formatsPlugin from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Validator } from '@seriousme/openapi-schema-validator';
import { OPERATIONS, PAIRING_OPERATIONS } from '../protocol/index.js';
import { REVISIONS, send, smallPngBase64, type Rev } from './support/api.js';
import { basicAuth, post, posFor, startTestRelay, type TestRelay } from './support/relay.js';

// ajv-formats is CommonJS; under NodeNext its default export is the module object.
const addFormats = ((formatsPlugin as unknown as { default?: unknown }).default ??
  formatsPlugin) as unknown as (ajv: Ajv2020) => Ajv2020;

interface OpenApiDocument {
  openapi: string;
  components: { schemas: Record<string, object> };
  info: { version: string };
  servers: Array<{ url: string }>;
  paths: Record<
    string,
    {
      post: {
        requestBody: { content: { 'application/json': { schema: object } } };
        responses: Record<string, { content?: { 'application/json': { schema: object } } }>;
      };
    }
  >;
}

interface Observed {
  path: string;
  status: number;
  body: unknown;
  label: string;
}

/** `value` with its references to the document's components pointing at an ajv schema of them. */
function rebased<T>(value: T): T {
  return JSON.parse(
    JSON.stringify(value).replaceAll('"#/components/schemas/', '"components#/$defs/'),
  ) as T;
}

/** Every timestamp member of a transaction or terminal status. */
const TIMESTAMP_KEYS = ['created_at', 'updated_at', 'confirmed_at'];

/** Collects every timestamp of an answer (transactions and terminal status), recursively. */
function timestampsOf(value: unknown, found: string[] = []): string[] {
  if (Array.isArray(value)) {
    for (const item of value) timestampsOf(item, found);
  } else if (typeof value === 'object' && value !== null) {
    for (const [key, member] of Object.entries(value)) {
      if (TIMESTAMP_KEYS.includes(key) && typeof member === 'string') found.push(member);
      else if (key !== 'metadata') timestampsOf(member, found);
    }
  }
  return found;
}

describe('OpenAPI documents', () => {
  let relay: TestRelay;
  beforeAll(async () => {
    relay = await startTestRelay();
  });
  afterAll(async () => {
    await relay.close();
  });

  describe.each(REVISIONS)('%s', (revision: Rev) => {
    let doc: OpenApiDocument;
    let ajv: Ajv2020;
    const validators = new Map<string, ValidateFunction>();
    const observed: Observed[] = [];

    /** The validator of the document's schema for a path and status; undefined if undocumented. */
    function validatorFor(path: string, status: number) {
      const key = `${path} ${status}`;
      if (!validators.has(key)) {
        const schema =
          doc.paths[path]?.post.responses[String(status)]?.content?.['application/json'].schema;
        if (!schema) return undefined;
        validators.set(key, ajv.compile(rebased(schema)));
      }
      return validators.get(key);
    }

    beforeAll(async () => {
      const res = await fetch(`${relay.baseUrl}/${revision}/openapi.json`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      doc = (await res.json()) as OpenApiDocument;
      ajv = addFormats(new Ajv2020({ allErrors: true, strict: true }));
      ajv.addSchema({ $id: 'components', $defs: rebased(doc.components.schemas) });

      // A full run: every operation, the revision's success shapes and its errors.
      const sim = await relay.newSimulator();
      const pos = posFor(relay, sim, revision);
      const record = async (label: string, path: string, body: Record<string, unknown>) => {
        const res = await pos.call(path, body);
        observed.push({ label, path, status: res.status, body: res.body });
        return res;
      };
      const recordRaw = async (label: string, path: string, init: Parameters<typeof send>[3]) => {
        const res = await send(relay.baseUrl, revision, path, init);
        observed.push({ label, path, status: res.status, body: res.body });
        return res;
      };
      const auth = basicAuth(pos.credential);

      const simulator = await post(relay.baseUrl, revision, '/simulator/create', {}, relay.account);
      observed.push({
        label: 'simulator create',
        path: '/simulator/create',
        status: simulator.status,
        body: simulator.body,
      });
      await record('status while ready', '/terminal/status', {});
      await record('local trust', '/terminal/local-trust', {});
      await record('print of a small PNG', '/terminal/print', {
        contents: smallPngBase64(),
        format: 'PNG',
      });
      await record('purchase answered at once (PROCESSING)', '/transaction/purchase', {
        external_id: 'p-1',
        requested_amount: 1250,
        currency: 'EUR',
        metadata: { order: 'A-17', lines: [{ sku: 'X', qty: 2 }] },
        options: { wait_seconds: 0 },
      });
      await record('status while processing', '/terminal/status', {});
      await record('purchase repeated until done', '/transaction/purchase', {
        external_id: 'p-1',
        requested_amount: 1250,
        currency: 'EUR',
        options: { wait_seconds: 10 },
      });
      await record('unconfirmed with one transaction', '/transaction/unconfirmed', {});
      await record('confirm success', '/transaction/confirm', {
        external_id: 'p-1',
        result_code: 'SUCCESS',
        metadata: { receipt: 'printed' },
      });
      await record('get with extra_amounts', '/transaction/get', {
        external_id: 'p-1',
        options: { extra_amounts: true },
      });
      await record('get without extra_amounts', '/transaction/get', { external_id: 'p-1' });
      await record('refund of the purchase', '/transaction/refund', {
        external_id: 'r-1',
        requested_amount: 500,
        currency: 'EUR',
        original_purchase_external_id: 'p-1',
        options: { wait_seconds: 10 },
      });
      await record('confirm the refund', '/transaction/confirm', {
        external_id: 'r-1',
        result_code: 'SUCCESS',
      });
      await record('get of the refund with extra_amounts', '/transaction/get', {
        external_id: 'r-1',
        options: { extra_amounts: true },
      });
      await record('get after the refund with extra_amounts', '/transaction/get', {
        external_id: 'p-1',
        options: { extra_amounts: true },
      });
      await record('purchase that pauses', '/transaction/purchase', {
        external_id: 'p-2',
        requested_amount: 2000,
        currency: 'EUR',
        options: { on_customer_identified: { pause: true }, wait_seconds: 10 },
      });
      await record('status while paused', '/terminal/status', {});
      await record('continue', '/transaction/continue', {
        external_id: 'p-2',
        requested_amount: 1800,
        metadata: { loyalty: 'gold' },
        options: { wait_seconds: 10 },
      });
      await record('confirm the continued purchase', '/transaction/confirm', {
        external_id: 'p-2',
        result_code: 'SUCCESS',
        captured_amount: 1800,
      });
      for (const [amount, what] of [
        [100006, 'declined'],
        [100017, 'tip'],
        [100018, 'surcharge'],
        [100019, 'dcc'],
        [100021, 'customer identity'],
        [100014, 'magnetic stripe'],
      ] as const) {
        const externalId = `p-${amount}`;
        const done = await record(`purchase with ${what}`, '/transaction/purchase', {
          external_id: externalId,
          requested_amount: amount,
          currency: 'EUR',
          cashback_amount: what === 'tip' ? 100 : undefined,
          options: { wait_seconds: 10 },
        });
        const code = done.body?.transaction?.result_code ?? 'ABORTED';
        await record(`confirm ${what}`, '/transaction/confirm', {
          external_id: externalId,
          result_code: code,
          ...(code === 'SUCCESS' ? {} : { result_description: 'Declined at the register' }),
        });
      }
      await record('confirm failure of a pair never seen', '/transaction/confirm', {
        external_id: 'p-never',
        result_code: 'ABORTED',
        result_description: 'Register crashed',
      });
      await record('unconfirmed, empty', '/transaction/unconfirmed', {});
      await record('event list of the terminal', '/event/list', {
        filter: { subject: { eq: sim.terminal_id } },
        limit: 1000,
      });
      const webhook = await record('webhook create', '/webhook/create', {
        url: 'https://receiver.invalid/hooks',
        filter: { type: { eq: 'eu.vendor.api.pos.v0.Transaction' } },
      });
      const webhookId = (webhook.body as { webhook?: { id?: string } }).webhook?.id;
      await record('webhook list', '/webhook/list', {});
      await record('webhook disable', '/webhook/disable', { id: webhookId });
      await record('webhook enable', '/webhook/enable', { id: webhookId });
      await record('webhook delete', '/webhook/delete', { id: webhookId });

      // The fleet's operations, with the account credential.
      const asAccount = async (label: string, path: string, body: object) => {
        const res = await post(relay.baseUrl, revision, path, body, relay.account);
        observed.push({ label, path, status: res.status, body: res.body });
      };
      await asAccount('fleet config set', '/fleet/config/set', {
        scope: { terminal_id: sim.terminal_id },
        config: {
          heartbeat_s: 30,
          reader: { baud_rate: 9600 },
          maintenance_window: { start: '02:00', end: '04:00' },
        },
      });
      await asAccount('fleet config get', '/fleet/config/get', { scope: { account: true } });
      await asAccount('fleet facts', '/fleet/facts', {});
      await asAccount('400 diagnostics of an in-process simulator', '/fleet/diagnostics', {
        terminal_id: sim.terminal_id,
        kind: 'doctor',
      });
      await record('403 fleet config by a terminal', '/fleet/config/get', {
        scope: { account: true },
      });
      await asAccount('fleet end-of-day', '/fleet/end-of-day', { terminal_id: sim.terminal_id });
      await asAccount('404 end-of-day of an unknown terminal', '/fleet/end-of-day', {
        terminal_id: 't-1900000000',
      });
      await record('403 end-of-day by a terminal', '/fleet/end-of-day', {
        terminal_id: sim.terminal_id,
      });
      // The simulated native reader answers the end-of-day with a FAILED settlement event.
      for (let tries = 0; ; tries += 1) {
        if (tries === 250) throw new Error('no TerminalSettlement event in /event/list');
        const listed = await post(
          relay.baseUrl,
          revision,
          '/event/list',
          { filter: { subject: { eq: sim.terminal_id } }, limit: 1000 },
          relay.account,
        );
        const events = (listed.body as { events?: Array<{ type: string }> }).events ?? [];
        if (events.some((e) => e.type.endsWith('.TerminalSettlement'))) {
          observed.push({
            label: 'event list with a settlement',
            path: '/event/list',
            status: listed.status,
            body: listed.body,
          });
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }

      // Errors.
      await record('400 invalid request', '/transaction/purchase', {
        external_id: 'bad',
        requested_amount: -1,
        currency: 'EUR',
      });
      await record('400 invalid state', '/transaction/continue', { external_id: 'p-1' });
      await record('400 terminal not found', '/terminal/status', { terminal_id: 't-1900000000' });
      await record('404 get unknown', '/transaction/get', { external_id: 'nope' });
      await record('404 unconfirmed unknown terminal', '/transaction/unconfirmed', {
        terminal_id: 't-1900000000',
      });
      await record('403 simulator create by a terminal', '/simulator/create', {});
      await record('404 webhook deleted', '/webhook/delete', { id: webhookId });
      await record('400 invalid token', '/event/list', { next_token: 'abc.def' });
      // Every operation: a body that is not an object, and no credentials.
      for (const path of Object.keys(OPERATIONS)) {
        await recordRaw(`400 sweep ${path}`, path, {
          headers: { authorization: auth, 'content-type': 'application/json' },
          body: '[]',
        });
        await recordRaw(`401 sweep ${path}`, path, {
          headers: { 'content-type': 'application/json' },
          body: '{}',
        });
      }
      await recordRaw('401 without credentials', '/transaction/get', {
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      await recordRaw('400 invalid JSON', '/transaction/get', {
        headers: { authorization: auth, 'content-type': 'application/json' },
        body: '{',
      });
      await recordRaw('405 GET', '/transaction/get', { method: 'GET', headers: {} });
      await recordRaw('413 too large', '/terminal/print', {
        headers: { authorization: auth, 'content-type': 'application/json' },
        body: JSON.stringify({ contents: 'A'.repeat(600_000) }),
      });
      await recordRaw('415 XML', '/transaction/purchase', {
        headers: { authorization: auth, 'content-type': 'application/xml' },
        body: '<purchase/>',
      });
    });

    it('is an OpenAPI 3.1 document with every operation and its revision', () => {
      expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
      expect(doc.info.version).toBe(revision);
      expect(doc.servers[0]?.url).toMatch(new RegExp(`/pos/${revision}$`));
      expect(Object.keys(doc.paths).sort()).toEqual(
        [...Object.keys(OPERATIONS), ...Object.keys(PAIRING_OPERATIONS)].sort(),
      );
      for (const [path, item] of Object.entries(doc.paths)) {
        expect(item.post.responses['200'], path).toBeDefined();
        // The agent's pairing operations ask for no credential (it has none yet).
        if (!(path in PAIRING_OPERATIONS)) expect(item.post.responses['401'], path).toBeDefined();
        expect(item.post.responses['500'], path).toBeDefined();
      }
    });

    it('every schema of the document compiles under JSON Schema 2020-12 (strict)', () => {
      for (const [path, item] of Object.entries(doc.paths)) {
        expect(
          () => ajv.compile(item.post.requestBody.content['application/json'].schema),
          path,
        ).not.toThrow();
        for (const status of Object.keys(item.post.responses)) {
          expect(validatorFor(path, Number(status)), `${path} ${status}`).toBeDefined();
        }
      }
    });

    it('the run produced what it meant to', () => {
      const byLabel = new Map(observed.map((o) => [o.label, o]));
      const statusOf = (label: string) => byLabel.get(label)?.status;
      expect(statusOf('simulator create')).toBe(200);
      expect(statusOf('print of a small PNG')).toBe(200);
      expect(statusOf('continue')).toBe(200);
      expect(statusOf('refund of the purchase')).toBe(200);
      const events = (byLabel.get('event list of the terminal')?.body as { events: unknown[] })
        .events;
      expect(events.length).toBeGreaterThan(5);
      expect(
        (byLabel.get('purchase that pauses')?.body as { transaction: { state: string } })
          .transaction.state,
      ).toBe('AWAITING_CONTINUE');
      expect(
        (byLabel.get('continue')?.body as { transaction: { state: string } }).transaction.state,
      ).toBe('AWAITING_CONFIRM');
      for (const [label, status] of [
        ['400 invalid request', 400],
        ['400 invalid state', 400],
        ['400 terminal not found', 400],
        ['404 get unknown', 404],
        ['404 unconfirmed unknown terminal', 404],
        ['403 simulator create by a terminal', 403],
        ['401 without credentials', 401],
        ['400 invalid JSON', 400],
        ['405 GET', 405],
        ['413 too large', 413],
        ['415 XML', 415],
        ['404 webhook deleted', 404],
        ['400 invalid token', 400],
      ] as const) {
        expect(statusOf(label), label).toBe(status);
      }
      const okLabels = observed.filter((o) => !/^\d{3} /.test(o.label));
      const failedOk = okLabels
        .filter((o) => o.status !== 200)
        .map((o) => `${o.label}: ${o.status}`);
      expect(failedOk).toEqual([]);
    });

    it('every real answer validates against the document for its path and status', () => {
      const problems: string[] = [];
      for (const o of observed) {
        const validate = validatorFor(o.path, o.status);
        if (!validate) {
          problems.push(`${o.label}: ${o.path} ${o.status} is not documented`);
          continue;
        }
        if (!validate(o.body)) {
          problems.push(
            `${o.label}: ${o.path} ${o.status}: ${ajv.errorsText(validate.errors)} in ${JSON.stringify(o.body).slice(0, 300)}`,
          );
        }
      }
      expect(problems).toEqual([]);
    });

    it("rejects answers of the other revision's shape and unknown members (the check has teeth)", () => {
      const answer = observed.find((o) => o.label === 'get with extra_amounts')!;
      const validate = validatorFor('/transaction/get', 200)!;
      expect(validate(answer.body)).toBe(true);
      const { transaction } = structuredClone(answer.body) as {
        transaction: Record<string, unknown>;
      };
      const otherStamp = revision === 'v0' ? '2026-01-02T03:04:05.678Z' : '2026-01-02T03:04:05Z';
      expect(validate({ transaction: { ...transaction, created_at: otherStamp } })).toBe(false);
      expect(validate({ transaction: { ...transaction, surprise: 1 } })).toBe(false);
      const error = validatorFor('/transaction/get', 404)!;
      expect(error({ error: { code: 'NOT_FOUND', description: 'x' } })).toBe(true);
      expect(error({ error: { code: 'NOT_FOUND', description: 'x'.repeat(256) } })).toBe(false);
    });

    it(`timestamps of every answer have ${revision === 'v0' ? 20 : 24} characters`, () => {
      const length = revision === 'v0' ? 20 : 24;
      const shape =
        revision === 'v0'
          ? /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/
          : /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
      const stamps = observed.flatMap((o) => timestampsOf(o.body).map((s) => ({ o, s })));
      expect(stamps.length).toBeGreaterThan(20);
      // Transactions (also inside events), terminal status, and every other resource.
      const wrong = stamps
        .filter(({ s }) => s.length !== length || !shape.test(s))
        .map(({ o, s }) => `${o.label} (${o.path}): ${s}`);
      expect(wrong).toEqual([]);
      const confirmedAt = (
        observed.find((o) => o.label === 'confirm success')?.body as {
          transaction: { confirmed_at: string };
        }
      ).transaction.confirmed_at;
      expect(confirmedAt).toHaveLength(length);
    });

    it('refundable_amount is where the revision puts it', () => {
      const txn = (label: string) =>
        (observed.find((o) => o.label === label)?.body as { transaction: Record<string, unknown> })
          .transaction;
      const withExtra = txn('get with extra_amounts');
      const without = txn('get without extra_amounts');
      const afterRefund = txn('get after the refund with extra_amounts');
      if (revision === 'v0') {
        expect(withExtra.refundable_amount).toBe(1250);
        expect(without.refundable_amount).toBe(1250);
        expect(afterRefund.refundable_amount).toBe(750);
        for (const t of [withExtra, without, afterRefund])
          expect(t).not.toHaveProperty('extra_amounts');
      } else {
        expect(withExtra.extra_amounts).toEqual({ refundable_amount: 1250 });
        expect(afterRefund.extra_amounts).toEqual({ refundable_amount: 750 });
        expect(without).not.toHaveProperty('extra_amounts');
        for (const t of [withExtra, without, afterRefund]) {
          expect(t).not.toHaveProperty('refundable_amount');
        }
      }
      // Only get carries it: create and confirm answers do not.
      for (const label of ['purchase repeated until done', 'confirm success']) {
        expect(txn(label)).not.toHaveProperty('refundable_amount');
        expect(txn(label)).not.toHaveProperty('extra_amounts');
      }
    });

    // Only the current revision has extra_amounts.
    if (revision === 'v1')
      it('get with options.extra_amounts true answers extra_amounts for a refund too', () => {
        const refund = (
          observed.find((o) => o.label === 'get of the refund with extra_amounts')?.body as {
            transaction: Record<string, unknown>;
          }
        ).transaction;
        expect(refund.type).toBe('REFUND');
        // The spec: "when true the response contains extra_amounts".
        expect(refund).toHaveProperty('extra_amounts');
      });

    it('revision-only members appear only in the current revision', () => {
      const identity = (
        observed.find((o) => o.label === 'purchase with customer identity')?.body as {
          transaction: { customer_identity?: Record<string, unknown> };
        }
      ).transaction.customer_identity;
      const dcc = (
        observed.find((o) => o.label === 'purchase with dcc')?.body as {
          transaction: { dcc?: Record<string, unknown> };
        }
      ).transaction.dcc;
      expect(identity).toBeDefined();
      expect(dcc).toBeDefined();
      if (revision === 'v0') {
        expect(identity).not.toHaveProperty('tokenprovider_b');
        expect(dcc).not.toHaveProperty('exchange_rate_precise');
      } else {
        expect(identity).toHaveProperty('tokenprovider_b');
        expect(dcc).toHaveProperty('exchange_rate_precise');
      }
    });
  });

  it('the documents differ where the revisions differ', async () => {
    const [v0, v1] = await Promise.all(
      REVISIONS.map(
        async (revision) =>
          (await (
            await fetch(`${relay.baseUrl}/${revision}/openapi.json`)
          ).json()) as OpenApiDocument,
      ),
    );
    const getSchema = (doc: OpenApiDocument | undefined) =>
      JSON.stringify(doc?.components.schemas.Transaction);
    expect(getSchema(v0)).toContain('refundable_amount');
    expect(getSchema(v1)).toContain('extra_amounts');
    expect(getSchema(v0)).not.toContain('extra_amounts');
  });

  it('are valid OpenAPI 3.1, with the shared shapes named once and referenced', async () => {
    for (const revision of REVISIONS) {
      const doc = (await (
        await fetch(`${relay.baseUrl}/${revision}/openapi.json`)
      ).json()) as OpenApiDocument;
      const checked = await new Validator().validate(doc as unknown as Record<string, unknown>);
      expect(checked.errors ?? [], revision).toEqual([]);
      expect(checked.valid).toBe(true);
      expect(Object.keys(doc.components.schemas)).toEqual(
        expect.arrayContaining(['Transaction', 'TerminalStatus', 'CloudEvent', 'Error']),
      );
      // A transaction's shape is written once: its members appear only in its component.
      const text = JSON.stringify(doc);
      expect(text.split('"refundable_amount"').length - 1, revision).toBe(1);
      expect(text).toContain('"$ref":"#/components/schemas/Transaction"');
    }
  });
});
