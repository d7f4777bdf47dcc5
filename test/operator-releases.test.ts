/**
 * Releases and rollouts are the operator's (docs/tenants.md, "Who may do what"), over
 * real HTTP and the embedded broker: the operator publishes, every merchant's agents
 * download; the operator rolls a release out to a cohort of the account it names, which
 * reaches that account's terminals alone; each merchant reads the rollouts that reach it
 * and nothing else. Releases published by a merchant account before stay downloadable and
 * become the operator's. Every case on SQLite and, with DATABASE_URL, on PostgreSQL.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import mqtt, { type MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateReleaseKeyPair } from '../common/release-signature.js';
import {
  AccountCreateResponse,
  RELEASE_PUBLISH_PATH,
  ROLLOUTS_PATH,
  UpdateOrderMessage,
  agentClientId,
  releaseArchivePath,
  terminalTopics,
} from '../protocol/index.js';
import { tempDir } from './agent-harness.js';
import { ARCH, buildRelease } from './support/agent-releases.js';
import { eventually } from './support/e2e-parts.js';
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

const DATABASE_URL = process.env.DATABASE_URL;
const keys = generateReleaseKeyPair();
const COHORT = 'cohort-north';

/** Where each store keeps its data: a data directory, and a scratch database on PostgreSQL. */
const STORES = eachStore('tps_operator_releases');

/** A relay that accepts releases signed with `keys`, on a store `place` made. */
function relayOn(dir: string, dataDir: string, databaseUrl: string | undefined) {
  const keyFile = path.join(dir, 'release-key.pem');
  if (!fs.existsSync(keyFile)) fs.writeFileSync(keyFile, keys.publicKeyPem);
  return startTestRelay(
    { releasePublicKey: keyFile, ...(databaseUrl ? { databaseUrl } : {}) },
    dataDir,
  );
}

/** A response's status and parsed JSON body, as `post` answers them. */
const answered = async (response: Response): Promise<ApiResponse> => ({
  status: response.status,
  headers: response.headers,
  body: await response.json(),
});

const publish = async (relay: TestRelay, archive: string, credential: Credential) =>
  answered(
    await fetch(`${relay.baseUrl}${RELEASE_PUBLISH_PATH}`, {
      method: 'POST',
      headers: { authorization: basicAuth(credential), 'content-type': 'application/gzip' },
      body: fs.readFileSync(archive),
    }),
  );

const download = (relay: TestRelay, version: string, credential: Credential) =>
  fetch(`${relay.baseUrl}${releaseArchivePath(version, ARCH)}`, {
    headers: { authorization: basicAuth(credential) },
  });

/** The published releases, as the console reads them. */
const list = async (relay: TestRelay, headers: Record<string, string>) =>
  answered(await fetch(`${relay.baseUrl}${RELEASE_PUBLISH_PATH}`, { headers }));

/** A console session of `credential`: its cookie, and the headers a console request carries. */
async function consoleSession(relay: TestRelay, credential: Credential) {
  const response = await fetch(`${relay.baseUrl.replace(/\/pos$/, '')}/console/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(credential),
  });
  expect(response.status).toBe(200);
  const { csrf_token } = (await response.json()) as { csrf_token: string };
  const cookie = (response.headers.get('set-cookie') ?? '').split(';')[0]!;
  return { cookie, headers: { cookie, 'x-tps-csrf': csrf_token } };
}

/** A GET of the rollouts' resource, as `tps fleet rollout status` sends it. */
const read = async (relay: TestRelay, suffix: string, credential: Credential) =>
  answered(
    await fetch(`${relay.baseUrl}${ROLLOUTS_PATH}${suffix}`, {
      headers: { authorization: basicAuth(credential) },
    }),
  );

/**
 * A merchant account the operator makes, with one terminal paired into `COHORT` as a
 * field engineer pairs one: its POS credential and its agent's broker credential.
 */
async function merchant(relay: TestRelay, name: string) {
  const created = await post(relay.baseUrl, 'v1', '/account/create', { name }, relay.operator);
  expect(created.status).toBe(200);
  const { account, credential } = AccountCreateResponse.parse(created.body);
  // The agent's pairing operations take no credential.
  const unauthenticated = async (operation: string, body: object) =>
    (
      await answered(
        await fetch(`${relay.baseUrl}/v1${operation}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }),
      )
    ).body;
  const secret = randomBytes(32).toString('base64url');
  const { code } = await unauthenticated('/pairing/start', {
    secret_sha256: createHash('sha256').update(secret).digest('hex'),
  });
  const claimed = await post(
    relay.baseUrl,
    'v1',
    '/terminal/claim',
    { code, name: `${name}-till`, cohort: COHORT },
    credential,
  );
  expect(claimed.status).toBe(200);
  const paired = await unauthenticated('/pairing/wait', { secret, wait_seconds: 0 });
  return {
    accountId: account.account_id,
    credential,
    terminalId: paired.terminal_id as string,
    pos: { username: claimed.body.username, password: claimed.body.password } as Credential,
    agent: paired.broker as Credential,
  };
}

