/**
 * Why an HTTP request never got an answer, said so a person can act on it. `fetch` throws
 * "fetch failed" and keeps the real reason (refused, no such host, time-out, TLS) in its
 * `cause`, sometimes one level further down (an AggregateError for each address tried).
 */

interface SystemErrorFields {
  code?: unknown;
  address?: unknown;
  port?: unknown;
  hostname?: unknown;
  errors?: unknown;
  reason?: unknown;
}

/** The innermost error that carries a code: what the system or the TLS layer said. */
function rootCause(error: unknown): (Error & SystemErrorFields) | undefined {
  let current: unknown = error;
  let found: (Error & SystemErrorFields) | undefined;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    const fields = current as Error & SystemErrorFields;
    if (typeof fields.code === 'string') found = fields;
    const inner: unknown = Array.isArray(fields.errors) ? fields.errors[0] : fields.cause;
    current = inner;
  }
  return found;
}

const TLS_CODE = /CERT|TLS|SSL|SELF_SIGNED|UNABLE_TO_|EPROTO|HANDSHAKE/;

/**
 * One line naming where a request went and how it failed, e.g.
 * `127.0.0.1:8080 refused the connection (ECONNREFUSED)`. `url` is the address asked for.
 */
export function unreachableText(url: string, error: unknown): string {
  const target = hostOf(url);
  if (error instanceof Error && error.name === 'TimeoutError') {
    return `no answer from ${target} in time (${error.message})`;
  }
  const cause = rootCause(error);
  if (!cause) {
    const message = error instanceof Error ? error.message : String(error);
    return `${target}: ${message}`;
  }
  const code = String(cause.code);
  const where =
    typeof cause.address === 'string'
      ? `${cause.address}${typeof cause.port === 'number' ? `:${cause.port}` : ''}`
      : target;
  switch (code) {
    case 'ECONNREFUSED':
      return `${where} refused the connection (ECONNREFUSED): nothing listens there`;
    case 'ENOTFOUND':
      return `no address found for ${typeof cause.hostname === 'string' ? cause.hostname : target} (ENOTFOUND)`;
    case 'EAI_AGAIN':
      return `the name of ${target} could not be looked up (EAI_AGAIN): check DNS`;
    case 'ETIMEDOUT':
    case 'UND_ERR_CONNECT_TIMEOUT':
      return `no connection to ${where} in time (${code})`;
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
      return `${target} accepted the connection but did not answer in time (${code})`;
    case 'ECONNRESET':
    case 'EPIPE':
    case 'UND_ERR_SOCKET':
      return `${target} closed the connection before answering (${code})`;
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `${where} cannot be reached from here (${code})`;
  }
  // OpenSSL's messages carry its source file and line; its `reason` is the readable part.
  const said = typeof cause.reason === 'string' ? cause.reason : cause.message.split('\n')[0];
  if (TLS_CODE.test(code)) return `TLS with ${target} failed: ${said} (${code})`;
  return `${target}: ${said} (${code})`;
}

function hostOf(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}`;
  } catch {
    return url;
  }
}
