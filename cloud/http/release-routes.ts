/**
 * Agent releases over HTTP (docs/api.md, "Extensions: releases"): publishing takes the
 * archive itself as the body (application/gzip), not JSON; downloading answers it. The
 * operator publishes and lists them (with Basic auth or the console's session); any
 * terminal's agent downloads with its broker credential (username: its terminal id), and
 * the operator's credential may too.
 */
import fs from 'node:fs';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import { RELEASE_PUBLISH_PATH, ReleaseArch, ReleaseVersion } from '../../protocol/index.js';
import type { Authenticator } from '../accounts/authenticator.js';
import type { Principal } from '../accounts/principal.js';
import { verifyAgentSecret } from '../accounts/mosquitto-hash.js';
import { parseBasicAuthorization } from '../../common/basic-auth.js';
import { sourceOf } from '../../common/sign-in-throttle.js';
import { ApiError } from '../errors.js';
import type { Releases } from '../releases/releases.js';
import type { Store } from '../store/store.js';

export interface ReleaseRouteOptions {
  releases: Releases;
  authenticator: Authenticator;
  /** The principal of a publish or list: the console's session or Basic auth (server.ts). */
  principalOf: (request: FastifyRequest) => Promise<Principal>;
  store: Pick<Store, 'findAgentCredential' | 'getTerminal'>;
}

export function registerReleaseRoutes(app: FastifyInstance, options: ReleaseRouteOptions): void {
  const { releases, principalOf } = options;
  // Encapsulated: the gzip body parser serves these routes alone, the operations stay JSON.
  void app.register(async (scope) => {
    scope.addContentTypeParser('application/gzip', (_request, payload, done) =>
      done(null, payload),
    );
    scope.get(`/pos${RELEASE_PUBLISH_PATH}`, async (request) => ({
      releases: await releases.list(await principalOf(request)),
    }));
    scope.post(`/pos${RELEASE_PUBLISH_PATH}`, async (request) => {
      const principal = await principalOf(request);
      if (request.headers['content-type'] !== 'application/gzip') {
        throw new ApiError(
          'UNSUPPORTED_MEDIA_TYPE',
          'send the release archive (tps-agent-VERSION-ARCH.tar.gz) as application/gzip',
        );
      }
      return { release: await releases.publish(principal, request.body as Readable) };
    });
    scope.get(`/pos${RELEASE_PUBLISH_PATH}/:version/:arch/archive`, async (request, reply) => {
      await mayDownload(request, options);
      const params = request.params as { version: string; arch: string };
      const version = ReleaseVersion.safeParse(params.version);
      const arch = ReleaseArch.safeParse(params.arch);
      if (!version.success || !arch.success) {
        throw new ApiError('RELEASE_NOT_FOUND', 'no such release');
      }
      const archive = await releases.archive(version.data, arch.data);
      return reply
        .header('content-type', 'application/gzip')
        .header('content-length', archive.size)
        .header('x-archive-sha256', archive.sha256)
        .send(fs.createReadStream(archive.file));
    });
  });
}

/**
 * An agent by its broker credential, else the operator's credential; any other API
 * credential is refused (403): releases are the operator's (docs/tenants.md).
 */
async function mayDownload(
  request: FastifyRequest,
  { authenticator, store }: ReleaseRouteOptions,
): Promise<void> {
  const header = request.headers.authorization;
  const basic = parseBasicAuthorization(header);
  if (basic.ok) {
    const terminalId = basic.username;
    const stored = await store.findAgentCredential(terminalId);
    if (stored !== undefined) {
      // Agent secrets are 192 random bits (cloud/ids.ts): guessing needs no limit here.
      const terminal = await store.getTerminal(terminalId);
      if (terminal && (await verifyAgentSecret(basic.secret, stored))) return;
      throw new ApiError('UNAUTHORIZED', 'wrong username or password');
    }
  }
  const principal = await authenticator.authenticate(header, sourceOf(request.ip));
  if (principal.role !== 'operator') {
    throw new ApiError(
      'FORBIDDEN',
      "releases are the operator's: an agent downloads them with its broker credential",
    );
  }
}