/** The agent's side of the broker: the update orders it hears (they are retained). */
async function listenForOrders(relay: TestRelay, terminalId: string, agent: Credential) {
  const heard: UpdateOrderMessage[] = [];
  const client: MqttClient = await mqtt.connectAsync(relay.brokerUrl, {
    username: agent.username,
    password: agent.password,
    clientId: agentClientId(terminalId),
    reconnectPeriod: 0,
  });
  client.on('message', (_topic, payload) =>
    heard.push(UpdateOrderMessage.parse(JSON.parse(payload.toString()))),
  );
  await client.subscribeAsync(terminalTopics(terminalId).update, { qos: 1 });
  return { heard, close: () => client.endAsync() };
}

describe.each(STORES)('releases and rollouts are the operator’s, on $name', ({ place }) => {
  let relay: TestRelay;
  let drop: () => Promise<void>;
  let dir: string;
  let archive: string;
  let a: Awaited<ReturnType<typeof merchant>>;
  let b: Awaited<ReturnType<typeof merchant>>;

  beforeAll(async () => {
    const store = await place();
    drop = store.drop;
    dir = tempDir('operator-releases');
    relay = await relayOn(dir, tempDataDir(), store.databaseUrl);
    archive = await buildRelease(dir, { version: '4.0.0', privateKeyPem: keys.privateKeyPem });
    a = await merchant(relay, 'alpha');
    b = await merchant(relay, 'beta');
  }, 60_000);
  afterAll(async () => {
    await relay?.close();
    await drop?.();
  });

  it('the operator publishes; a merchant or a terminal may not; every merchant’s agent downloads it', async () => {
    for (const credential of [a.credential, relay.account, a.pos]) {
      const refused = await publish(relay, archive, credential);
      expect(refused.status).toBe(403);
      expect(refused.body.error).toMatchObject({
        code: 'FORBIDDEN',
        description: expect.stringContaining("releases are the operator's"),
      });
    }
    const published = await publish(relay, archive, relay.operator);
    expect(published).toMatchObject({ status: 200, body: { release: { version: '4.0.0' } } });
    for (const agent of [a.agent, b.agent]) {
      const response = await download(relay, '4.0.0', agent);
      expect(response.status).toBe(200);
      expect(Buffer.from(await response.arrayBuffer()).equals(fs.readFileSync(archive))).toBe(true);
    }
    // Downloading is for agents (and the operator), not for a merchant's API credentials.
    expect((await download(relay, '4.0.0', relay.operator)).status).toBe(200);
    expect((await download(relay, '4.0.0', a.credential)).status).toBe(403);
    expect((await download(relay, '4.0.0', a.pos)).status).toBe(403);
  });

  it('the operator lists the releases, newest first; a merchant or a terminal may not', async () => {
    // Published by the first case, or now when this case runs alone.
    expect([200, 409]).toContain((await publish(relay, archive, relay.operator)).status);
    const newer = await buildRelease(dir, { version: '4.1.0', privateKeyPem: keys.privateKeyPem });
    expect((await publish(relay, newer, relay.operator)).status).toBe(200);
    const listed = await list(relay, { authorization: basicAuth(relay.operator) });
    expect(listed.status).toBe(200);
    expect(listed.body.releases).toEqual([
      {
        version: '4.1.0',
        arch: ARCH,
        archive_sha256: createHash('sha256').update(fs.readFileSync(newer)).digest('hex'),
        archive_size: fs.statSync(newer).size,
        files: 2,
        published_at: expect.any(String),
      },
      expect.objectContaining({ version: '4.0.0', arch: ARCH }),
    ]);
    for (const credential of [a.credential, relay.account, a.pos]) {
      const refused = await list(relay, { authorization: basicAuth(credential) });
      expect([refused.status, refused.body.error?.code]).toEqual([403, 'FORBIDDEN']);
    }
  });

  it('the console’s session publishes, lists and reads rollouts as the credential it signed in with', async () => {
    const operator = await consoleSession(relay, relay.operator);
    const archive = await buildRelease(dir, {
      version: '4.2.0',
      privateKeyPem: keys.privateKeyPem,
    });
    const upload = (headers: Record<string, string>) =>
      fetch(`${relay.baseUrl}${RELEASE_PUBLISH_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/gzip', ...headers },
        body: fs.readFileSync(archive),
      }).then(answered);
    // The cookie alone could come from another site's form: refused without the token.
    const forged = await upload({ cookie: operator.cookie });
    expect([forged.status, forged.body.error?.code]).toEqual([403, 'FORBIDDEN']);
    const published = await upload(operator.headers);
    expect(published).toMatchObject({ status: 200, body: { release: { version: '4.2.0' } } });
    const listed = await list(relay, operator.headers);
    expect(listed.body.releases[0]).toMatchObject({ version: '4.2.0' });
    const rollouts = await answered(
      await fetch(`${relay.baseUrl}${ROLLOUTS_PATH}`, { headers: operator.headers }),
    );
    expect(rollouts.status).toBe(200);
    // A merchant's session is the merchant: no releases.
    const merchantSession = await consoleSession(relay, a.credential);
    const refused = await list(relay, merchantSession.headers);
    expect([refused.status, refused.body.error?.code]).toEqual([403, 'FORBIDDEN']);
    const own = await answered(
      await fetch(`${relay.baseUrl}${ROLLOUTS_PATH}`, { headers: merchantSession.headers }),
    );
    expect(own.status).toBe(200);
  });

  it('the operator rolls out to the account it names: its cohort alone; each merchant reads its own', async () => {
    const start = (body: object, credential: Credential) =>
      post(relay.baseUrl, 'v1', '/fleet/rollouts', body, credential);
    const request = { account_id: a.accountId, version: '4.0.0', cohort: COHORT };
    // Published by the case before, or now when this case runs alone.
    expect([200, 409]).toContain((await publish(relay, archive, relay.operator)).status);

    const unnamed = await start({ version: '4.0.0', cohort: COHORT }, relay.operator);
    expect([unnamed.status, unnamed.body.error?.code]).toEqual([400, 'INVALID_REQUEST']);
    for (const credential of [a.credential, a.pos]) {
      const refused = await start(request, credential);
      expect([refused.status, refused.body.error?.code]).toEqual([403, 'FORBIDDEN']);
    }

    const ordersA = await listenForOrders(relay, a.terminalId, a.agent);
    const ordersB = await listenForOrders(relay, b.terminalId, b.agent);
    try {
      const started = await start(request, relay.operator);
      expect(started.status, JSON.stringify(started.body)).toBe(200);
      const { id } = started.body.rollout as { id: string };
      expect(started.body.rollout).toMatchObject({ account_id: a.accountId, cohort: COHORT });
      expect(
        started.body.rollout.terminals.map((t: { terminal_id: string }) => t.terminal_id),
      ).toEqual([a.terminalId]);
      // A's agent is ordered; B's, in a cohort of the same name, hears nothing.
      await eventually(
        () => ordersA.heard,
        (heard) => heard.length > 0,
        { what: "A's update order" },
      );
      expect(ordersA.heard).toEqual([{ order_id: id, version: '4.0.0' }]);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(ordersB.heard).toEqual([]);

      // A reads it; to B it does not exist.
      expect((await read(relay, `/${id}`, a.credential)).body.rollout).toMatchObject({ id });
      expect(
        (await read(relay, '', a.credential)).body.rollouts.map((r: { id: string }) => r.id),
      ).toEqual([id]);
      const hidden = await read(relay, `/${id}`, b.credential);
      expect([hidden.status, hidden.body.error?.code]).toEqual([404, 'ROLLOUT_NOT_FOUND']);
      expect((await read(relay, '', b.credential)).body).toEqual({ rollouts: [] });
      const named = await read(relay, `?account_id=${a.accountId}`, b.credential);
      expect([named.status, named.body.error?.code]).toEqual([404, 'NOT_FOUND']);
      expect((await read(relay, '', a.pos)).status).toBe(403);
      // The operator reads every account's, or one's.
      const all = await read(relay, '', relay.operator);
      expect(all.body.rollouts.map((r: { id: string }) => r.id)).toContain(id);
      expect((await read(relay, `?account_id=${b.accountId}`, relay.operator)).body).toEqual({
        rollouts: [],
      });
      const malformed = await read(relay, '?account_id=nobody', relay.operator);
      expect([malformed.status, malformed.body.error?.code]).toEqual([400, 'INVALID_REQUEST']);

      // Pause and resume are the operator's.
      for (const action of ['pause', 'resume']) {
        const refused = await post(
          relay.baseUrl,
          'v1',
          `/fleet/rollouts/${id}/${action}`,
          {},
          a.credential,
        );
        expect([action, refused.status, refused.body.error?.code]).toEqual([
          action,
          403,
          'FORBIDDEN',
        ]);
      }
      const paused = await post(
        relay.baseUrl,
        'v1',
        `/fleet/rollouts/${id}/pause`,
        {},
        relay.operator,
      );
      expect(paused.body.rollout).toMatchObject({ state: 'paused' });
      const resumed = await post(
        relay.baseUrl,
        'v1',
        `/fleet/rollouts/${id}/resume`,
        {},
        relay.operator,
      );
      expect(resumed.body.rollout).toMatchObject({ state: 'running' });
    } finally {
      await ordersA.close();
      await ordersB.close();
    }
  });
});

describe.each(STORES)('a release a merchant account published before, on $name', ({ place }) => {
  it('stays downloadable by its agents and becomes the operator’s', async () => {
    const store = await place();
    const dir = tempDir('merchant-release');
    const dataDir = tempDataDir();
    try {
      const archive = await buildRelease(dir, {
        version: '2.0.0',
        privateKeyPem: keys.privateKeyPem,
      });
      // The relay as it was: the account's release, its row and its file.
      const before = await relayOn(dir, dataDir, store.databaseUrl);
      const created = await post(before.baseUrl, 'v1', '/terminal/create', {}, before.account);
      const agent = created.body.agent as Credential;
      const bytes = fs.readFileSync(archive);
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      fs.mkdirSync(path.join(dataDir, 'releases'), { recursive: true });
      fs.writeFileSync(path.join(dataDir, 'releases', `${sha256}.tar.gz`), bytes);
      await before.store.addRelease({
        accountId: before.bootstrap.accountId,
        version: '2.0.0',
        arch: ARCH,
        manifest: '{}',
        signature: 'c2ln',
        archiveSha256: sha256,
        archiveSize: bytes.length,
        file: `${sha256}.tar.gz`,
        publishedAt: new Date().toISOString(),
      });
      await before.close();

      const after = await relayOn(dir, dataDir, store.databaseUrl);
      try {
        const response = await download(after, '2.0.0', agent);
        expect(response.status).toBe(200);
        expect(Buffer.from(await response.arrayBuffer()).equals(bytes)).toBe(true);
        // The operator's now: it cannot publish that version again.
        const again = await publish(after, archive, after.operator);
        expect([again.status, again.body.error?.code]).toEqual([409, 'RELEASE_EXISTS']);
      } finally {
        await after.close();
      }
    } finally {
      await store.drop();
    }
  }, 60_000);
});

if (!DATABASE_URL) {
  describe('releases and rollouts on PostgreSQL', () => {
    it.skip('SKIPPED, DATABASE_URL is not set (e.g. postgres://postgres@127.0.0.1:5432/test): the same cases on PostgreSQL', () => {});
  });
}
