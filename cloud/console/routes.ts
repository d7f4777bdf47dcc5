/**
 * The web console's routes: `/` redirects to `/console/`, which serves the built page and
 * its two assets with strict security headers; `/console/session` signs in (the API's
 * credentials, throttled by the same Authenticator) and out. The page then calls the
 * API's own operations, authenticated by the session cookie (sessionPrincipal).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Authenticator } from '../accounts/authenticator.js';
import { sourceOf } from '../../common/sign-in-throttle.js';
import type { Principal } from '../accounts/principal.js';
import { ApiError } from '../errors.js';
import { loadAssets, type Asset } from './assets.js';
import {
  CSRF_HEADER,
  SESSION_COOKIE,
  SESSION_TTL_MS,
  csrfMatches,
  type ConsoleSession,
  type ConsoleSessions,
} from './sessions.js';

export interface ConsoleOptions {
  sessions: ConsoleSessions;
  authenticator: Authenticator;
  /** Where the built assets are; default dist/console/ of this package. */
  assetsDir?: string;
}

/** Every console answer: nothing runs but our own script, nothing frames the page. */
export const SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
} as const;

const SignIn = z.object({
  username: z.string().min(1).max(255),
  password: z.string().min(1).max(1024),
});

export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * The principal of a request that authenticates by the console's cookie; undefined when it
 * sends an Authorization header or no cookie (the API's Basic auth then decides). A cookie
 * without the session's CSRF header is refused: it may come from another site's form.
 */
export async function sessionPrincipal(
  sessions: ConsoleSessions,
  request: FastifyRequest,
): Promise<Principal | undefined> {
  if (request.headers.authorization) return undefined;
  const cookie = cookieValue(request.headers.cookie, SESSION_COOKIE);
  if (!cookie) {
    // The console's own call without its cookie (gone, or cleared): refused without the
    // Basic challenge, which a browser would answer with its own password dialog.
    if (request.headers[CSRF_HEADER] !== undefined) {
      throw new ApiError('UNAUTHORIZED', 'the console session has ended; sign in again');
    }
    return undefined;
  }
  const session = await sessions.resolve(cookie);
  if (!csrfMatches(session, request.headers[CSRF_HEADER])) {
    throw new ApiError('FORBIDDEN', `a console request must carry the session's ${CSRF_HEADER}`);
  }
  return session.principal;
}

export function registerConsole(app: FastifyInstance, options: ConsoleOptions): void {
  const assets = loadAssets(options.assetsDir);
  const { sessions, authenticator } = options;

  const secure = (reply: FastifyReply) => reply.headers(SECURITY_HEADERS);
  const sendAsset = (request: FastifyRequest, reply: FastifyReply, name: string) => {
    secure(reply);
    const asset: Asset | undefined = assets?.get(name);
    if (!asset) {
      return reply
        .status(503)
        .type('text/plain; charset=utf-8')
        .send('The console is not built: run `npm run build`.\n');
    }
    reply.header('ETag', asset.etag).header('Cache-Control', 'no-cache');
    if (request.headers['if-none-match'] === asset.etag) return reply.status(304).send();
    return reply.type(asset.type).send(asset.body);
  };
  const view = (session: ConsoleSession) => ({
    username: session.principal.username,
    account_id: session.principal.accountId,
    ...(session.principal.terminalId ? { terminal_id: session.principal.terminalId } : {}),
    role: session.principal.role,
    csrf_token: session.csrfToken,
    expires_at: new Date(session.expiresAt).toISOString(),
  });

  app.get('/', async (_request, reply) => secure(reply).redirect('/console/', 302));
  app.get('/console', async (_request, reply) => secure(reply).redirect('/console/', 302));
  app.get('/console/', async (request, reply) => sendAsset(request, reply, 'index.html'));
  app.get('/console/app.js', async (request, reply) => sendAsset(request, reply, 'app.js'));
  app.get('/console/style.css', async (request, reply) => sendAsset(request, reply, 'style.css'));

  // The session of the page's cookie, with its CSRF token: a page of another origin cannot
  // read this answer (no CORS), so the token stays with the console.
  app.get('/console/session', async (request, reply) => {
    secure(reply).header('Cache-Control', 'no-store');
    const cookie = cookieValue(request.headers.cookie, SESSION_COOKIE);
    if (!cookie) throw new ApiError('UNAUTHORIZED', 'not signed in');
    return view(await sessions.resolve(cookie));
  });

  app.post('/console/session', async (request, reply) => {
    secure(reply).header('Cache-Control', 'no-store');
    const { username, password } = SignIn.parse(request.body ?? {});
    const basic = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
    try {
      await authenticator.authenticate(basic, sourceOf(request.ip));
    } catch (error) {
      request.log.warn(
        { username: username.slice(0, 64), source: request.ip, code: (error as ApiError).code },
        'console sign-in failed',
      );
      // Without the Basic challenge: a browser would answer it with its own password dialog.
      if (error instanceof ApiError && error.code === 'UNAUTHORIZED') {
        throw new ApiError('UNAUTHORIZED', error.message);
      }
      throw error;
    }
    const { cookie, session } = await sessions.issue(username);
    reply.header('Set-Cookie', sessionCookie(cookie, request.protocol === 'https'));
    return view(session);
  });

  app.post('/console/session/end', async (request, reply) => {
    secure(reply).header('Cache-Control', 'no-store');
    const cookie = cookieValue(request.headers.cookie, SESSION_COOKIE);
    if (cookie) {
      const session = await sessions.resolve(cookie).catch(() => undefined);
      if (session && !csrfMatches(session, request.headers[CSRF_HEADER])) {
        throw new ApiError('FORBIDDEN', `signing out must carry the session's ${CSRF_HEADER}`);
      }
      sessions.signOut(cookie);
    }
    reply.header('Set-Cookie', sessionCookie('', request.protocol === 'https', 0));
    return { signed_out: true };
  });
}

function sessionCookie(value: string, https: boolean, maxAgeS = SESSION_TTL_MS / 1000): string {
  return [
    `${SESSION_COOKIE}=${value}`,
    'Path=/',
    'HttpOnly',
    'SameSite=Strict',
    `Max-Age=${maxAgeS}`,
    ...(https ? ['Secure'] : []),
  ].join('; ');
}
