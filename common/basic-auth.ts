/**
 * HTTP Basic credentials (RFC 7617), parsed strictly and the same way wherever a
 * credential is checked (the relay's API and console, the agent's local API): one
 * `Basic` token of base64, a non-empty username before the first colon.
 */
export type BasicCredentials =
  { ok: true; username: string; secret: string } | { ok: false; reason: string };

export function parseBasicAuthorization(header: string | undefined): BasicCredentials {
  if (!header) return { ok: false, reason: 'missing Authorization header (HTTP Basic)' };
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!match?.[1]) return { ok: false, reason: 'Authorization must be HTTP Basic' };
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 1) return { ok: false, reason: 'malformed Basic credentials' };
  return { ok: true, username: decoded.slice(0, colon), secret: decoded.slice(colon + 1) };
}
