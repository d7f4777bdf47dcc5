/**
 * Every cell of the role table (docs/tenants.md, "Who may do what") as a test, over real
 * HTTP against one relay per store: SQLite and, with DATABASE_URL, PostgreSQL. The table
 * is read from the doc, so the two cannot drift: a row without a probe here fails, naming
 * it, as does a probe whose row is gone, or a cell whose text no probe knows.
 *
 * The world each store gets: the operator; merchants A and B, each made by the operator,
 * each with two simulated terminals that have paid once, a terminal paired with a code
 * into `cohort-north`, a webhook of the account and one of its first terminal, and a
 * rollout of a published release to its cohort. The roles are the operator, A's account
 * credential and the POS credential of A's first terminal.
 *
 * What a cell is checked as:
 * - `-`: each operation of the row, sent with a request that would be valid, answers
 *   `403 FORBIDDEN` (the role check refuses it before it looks at anything).
 * - `own`: the role reaches its own things, and another's are not found. "Reached" means
 *   the answer is neither 401 nor 403 and differs from the answer for a thing that does
 *   not exist: it is 200, or an answer about the thing itself (a transaction that does not
 *   exist on a terminal the role reaches, a simulated terminal with no agent to ask). "Not
 *   found" means the same status and code as for a thing that does not exist, so the
 *   answer confirms nothing. Another's things are B's, and for a terminal credential also
 *   the other terminal of its own account. A list is checked for holding the role's own
 *   things and none of another's.
 * - `named`: the operator reaches the things of the account it names (`account_id`) or
 *   acts relay-wide; naming none where the operation needs one is `400 INVALID_REQUEST`,
 *   naming an account that does not exist `404 NOT_FOUND`.
 * - `own facts`: a terminal credential reads its own terminal's facts; diagnostics are not
 *   its operation (403).
 * - console pages: each role signs in at `/console/session` and its session calls what
 *   each page of its cell calls (200) and is refused (403) what the other pages call.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateReleaseKeyPair } from '../common/release-signature.js';
import {
  AccountCreateResponse,
  RELEASE_PUBLISH_PATH,
  ROLLOUTS_PATH,
  releaseArchivePath,
} from '../protocol/index.js';
import { newAccountId, newRolloutId } from '../cloud/ids.js';
import { tempDir } from './agent-harness.js';
import { ARCH, buildRelease } from './support/agent-releases.js';
import {
  basicAuth,
  post,
  startTestRelay,
  tempDataDir,
  type ApiResponse,
  type TestRelay,
} from './support/relay.js';
import { eachStore } from './support/scratch-database.js';

type Credential = { username: string; password: string };
type Role = 'operator' | 'account' | 'terminal';
const ROLES: readonly Role[] = ['operator', 'account', 'terminal'];

const DATABASE_URL = process.env.DATABASE_URL;
const COHORT = 'cohort-north';
const VERSION = '4.0.0';
/** A 1×1 PNG: a print request the schema accepts. */
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg==';
/** Ids of the right shape that name nothing. */
const NO_TERMINAL = 't-nothing-here';
const NO_ACCOUNT = newAccountId();
const NO_ROLLOUT = newRolloutId();
const NO_WEBHOOK = 'wh-00000000000000000000000000';
const NO_CREDENTIAL = 'nobody-at-all';
const NO_CODE = 'ZZZZ-ZZZZ';

// ---------------------------------------------------------------- the table, from the doc

interface Row {
  operation: string;
  cells: Record<Role, string>;
}

/** The rows of "Who may do what" in docs/tenants.md, cells as written. */
function readTable(): Row[] {
  const doc = fs.readFileSync(path.join(import.meta.dirname, '../docs/tenants.md'), 'utf8');
  const section = doc.split(/^## Who may do what$/m)[1]?.split(/^## /m)[0] ?? '';
  const lines = section.split('\n').filter((line) => line.startsWith('|'));
  const split = (line: string) =>
    line
      .slice(1, -1)
      .split('|')
      .map((cell) => cell.trim());
  const [header, , ...body] = lines.map(split);
  expect(header, 'the table of docs/tenants.md, "Who may do what"').toEqual([
    'operation',
    ...ROLES,
  ]);
  return body.map(([operation = '', operator = '', account = '', terminal = '']) => ({
    operation,
    cells: { operator, account, terminal },
  }));
}

// ---------------------------------------------------------------- the world of a store

interface Terminal {
  terminalId: string;
  /** The transaction it paid. */
  externalId: string;
  credential: Credential;
}

interface Merchant {
  accountId: string;
  credential: Credential;
  first: Terminal;
  second: Terminal;
  /** Paired with a code into COHORT; its POS credential. */
  paired: { terminalId: string; credential: Credential };
  /** The account's webhook, and its first terminal's. */
  webhooks: { account: string; terminal: string };
  rolloutId: string;
}

interface World {
  relay: TestRelay;
  archive: string;
  a: Merchant;
  b: Merchant;
  /** The credential a role signs in with: the operator's, A's account's, A's first terminal's. */
  as: Record<Role, Credential>;
  call(operation: string, body: unknown, credential: Credential): Promise<ApiResponse>;
}

/** Status and body; a body that is not JSON (a release archive) as none. */
const answered = async (response: Response): Promise<ApiResponse> => {
  const json = (response.headers.get('content-type') ?? '').includes('application/json');
  const body: unknown = json ? await response.json() : (await response.arrayBuffer(), {});
  return { status: response.status, headers: response.headers, body };
};

/** The agent's pairing operations take no credential. */
async function unauthenticated(relay: TestRelay, operation: string, body: object) {
  const response = await fetch(`${relay.baseUrl}/v1${operation}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return (await answered(response)).body;
}

/** A terminal waiting with a pairing code, as `tps agent pair` leaves one. */
async function waitingAgent(relay: TestRelay) {
  const secret = randomBytes(32).toString('base64url');
  const { code } = await unauthenticated(relay, '/pairing/start', {
    secret_sha256: createHash('sha256').update(secret).digest('hex'),
  });
  return code as string;
}

async function makeMerchant(relay: TestRelay, name: string): Promise<Omit<Merchant, 'rolloutId'>> {
  const call = (operation: string, body: unknown, credential: Credential) =>
    post(relay.baseUrl, 'v1', operation, body, credential);
  const created = await call('/account/create', { name }, relay.operator);
  const { account, credential } = AccountCreateResponse.parse(created.body);
  const simulator = async (externalId: string): Promise<Terminal> => {
    const made = await call('/simulator/create', {}, credential);
    expect(made.status).toBe(200);
    const terminal = { terminalId: made.body.terminal_id, externalId, credential: made.body };
    const paid = await call(
      '/transaction/purchase',
      {
        terminal_id: terminal.terminalId,
        external_id: externalId,
        requested_amount: 1000,
        currency: 'EUR',
        wait_seconds: 10,
      },
      terminal.credential,
    );
    expect(paid.body.transaction?.state).toBe('AWAITING_CONFIRM');
    return terminal;
  };
  const first = await simulator(`${name}-1`);
  const second = await simulator(`${name}-2`);
  const claimed = await call(
    '/terminal/claim',
    { code: await waitingAgent(relay), cohort: COHORT },
    credential,
  );
  expect(claimed.status).toBe(200);
  const hook = async (eq: string, by: Credential) => {
    const made = await call(
      '/webhook/create',
      { url: 'http://127.0.0.1:9/hook', filter: { subject: { eq } } },
      by,
    );
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    return made.body.webhook.id as string;
  };
  return {
    accountId: account.account_id,
    credential,
    first,
    second,
    paired: {
      terminalId: claimed.body.terminal_id,
      credential: { username: claimed.body.username, password: claimed.body.password },
    },
    webhooks: {
      account: await hook(first.terminalId, credential),
      terminal: await hook(first.terminalId, first.credential),
    },
  };
}

const publish = async (world: Pick<World, 'relay' | 'archive'>, credential: Credential) =>
  answered(
    await fetch(`${world.relay.baseUrl}${RELEASE_PUBLISH_PATH}`, {
      method: 'POST',
      headers: { authorization: basicAuth(credential), 'content-type': 'application/gzip' },
      body: fs.readFileSync(world.archive),
    }),
  );

const download = async (world: World, credential: Credential) =>
  answered(
    await fetch(`${world.relay.baseUrl}${releaseArchivePath(VERSION, ARCH)}`, {
      headers: { authorization: basicAuth(credential) },
    }),
  );

/** The operator's list of releases (a GET of the resource releases are published to). */
const listReleases = async (world: World, credential: Credential) =>
  answered(
    await fetch(`${world.relay.baseUrl}${RELEASE_PUBLISH_PATH}`, {
      headers: { authorization: basicAuth(credential) },
    }),
  );

/** A GET of the rollouts' resource (`suffix`: `/ID` or `?account_id=…`). */
const readRollouts = async (world: World, suffix: string, credential: Credential) =>
  answered(
    await fetch(`${world.relay.baseUrl}${ROLLOUTS_PATH}${suffix}`, {
      headers: { authorization: basicAuth(credential) },
    }),
  );

async function makeWorld(relay: TestRelay, dir: string, privateKeyPem: string): Promise<World> {
  const archive = await buildRelease(dir, { version: VERSION, privateKeyPem });
  expect((await publish({ relay, archive }, relay.operator)).status).toBe(200);
  const rollout = async (accountId: string) => {
    const started = await post(
      relay.baseUrl,
      'v1',
      '/fleet/rollouts',
      { account_id: accountId, version: VERSION, cohort: COHORT, arch: ARCH },
      relay.operator,
    );
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    return started.body.rollout.id as string;
  };
  const madeA = await makeMerchant(relay, 'alpha');
  const madeB = await makeMerchant(relay, 'beta');
  const a = { ...madeA, rolloutId: await rollout(madeA.accountId) };
  const b = { ...madeB, rolloutId: await rollout(madeB.accountId) };
  return {
    relay,
    archive,
    a,
    b,
    as: { operator: relay.operator, account: a.credential, terminal: a.first.credential },
    call: (operation, body, credential) => post(relay.baseUrl, 'v1', operation, body, credential),
  };
}

// ---------------------------------------------------------------- what the checks share

const outcome = (answer: ApiResponse) => [answer.status, answer.body?.error?.code];

function expectRefused(what: string, answer: ApiResponse) {
  expect([what, ...outcome(answer)]).toEqual([what, 403, 'FORBIDDEN']);
}

function expectOk(what: string, answer: ApiResponse) {
  expect([what, answer.status], JSON.stringify(answer.body)).toEqual([what, 200]);
}

/** Reached: neither 401 nor 403, and not the answer for a thing that does not exist. */
function expectReached(what: string, answer: ApiResponse, ofNothing: ApiResponse) {
  expect([401, 403], `${what}: ${JSON.stringify(answer.body)}`).not.toContain(answer.status);
  expect(
    outcome(answer),
    `${what}: reached, unlike a thing that does not exist (${JSON.stringify(ofNothing.body)})`,
  ).not.toEqual(outcome(ofNothing));
}

/** Not found: the answer for a thing that does not exist, so it confirms nothing. */
function expectNotFound(what: string, answer: ApiResponse, ofNothing: ApiResponse) {
  expect([401, 403], `${what}: ${JSON.stringify(answer.body)}`).not.toContain(ofNothing.status);
  expect([what, ...outcome(answer)]).toEqual([what, ...outcome(ofNothing)]);
}

/** A request a probe sends, by whoever is asked to send it. */
interface Request {
  what: string;
  send(credential: Credential): Promise<ApiResponse>;
}

type CellCheck = (world: World, role: Role) => Promise<void>;

interface Probe {
  /** The row's operations with valid requests of A's things: a `-` cell expects 403 of each. */
  requests(world: World): Request[];
  /** The other cells' checks, by the cell's text. */
  cells: Record<string, CellCheck>;
}

const json = (world: World, operation: string, body: unknown, what = operation): Request => ({
  what,
  send: (credential) => world.call(operation, body, credential),
});

/** The terminals that are another's for the role: B's, and for a terminal its account's other. */
const othersOf = (world: World, role: Role): Terminal[] =>
  role === 'terminal' ? [world.b.first, world.a.second] : [world.b.first];

/**
 * `own` for operations on a terminal's things: each reaches the role's own terminal (A's
 * first) and finds another's as one that does not exist.
 */
function ownTerminalThings(
  operations: Array<[string, (terminal: Pick<Terminal, 'terminalId' | 'externalId'>) => object]>,
): CellCheck {
  return async (world, role) => {
    const by = world.as[role];
    for (const [operation, body] of operations) {
      const nothing = await world.call(
        operation,
        body({ terminalId: NO_TERMINAL, externalId: 'nothing-1' }),
        by,
      );
      expectReached(operation, await world.call(operation, body(world.a.first), by), nothing);
      for (const other of othersOf(world, role)) {
        const answer = await world.call(operation, body(other), by);
        expectNotFound(`${operation} of ${other.terminalId}`, answer, nothing);
      }
    }
  };
}

/** The operator names no account, or one that does not exist: 400, 404. */
async function expectNaming(world: World, operation: string, body: object) {
  expect([operation, ...outcome(await world.call(operation, body, world.relay.operator))]).toEqual([
    operation,
    400,
    'INVALID_REQUEST',
  ]);
  const unknown = await world.call(
    operation,
    { ...body, account_id: NO_ACCOUNT },
    world.as.operator,
  );
  expect([operation, ...outcome(unknown)]).toEqual([operation, 404, 'NOT_FOUND']);
}

/** A merchant naming another account finds it as one that does not exist. */
async function expectOtherAccountNotFound(world: World, operation: string, body: object) {
  const by = world.as.account;
  const nothing = await world.call(operation, { ...body, account_id: NO_ACCOUNT }, by);
  const other = await world.call(operation, { ...body, account_id: world.b.accountId }, by);
  expectNotFound(`${operation} naming B`, other, nothing);
  const itself = await world.call(operation, { ...body, account_id: world.a.accountId }, by);
  expectReached(`${operation} naming itself`, itself, nothing);
}

const terminalIds = (answer: ApiResponse, key = 'terminals') =>
  (answer.body[key] as Array<{ terminal_id: string }>).map((t) => t.terminal_id);

// ---------------------------------------------------------------- one probe per row

const purchase = (t: Pick<Terminal, 'terminalId' | 'externalId'>) => ({
  terminal_id: t.terminalId,
  external_id: t.externalId,
  requested_amount: 1000,
  currency: 'EUR',
  wait_seconds: 0,
});
const TRANSACTION_OPERATIONS: Array<
  [string, (t: Pick<Terminal, 'terminalId' | 'externalId'>) => object]
> = [
  // The purchase it paid, sent again: answered as that purchase, nothing paid twice.
  ['/transaction/purchase', purchase],
  [
    '/transaction/refund',
    (t) => ({ ...purchase(t), external_id: 'refund-1', original_purchase_external_id: 'none' }),
  ],
  [
    '/transaction/confirm',
    (t) => ({ terminal_id: t.terminalId, external_id: 'never-made', result_code: 'SUCCESS' }),
  ],
  [
    '/transaction/continue',
    (t) => ({ terminal_id: t.terminalId, external_id: 'never-made', wait_seconds: 0 }),
  ],
  ['/transaction/get', (t) => ({ terminal_id: t.terminalId, external_id: t.externalId })],
  ['/transaction/unconfirmed', (t) => ({ terminal_id: t.terminalId })],
];

const PROBES: Record<string, Probe> = {
  'transaction purchase, refund, confirm, continue, get, unconfirmed': {
    requests: (world) =>
      TRANSACTION_OPERATIONS.map(([operation, body]) =>
        json(world, operation, body(world.a.first)),
      ),
    cells: { own: ownTerminalThings(TRANSACTION_OPERATIONS) },
  },

  'transaction search': {
    requests: (world) => [json(world, '/transaction/search', {})],
    cells: {
      async own(world, role) {
        const found = async (body: object) =>
          (
            (await world.call('/transaction/search', body, world.as[role])).body
              .transactions as Array<{
              external_id: string;
            }>
          ).map((t) => t.external_id);
        const own = role === 'terminal' ? ['alpha-1'] : ['alpha-1', 'alpha-2'];
        expect((await found({})).sort()).toEqual(own);
        for (const other of othersOf(world, role)) {
          expect(await found({ terminal_id: other.terminalId })).toEqual([]);
        }
      },
    },
  },

  'terminal status, print': {
    requests: (world) => [
      json(world, '/terminal/status', { terminal_id: world.a.first.terminalId }),
      json(world, '/terminal/print', {
        terminal_id: world.a.first.terminalId,
        format: 'PNG',
        contents: PNG,
      }),
    ],
    cells: {
      own: ownTerminalThings([
        ['/terminal/status', (t) => ({ terminal_id: t.terminalId })],
        ['/terminal/print', (t) => ({ terminal_id: t.terminalId, format: 'PNG', contents: PNG })],
      ]),
    },
  },

  'event list, webhooks': {
    requests: (world) => [
      json(world, '/event/list', {}),
      json(world, '/webhook/create', { url: 'http://127.0.0.1:9/hook' }),
      json(world, '/webhook/list', {}),
      ...['delete', 'enable', 'disable'].map((action) =>
        json(world, `/webhook/${action}`, { id: world.a.webhooks.account }),
      ),
    ],
    cells: {
      async own(world, role) {
        const by = world.as[role];
        const subject = (terminalId: string) => ({ filter: { subject: { eq: terminalId } } });
        const url = 'http://127.0.0.1:9/hook';
        // Events and new webhooks of its own terminal; another's as one that does not exist.
        await ownTerminalThings([
          ['/event/list', (t) => subject(t.terminalId)],
          ['/webhook/create', (t) => ({ url, ...subject(t.terminalId) })],
        ])(world, role);
        // Its own webhooks listed, and no other's.
        const listed = (await world.call('/webhook/list', {}, by)).body.webhooks.map(
          (w: { id: string }) => w.id,
        );
        const own =
          role === 'terminal'
            ? [world.a.webhooks.terminal]
            : [world.a.webhooks.account, world.a.webhooks.terminal];
        expect(listed).toEqual(expect.arrayContaining(own));
        const others = [world.b.webhooks.account, world.b.webhooks.terminal];
        if (role === 'terminal') others.push(world.a.webhooks.account);
        for (const id of others) expect(listed).not.toContain(id);
        // Disable, enable and delete: its own; another's as one that does not exist.
        const mine = role === 'terminal' ? world.a.webhooks.terminal : world.a.webhooks.account;
        for (const action of ['disable', 'enable']) {
          const operation = `/webhook/${action}`;
          const nothing = await world.call(operation, { id: NO_WEBHOOK }, by);
          expectOk(operation, await world.call(operation, { id: mine }, by));
          for (const id of others) {
            expectNotFound(`${operation} ${id}`, await world.call(operation, { id }, by), nothing);
          }
        }
        const made = await world.call(
          '/webhook/create',
          { url, ...subject(world.a.first.terminalId) },
          by,
        );
        const nothing = await world.call('/webhook/delete', { id: NO_WEBHOOK }, by);
        expectNotFound(
          '/webhook/delete of B',
          await world.call('/webhook/delete', { id: others[0] }, by),
          nothing,
        );
        expectOk(
          '/webhook/delete',
          await world.call('/webhook/delete', { id: made.body.webhook.id }, by),
        );
      },
    },
  },

  'simulator create': {
    requests: (world) => [json(world, '/simulator/create', {})],
    cells: {
      async own(world, role) {
        const made = await world.call('/simulator/create', {}, world.as[role]);
        expectOk('/simulator/create', made);
        const listed = (credential: Credential) =>
          world.call('/terminal/list', {}, credential).then((answer) => terminalIds(answer));
        expect(await listed(world.a.credential)).toContain(made.body.terminal_id);
        expect(await listed(world.b.credential)).not.toContain(made.body.terminal_id);
      },
    },
  },

  'terminal create, claim a pairing code': {
    requests: (world) => [
      json(world, '/terminal/create', {}),
      json(world, '/terminal/claim', { code: NO_CODE }),
    ],
    cells: {
      async named(world) {
        const named = { account_id: world.a.accountId };
        const created = await world.call('/terminal/create', named, world.as.operator);
        expectOk('/terminal/create', created);
        const claimed = await world.call(
          '/terminal/claim',
          { ...named, code: await waitingAgent(world.relay) },
          world.as.operator,
        );
        expectOk('/terminal/claim', claimed);
        const listed = terminalIds(await world.call('/terminal/list', {}, world.a.credential));
        expect(listed).toEqual(
          expect.arrayContaining([created.body.terminal_id, claimed.body.terminal_id]),
        );
        await expectNaming(world, '/terminal/create', {});
        await expectNaming(world, '/terminal/claim', { code: NO_CODE });
      },
      async own(world) {
        const by = world.as.account;
        const created = await world.call('/terminal/create', {}, by);
        expectOk('/terminal/create', created);
        expect(terminalIds(await world.call('/terminal/list', {}, by))).toContain(
          created.body.terminal_id,
        );
        await expectOtherAccountNotFound(world, '/terminal/create', {});
        // A code no terminal waits with: reached (the claim looked for it), not refused.
        const claim = await world.call('/terminal/claim', { code: NO_CODE }, by);
        expect(outcome(claim)).toEqual([404, 'PAIRING_NOT_FOUND']);
        const nothing = await world.call(
          '/terminal/claim',
          { code: NO_CODE, account_id: NO_ACCOUNT },
          by,
        );
        const other = await world.call(
          '/terminal/claim',
          { code: NO_CODE, account_id: world.b.accountId },
          by,
        );
        expectNotFound('/terminal/claim naming B', other, nothing);
      },
    },
  },

  'credentials of a terminal: rotate, revoke': {
    requests: (world) => [
      json(world, '/credential/rotate', { username: world.a.second.credential.username }),
      json(world, '/credential/revoke', { username: world.a.second.credential.username }),
    ],
    cells: {
      async named(world) {
        await expectTerminalCredentials(world, 'operator', { account_id: world.a.accountId });
        await expectNaming(world, '/credential/rotate', { username: NO_CREDENTIAL });
      },
      async own(world) {
        await expectTerminalCredentials(world, 'account', {});
        await expectOtherAccountNotFound(world, '/credential/rotate', {
          username: world.a.paired.terminalId,
          type: 'AGENT',
        });
      },
    },
  },

  'fleet config: relay-wide layer, which settings merchants may set': {
    requests: (world) => [
      json(world, '/fleet/config/get', { scope: { relay: true } }),
      json(world, '/fleet/config/set', { scope: { relay: true }, config: {} }),
      json(world, '/fleet/config/merchant-settings/get', {}),
      json(world, '/fleet/config/merchant-settings/set', { settings: [] }),
    ],
    cells: {
      async named(world) {
        const by = world.as.operator;
        const relay = { scope: { relay: true } };
        const layer = await world.call('/fleet/config/get', relay, by);
        expectOk('/fleet/config/get', layer);
        expectOk(
          '/fleet/config/set',
          await world.call('/fleet/config/set', { ...relay, config: layer.body.layer }, by),
        );
        const named = await world.call(
          '/fleet/config/get',
          { ...relay, account_id: world.a.accountId },
          by,
        );
        expect(outcome(named)).toEqual([400, 'INVALID_REQUEST']);
        const settings = await world.call('/fleet/config/merchant-settings/get', {}, by);
        expectOk('/fleet/config/merchant-settings/get', settings);
        // Set as they are (null: never set, every setting allowed).
        if (settings.body.changed_at !== null) {
          const again = { settings: settings.body.settings };
          expectOk(
            '/fleet/config/merchant-settings/set',
            await world.call('/fleet/config/merchant-settings/set', again, by),
          );
        }
      },
    },
  },

  'fleet config: account, cohort, terminal layers': {
    requests: (world) => [
      json(world, '/fleet/config/get', { scope: { account: true } }),
      json(world, '/fleet/config/set', {
        scope: { terminal_id: world.a.first.terminalId },
        config: {},
      }),
    ],
    cells: {
      async named(world) {
        await expectLayers(world, 'operator', { account_id: world.a.accountId });
        await expectNaming(world, '/fleet/config/get', { scope: { account: true } });
      },
      async own(world) {
        await expectLayers(world, 'account', {});
        await expectOtherAccountNotFound(world, '/fleet/config/get', { scope: { account: true } });
      },
    },
  },

  'fleet facts, diagnostics (doctor, logs, trace)': {
    requests: (world) => [
      json(world, '/fleet/facts', { terminal_id: world.a.first.terminalId }),
      json(world, '/fleet/diagnostics', {
        terminal_id: world.a.first.terminalId,
        kind: 'doctor',
        wait_seconds: 1,
      }),
    ],
    cells: {
      async named(world) {
        await expectFleetOfA(world, 'operator', { account_id: world.a.accountId });
        await expectNaming(world, '/fleet/facts', {});
      },
      async own(world) {
        await expectFleetOfA(world, 'account', {});
        await expectOtherAccountNotFound(world, '/fleet/facts', {});
      },
      async 'own facts'(world) {
        const by = world.as.terminal;
        const facts = (terminalId: string) =>
          world.call('/fleet/facts', { terminal_id: terminalId }, by);
        const own = await facts(world.a.first.terminalId);
        expectOk('/fleet/facts', own);
        expect(terminalIds(own)).toEqual([world.a.first.terminalId]);
        const nothing = await facts(NO_TERMINAL);
        for (const other of othersOf(world, 'terminal')) {
          expectNotFound(
            `/fleet/facts of ${other.terminalId}`,
            await facts(other.terminalId),
            nothing,
          );
        }
        expectRefused('/fleet/facts of the account', await world.call('/fleet/facts', {}, by));
        for (const kind of ['doctor', 'logs', 'trace']) {
          const body = { terminal_id: world.a.first.terminalId, kind, wait_seconds: 1 };
          expectRefused(
            `/fleet/diagnostics ${kind}`,
            await world.call('/fleet/diagnostics', body, by),
          );
        }
      },
    },
  },

  'end-of-day on request': {
    requests: (world) => [
      json(world, '/fleet/end-of-day', { terminal_id: world.a.first.terminalId }),
    ],
    cells: {
      async named(world) {
        await expectEndOfDay(world, 'operator', { account_id: world.a.accountId });
        await expectNaming(world, '/fleet/end-of-day', { cohort: COHORT });
      },
      async own(world) {
        await expectEndOfDay(world, 'account', {});
        await expectOtherAccountNotFound(world, '/fleet/end-of-day', { cohort: COHORT });
      },
    },
  },

  'releases: publish, list, download': {
    requests: (world) => [
      { what: 'publish', send: (credential) => publish(world, credential) },
      { what: 'list', send: (credential) => listReleases(world, credential) },
      { what: 'download', send: (credential) => download(world, credential) },
    ],
    cells: {
      async named(world) {
        // Published when the world was made: the same version again is reached, and refused
        // as existing.
        const again = await publish(world, world.as.operator);
        expect(outcome(again)).toEqual([409, 'RELEASE_EXISTS']);
        const listed = await listReleases(world, world.as.operator);
        expectOk('list', listed);
        expect(listed.body.releases.map((r: { version: string }) => r.version)).toContain(VERSION);
        const response = await fetch(`${world.relay.baseUrl}${releaseArchivePath(VERSION, ARCH)}`, {
          headers: { authorization: basicAuth(world.as.operator) },
        });
        expect(response.status).toBe(200);
        expect(
          Buffer.from(await response.arrayBuffer()).equals(fs.readFileSync(world.archive)),
        ).toBe(true);
      },
    },
  },

  'rollouts: start, pause, resume, supersede': {
    requests: (world) => [
      json(world, '/fleet/rollouts', { version: VERSION, cohort: COHORT, arch: ARCH }, 'start'),
      json(world, `/fleet/rollouts/${world.a.rolloutId}/pause`, {}, 'pause'),
      json(world, `/fleet/rollouts/${world.a.rolloutId}/resume`, {}, 'resume'),
    ],
    cells: {
      async named(world) {
        const by = world.as.operator;
        const start = { version: VERSION, cohort: COHORT, arch: ARCH };
        const started = await world.call(
          '/fleet/rollouts',
          { ...start, account_id: world.a.accountId },
          by,
        );
        expectOk('start', started);
        const { id } = started.body.rollout as { id: string };
        expect(started.body.rollout.account_id).toBe(world.a.accountId);
        // The account's rollout before it, to the same cohort, is superseded; B's is not.
        const before = await readRollouts(world, `/${world.a.rolloutId}`, by);
        expect(before.body.rollout).toMatchObject({ state: 'superseded', superseded_by: id });
        expect(
          (await readRollouts(world, `/${world.b.rolloutId}`, by)).body.rollout.state,
        ).not.toBe('superseded');
        world.a.rolloutId = id;
        expect((await world.call(`/fleet/rollouts/${id}/pause`, {}, by)).body.rollout.state).toBe(
          'paused',
        );
        expect((await world.call(`/fleet/rollouts/${id}/resume`, {}, by)).body.rollout.state).toBe(
          'running',
        );
        await expectNaming(world, '/fleet/rollouts', start);
      },
    },
  },

  'rollouts: read': {
    requests: (world) => [
      { what: 'list', send: (credential) => readRollouts(world, '', credential) },
      {
        what: 'get',
        send: (credential) => readRollouts(world, `/${world.a.rolloutId}`, credential),
      },
    ],
    cells: {
      async named(world) {
        const by = world.as.operator;
        const ids = async (suffix: string) =>
          ((await readRollouts(world, suffix, by)).body.rollouts as Array<{ id: string }>).map(
            (r) => r.id,
          );
        expect(await ids('')).toEqual(
          expect.arrayContaining([world.a.rolloutId, world.b.rolloutId]),
        );
        const ofA = await ids(`?account_id=${world.a.accountId}`);
        expect(ofA).toContain(world.a.rolloutId);
        expect(ofA).not.toContain(world.b.rolloutId);
        expectOk('get', await readRollouts(world, `/${world.b.rolloutId}`, by));
      },
      async own(world) {
        const by = world.as.account;
        const listed = await readRollouts(world, '', by);
        expectOk('list', listed);
        const accounts = (listed.body.rollouts as Array<{ account_id: string }>).map(
          (r) => r.account_id,
        );
        expect(new Set(accounts)).toEqual(new Set([world.a.accountId]));
        expectOk('get', await readRollouts(world, `/${world.a.rolloutId}`, by));
        const nothing = await readRollouts(world, `/${NO_ROLLOUT}`, by);
        expectNotFound('get of B', await readRollouts(world, `/${world.b.rolloutId}`, by), nothing);
        const noAccount = await readRollouts(world, `?account_id=${NO_ACCOUNT}`, by);
        const ofB = await readRollouts(world, `?account_id=${world.b.accountId}`, by);
        expectNotFound('list naming B', ofB, noAccount);
      },
    },
  },

  'accounts: create, list, get, disable, enable': {
    requests: (world) => [
      json(world, '/account/create', { name: 'probe' }),
      json(world, '/account/list', {}),
      ...['get', 'disable', 'enable'].map((action) =>
        json(world, `/account/${action}`, { account_id: world.a.accountId }),
      ),
    ],
    cells: {
      async named(world) {
        const by = world.as.operator;
        const listed = (await world.call('/account/list', {}, by)).body.accounts.map(
          (x: { account_id: string }) => x.account_id,
        );
        expect(listed).toEqual(expect.arrayContaining([world.a.accountId, world.b.accountId]));
        const got = await world.call('/account/get', { account_id: world.a.accountId }, by);
        expect(got.body.account).toMatchObject({ account_id: world.a.accountId, kind: 'merchant' });
        const made = await world.call('/account/create', { name: 'probe' }, by);
        expectOk('/account/create', made);
        const account_id = made.body.account.account_id as string;
        const disabled = await world.call('/account/disable', { account_id }, by);
        expect(disabled.body.account.disabled_at).toEqual(expect.any(String));
        const enabled = await world.call('/account/enable', { account_id }, by);
        expect(enabled.body.account).not.toHaveProperty('disabled_at');
        const unknown = await world.call('/account/get', { account_id: NO_ACCOUNT }, by);
        expect(outcome(unknown)).toEqual([404, 'NOT_FOUND']);
      },
    },
  },

  'account credentials: add, rotate, revoke': {
    requests: (world) => [
      json(world, '/account/credential/add', {}),
      json(world, '/credential/rotate', { username: world.a.credential.username }),
      json(world, '/credential/revoke', { username: world.a.credential.username }),
    ],
    cells: {
      async named(world) {
        await expectAccountCredentials(world, 'operator', { account_id: world.a.accountId });
        await expectNaming(world, '/account/credential/add', {});
      },
      async own(world) {
        await expectAccountCredentials(world, 'account', {});
        await expectOtherAccountNotFound(world, '/account/credential/add', {});
        const nothing = await world.call(
          '/credential/rotate',
          { username: NO_CREDENTIAL },
          world.as.account,
        );
        const other = await world.call(
          '/credential/rotate',
          { username: world.b.credential.username },
          world.as.account,
        );
        expectNotFound("/credential/rotate of B's", other, nothing);
      },
    },
  },

  'local trust (`/terminal/local-trust`)': {
    requests: (world) => [
      json(world, '/terminal/local-trust', { terminal_id: world.a.first.terminalId }),
    ],
    cells: {
      own: ownTerminalThings([['/terminal/local-trust', (t) => ({ terminal_id: t.terminalId })]]),
    },
  },
};

/**
 * Rotates and revokes the POS and agent credentials of A's terminals, as `role` (the
 * operator naming A, or A's account); B's are found as credentials that do not exist.
 */
async function expectTerminalCredentials(world: World, role: Role, naming: object) {
  const by = world.as[role];
  const made = await world.call('/terminal/create', naming, by);
  expectOk('/terminal/create', made);
  const rotated = await world.call(
    '/credential/rotate',
    { ...naming, username: made.body.username },
    by,
  );
  expectOk('/credential/rotate', rotated);
  const renewed = { username: made.body.username, password: rotated.body.credential.password };
  const status = { terminal_id: made.body.terminal_id };
  expectOk('the rotated credential', await world.call('/terminal/status', status, renewed));
  const agent = { ...naming, type: 'AGENT', username: made.body.terminal_id };
  expectOk('/credential/rotate of the agent', await world.call('/credential/rotate', agent, by));
  expectOk(
    '/credential/revoke',
    await world.call('/credential/revoke', { ...naming, username: made.body.username }, by),
  );
  expect((await world.call('/terminal/status', status, renewed)).status).toBe(401);
  for (const operation of ['/credential/rotate', '/credential/revoke']) {
    const nothing = await world.call(operation, { ...naming, username: NO_CREDENTIAL }, by);
    const pos = { ...naming, username: world.b.first.credential.username };
    expectNotFound(`${operation} of B's POS`, await world.call(operation, pos, by), nothing);
    const agentOfB = { ...naming, type: 'AGENT', username: world.b.paired.terminalId };
    const noAgent = { ...naming, type: 'AGENT', username: NO_TERMINAL };
    expectNotFound(
      `${operation} of B's agent`,
      await world.call(operation, agentOfB, by),
      await world.call(operation, noAgent, by),
    );
  }
}

/** The account's, a cohort's and a terminal's layers of A; B's terminal as none. */
async function expectLayers(world: World, role: Role, naming: object) {
  const by = world.as[role];
  for (const scope of [
    { account: true },
    { cohort: COHORT },
    { terminal_id: world.a.first.terminalId },
  ]) {
    const layer = await world.call('/fleet/config/get', { ...naming, scope }, by);
    expectOk(`/fleet/config/get ${JSON.stringify(scope)}`, layer);
    const set = { ...naming, scope, config: layer.body.layer };
    expectOk(
      `/fleet/config/set ${JSON.stringify(scope)}`,
      await world.call('/fleet/config/set', set, by),
    );
  }
  const nothing = await world.call(
    '/fleet/config/get',
    { ...naming, scope: { terminal_id: NO_TERMINAL } },
    by,
  );
  const other = await world.call(
    '/fleet/config/get',
    { ...naming, scope: { terminal_id: world.b.first.terminalId } },
    by,
  );
  expectNotFound("/fleet/config/get of B's terminal", other, nothing);
}

/** A's facts, all its terminals and none of B's; diagnostics reach A's terminal alone. */
async function expectFleetOfA(world: World, role: Role, naming: object) {
  const by = world.as[role];
  const all = await world.call('/fleet/facts', naming, by);
  expectOk('/fleet/facts', all);
  const ids = terminalIds(all);
  expect(ids).toEqual(
    expect.arrayContaining([world.a.first.terminalId, world.a.paired.terminalId]),
  );
  for (const other of [world.b.first.terminalId, world.b.paired.terminalId]) {
    expect(ids).not.toContain(other);
  }
  const one = (operation: string, terminalId: string) =>
    world.call(
      operation,
      { ...naming, terminal_id: terminalId, kind: 'doctor', wait_seconds: 1 },
      by,
    );
  for (const operation of ['/fleet/facts', '/fleet/diagnostics']) {
    const nothing = await one(operation, NO_TERMINAL);
    // The paired terminal's agent is not connected: reached, and told so.
    expectReached(operation, await one(operation, world.a.paired.terminalId), nothing);
    expectNotFound(`${operation} of B's`, await one(operation, world.b.paired.terminalId), nothing);
  }
}

async function expectEndOfDay(world: World, role: Role, naming: object) {
  const by = world.as[role];
  const closed = await world.call(
    '/fleet/end-of-day',
    { ...naming, terminal_id: world.a.paired.terminalId },
    by,
  );
  expectOk('/fleet/end-of-day', closed);
  expect(closed.body.terminal_ids).toEqual([world.a.paired.terminalId]);
  const nothing = await world.call(
    '/fleet/end-of-day',
    { ...naming, terminal_id: NO_TERMINAL },
    by,
  );
  const other = await world.call(
    '/fleet/end-of-day',
    { ...naming, terminal_id: world.b.paired.terminalId },
    by,
  );
  expectNotFound("/fleet/end-of-day of B's", other, nothing);
  // A cohort reaches A's terminals in it alone, though B has one of the same name.
  const cohort = await world.call('/fleet/end-of-day', { ...naming, cohort: COHORT }, by);
  expect(cohort.body.terminal_ids).toEqual([world.a.paired.terminalId]);
}

/** Adds, rotates and revokes a credential of A's account as `role`. */
async function expectAccountCredentials(world: World, role: Role, naming: object) {
  const by = world.as[role];
  const added = await world.call('/account/credential/add', naming, by);
  expectOk('/account/credential/add', added);
  const credential = added.body.credential as Credential & { account_id: string };
  expect(credential.account_id).toBe(world.a.accountId);
  const rotated = await world.call(
    '/credential/rotate',
    { ...naming, username: credential.username },
    by,
  );
  expectOk('/credential/rotate', rotated);
  const renewed = { username: credential.username, password: rotated.body.credential.password };
  const listed = await world.call('/terminal/list', {}, renewed);
  expect(terminalIds(listed)).toContain(world.a.first.terminalId);
  expect(terminalIds(listed)).not.toContain(world.b.first.terminalId);
  const revoked = await world.call(
    '/credential/revoke',
    { ...naming, username: credential.username },
    by,
  );
  expectOk('/credential/revoke', revoked);
  expect((await world.call('/terminal/list', {}, renewed)).status).toBe(401);
}

// ---------------------------------------------------------------- the console's pages

/** What each page of the console calls, as the role's page sends it (no body: a GET). */
const PAGES: Record<string, (world: World, role: Role) => Array<[string, object?]>> = {
  payments: () => [
    ['/terminal/list', {}],
    ['/transaction/search', {}],
    ['/event/list', {}],
    ['/webhook/list', {}],
  ],
  fleet: (world, role) => [
    ['/fleet/facts', role === 'operator' ? { account_id: world.a.accountId } : {}],
  ],
  accounts: () => [['/account/list', {}]],
  releases: () => [['/fleet/releases']],
  rollouts: () => [['/fleet/rollouts']],
};

/** `fleet, accounts` → the pages; `payments (its terminal)` → payments. */
const pagesOf = (cell: string) =>
  cell === '-' ? [] : cell.split(',').map((page) => page.replace(/\(.*\)/, '').trim());

async function signIn(world: World, credential: Credential) {
  const origin = world.relay.baseUrl.replace(/\/pos$/, '');
  const response = await fetch(`${origin}/console/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(credential),
  });
  expect(response.status).toBe(200);
  const cookie = (response.headers.get('set-cookie') ?? '').split(';')[0]!;
  const { csrf_token: csrf, role } = (await response.json()) as { csrf_token: string; role: Role };
  return {
    role,
    call: async (operation: string, body?: object) =>
      answered(
        await fetch(
          `${world.relay.baseUrl}/v1${operation}`,
          body === undefined
            ? { headers: { cookie, 'x-tps-csrf': csrf } }
            : {
                method: 'POST',
                headers: { 'content-type': 'application/json', cookie, 'x-tps-csrf': csrf },
                body: JSON.stringify(body),
              },
        ),
      ),
  };
}

const CONSOLE_ROW = 'console pages';

async function checkConsole(world: World, role: Role, cell: string) {
  const pages = pagesOf(cell);
  for (const page of pages) {
    expect(Object.keys(PAGES), `a page "${page}" of the console`).toContain(page);
  }
  const session = await signIn(world, world.as[role]);
  expect(session.role).toBe(role);
  for (const [page, calls] of Object.entries(PAGES)) {
    for (const [operation, body] of calls(world, role)) {
      const answer = await session.call(operation, body);
      if (pages.includes(page)) expectOk(`${page}: ${operation}`, answer);
      else expectRefused(`${page}: ${operation}`, answer);
    }
  }
  if (role === 'terminal') {
    // Its terminal alone: the list holds it, another terminal of the account is not found.
    const listed = await session.call('/terminal/list', {});
    expect(terminalIds(listed)).toEqual([world.a.first.terminalId]);
    const get = (t: Terminal) =>
      session.call('/transaction/get', { terminal_id: t.terminalId, external_id: t.externalId });
    expectOk('its transaction', await get(world.a.first));
    expect(outcome(await get(world.a.second))).toEqual([404, 'NOT_FOUND']);
  }
}

// ---------------------------------------------------------------- the stores

const STORES = eachStore('tps_role_table');

const TABLE = readTable();

describe('the role table of docs/tenants.md', () => {
  it('has a probe for every row, and a row for every probe', () => {
    const rows = TABLE.map((row) => row.operation);
    const probed = [...Object.keys(PROBES), CONSOLE_ROW];
    expect(
      rows.filter((row) => !probed.includes(row)),
      'rows without a probe',
    ).toEqual([]);
    expect(
      probed.filter((probe) => !rows.includes(probe)),
      'probes without a row',
    ).toEqual([]);
  });
});

describe.each(STORES)('every cell of the role table, on $name', ({ place }) => {
  let world: World;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const store = await place();
    drop = store.drop;
    const dir = tempDir('role-table');
    const keys = generateReleaseKeyPair();
    const keyFile = path.join(dir, 'release-key.pem');
    fs.writeFileSync(keyFile, keys.publicKeyPem);
    const relay = await startTestRelay(
      {
        simulatorMode: 'in-process',
        webhookAllowHttp: true,
        webhookAllowNetworks: '127.0.0.1/32',
        releasePublicKey: keyFile,
        ...(store.databaseUrl ? { databaseUrl: store.databaseUrl } : {}),
      },
      tempDataDir(),
    );
    world = await makeWorld(relay, dir, keys.privateKeyPem).catch(async (error: unknown) => {
      await relay.close();
      throw error;
    });
  }, 60_000);
  afterAll(async () => {
    await world?.relay.close();
    await drop?.();
  });

  it.each(TABLE)('$operation', async ({ operation, cells }) => {
    for (const role of ROLES) {
      const cell = cells[role];
      if (operation === CONSOLE_ROW) {
        await checkConsole(world, role, cell);
        continue;
      }
      const probe = PROBES[operation];
      expect(probe, `a probe for the row "${operation}"`).toBeDefined();
      if (cell === '-') {
        for (const request of probe!.requests(world)) {
          expectRefused(`${role}: ${request.what}`, await request.send(world.as[role]));
        }
        continue;
      }
      const check = probe!.cells[cell];
      expect(check, `a check of "${cell}" in the row "${operation}"`).toBeDefined();
      await check!(world, role);
    }
  });
});

if (!DATABASE_URL) {
  describe('every cell of the role table, on PostgreSQL', () => {
    it.skip('SKIPPED, DATABASE_URL is not set (e.g. postgres://postgres@127.0.0.1:5432/test): the same table on PostgreSQL', () => {});
  });
}
