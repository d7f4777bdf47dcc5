/**
 * A TCP proxy (node:net) between a POS client and the relay that can lose or hold each
 * HTTP exchange at a chosen step:
 *
 *   client ──request──▶ proxy ──request──▶ relay
 *   client ◀─response── proxy ◀─response── relay
 *
 *   drop-request    the client's connection is cut when its request arrives; the relay
 *                   never sees it
 *   stall-request   the request is held; release() sends it on (a late request: the
 *                   relay answers into the void if the client has given up), cut()
 *                   loses it
 *   drop-response   the relay gets the request and answers; the client's connection is
 *                   cut before the answer reaches it
 *   stall-response  the relay's answer is held; release() delivers it, cut() loses it
 *   cut-in-flight   the request reaches the relay, then both connections are cut while
 *                   the relay still works on it (mid-long-poll), `afterMs` later or when
 *                   its answer comes, whichever is first: the answer never arrives
 *   unavailable     answered by the proxy itself, as a load balancer in front of a
 *                   restarting relay would: 503 SERVICE_UNAVAILABLE with Retry-After
 *
 * Just enough HTTP/1.1 to find where requests and responses end (Content-Length or
 * chunked), which is all undici and fastify use. Rules are matched in order against each
 * request; each fires `times` times (default once), then passes.
 */
import net from 'node:net';

export type Fault =
  | 'pass'
  | 'drop-request'
  | 'stall-request'
  | 'drop-response'
  | 'stall-response'
  | 'cut-in-flight'
  | 'unavailable';

export interface ProxiedRequest {
  seq: number;
  method: string;
  /** e.g. /pos/v1/transaction/purchase */
  path: string;
  body: string;
  /** The parsed JSON body, when it is JSON. */
  json: Record<string, unknown> | undefined;
}

export interface Exchange {
  request: ProxiedRequest;
  fault: Fault;
  /** Set once the relay's answer arrived at the proxy. */
  response?: { status: number; body: string };
  /** Sends a held request on, or delivers a held response. */
  release(): void;
  /** Cuts the client's connection (and the relay's), losing whatever is held. */
  cut(): void;
}

export interface Rule {
  /** Matched against the operation, e.g. `/transaction/purchase`, or the whole request. */
  match: string | ((request: ProxiedRequest) => boolean);
  fault: Fault;
  times?: number;
  /** cut-in-flight: how long after forwarding the connections are cut (default 100 ms). */
  afterMs?: number;
  /** unavailable: the Retry-After header, in seconds (default 1). */
  retryAfterS?: number;
}

interface Waiter {
  match: (exchange: Exchange) => boolean;
  stage: 'request' | 'response';
  resolve: (exchange: Exchange) => void;
}

interface Message {
  head: string;
  bytes: Buffer;
}

export class FaultyProxy {
  readonly exchanges: Exchange[] = [];
  private readonly rules: Array<Rule & { left: number }> = [];
  private readonly waiters: Waiter[] = [];
  private readonly sockets = new Set<net.Socket>();
  private seq = 0;

  private constructor(
    private readonly server: net.Server,
    private readonly target: { host: string; port: number },
    readonly port: number,
    private readonly basePath: string,
  ) {}

  /** Starts a proxy on a free port in front of `relayBaseUrl` (e.g. http://127.0.0.1:1234/pos). */
  static async start(relayBaseUrl: string): Promise<FaultyProxy> {
    const url = new URL(relayBaseUrl);
    const target = { host: url.hostname, port: Number(url.port) };
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    const proxy = new FaultyProxy(server, target, port, url.pathname.replace(/\/$/, ''));
    server.on('connection', (client) => proxy.connection(client));
    return proxy;
  }

  /** The relay's base URL as reached through the proxy. */
  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}${this.basePath}`;
  }

  /** Adds a rule; rules are tried in the order they were added. */
  plan(rule: Rule): this {
    this.rules.push({ ...rule, left: rule.times ?? 1 });
    return this;
  }

  /** Forgets every rule not yet used up. */
  clearPlan(): void {
    this.rules.length = 0;
  }

  /** Resolves with the first exchange (past or future) matching, once it reached `stage`. */
  waitFor(
    match: string | ((request: ProxiedRequest) => boolean),
    stage: 'request' | 'response' = 'request',
  ): Promise<Exchange> {
    const test = (e: Exchange) =>
      matches(match, e.request) && (stage === 'request' || e.response !== undefined);
    const seen = this.exchanges.find(test);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve) => this.waiters.push({ match: test, stage, resolve }));
  }

  /** Operations seen, in order, e.g. ['/transaction/purchase', '/transaction/confirm']. */
  operations(): string[] {
    return this.exchanges.map((e) => operationOf(e.request.path));
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private connection(client: net.Socket): void {
    this.sockets.add(client);
    let clientGone = false;
    let current: (Exchange & { held?: 'request' | 'response'; heldBytes?: Buffer }) | undefined;
    const queue: Message[] = [];
    const requests = new MessageReader('request');
    const responses = new MessageReader('response');

    // The relay connection is opened with the first request that goes on, so a cut
    // client never leaves the relay an empty connection.
    let upstream: net.Socket | undefined;
    const relay = (): net.Socket => {
      if (upstream) return upstream;
      const socket = net.connect(this.target);
      this.sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => {
        this.sockets.delete(socket);
        if (current?.held !== 'response') client.destroy();
      });
      socket.on('data', (chunk: Buffer) => {
        for (const message of responses.push(chunk)) answer(message);
      });
      upstream = socket;
      return socket;
    };
    const cutBoth = () => {
      clientGone = true;
      client.destroy();
      upstream?.destroy();
    };
    client.on('close', () => {
      this.sockets.delete(client);
      clientGone = true;
      // A held request stays deliverable (a late request); anything else ends here.
      if (current?.held !== 'request') upstream?.destroy();
    });
    client.on('error', () => {});

    const next = () => {
      if (current || queue.length === 0) return;
      const message = queue.shift()!;
      const request = parseRequest(message, ++this.seq);
      const rule = this.ruleFor(request);
      const fault = rule?.fault ?? 'pass';
      const exchange: Exchange & { held?: 'request' | 'response'; heldBytes?: Buffer } = {
        request,
        fault,
        release: () => {
          if (exchange.held === 'request') {
            exchange.held = undefined;
            relay().write(message.bytes);
          } else if (exchange.held === 'response') {
            const bytes = exchange.heldBytes!;
            exchange.held = undefined;
            if (!clientGone) client.write(bytes);
            finish();
          }
        },
        cut: () => {
          exchange.held = undefined;
          cutBoth();
        },
      };
      current = exchange;
      this.exchanges.push(exchange);
      this.notify(exchange, 'request');
      switch (fault) {
        case 'drop-request':
          cutBoth();
          return;
        case 'stall-request':
          exchange.held = 'request';
          return;
        case 'unavailable': {
          const body = JSON.stringify({
            error: { code: 'SERVICE_UNAVAILABLE', description: 'The relay is restarting' },
          });
          exchange.response = { status: 503, body };
          this.notify(exchange, 'response');
          client.write(
            `HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: ${rule?.retryAfterS ?? 1}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
          );
          finish();
          return;
        }
        case 'cut-in-flight':
          relay().write(message.bytes);
          setTimeout(cutBoth, rule?.afterMs ?? 100);
          return;
        default:
          relay().write(message.bytes);
      }
    };
    const finish = () => {
      current = undefined;
      if (clientGone) upstream?.destroy();
      else next();
    };
    const answer = (message: Message) => {
      const exchange = current;
      if (!exchange) return;
      exchange.response = parseResponse(message);
      this.notify(exchange, 'response');
      if (exchange.fault === 'drop-response' || exchange.fault === 'cut-in-flight') {
        cutBoth();
      } else if (exchange.fault === 'stall-response') {
        exchange.held = 'response';
        exchange.heldBytes = message.bytes;
      } else {
        if (!clientGone) client.write(message.bytes);
        finish();
      }
    };

    client.on('data', (chunk: Buffer) => {
      for (const message of requests.push(chunk)) queue.push(message);
      next();
    });
  }

  private ruleFor(request: ProxiedRequest): Rule | undefined {
    for (const rule of this.rules) {
      if (rule.left > 0 && matches(rule.match, request)) {
        rule.left -= 1;
        return rule;
      }
    }
    return undefined;
  }

  private notify(exchange: Exchange, stage: 'request' | 'response'): void {
    for (const waiter of [...this.waiters]) {
      if (waiter.stage === stage && waiter.match(exchange)) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve(exchange);
      }
    }
  }
}

const operationOf = (path: string) => path.replace(/^.*\/v[01](?=\/)/, '');

function matches(match: Rule['match'], request: ProxiedRequest): boolean {
  return typeof match === 'string' ? operationOf(request.path) === match : match(request);
}

function parseRequest(message: Message, seq: number): ProxiedRequest {
  const [line = ''] = message.head.split('\r\n');
  const [method = '', path = ''] = line.split(' ');
  const body = message.bytes.subarray(message.head.length + 4).toString('utf8');
  let json: Record<string, unknown> | undefined;
  try {
    json = JSON.parse(body) as Record<string, unknown>;
  } catch {
    json = undefined;
  }
  return { seq, method, path, body, json };
}

function parseResponse(message: Message): { status: number; body: string } {
  const status = Number(message.head.split(' ')[1]);
  return { status, body: message.bytes.subarray(message.head.length + 4).toString('utf8') };
}

/** Cuts a byte stream into whole HTTP/1.1 messages (head + Content-Length or chunked body). */
class MessageReader {
  private buffer = Buffer.alloc(0);

  constructor(private readonly kind: 'request' | 'response') {}

  push(chunk: Buffer): Message[] {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    const messages: Message[] = [];
    for (;;) {
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end < 0) return messages;
      const head = this.buffer.subarray(0, end).toString('latin1');
      const length = this.bodyLength(head, end + 4);
      if (length === undefined) return messages;
      const total = end + 4 + length;
      messages.push({ head, bytes: this.buffer.subarray(0, total) });
      this.buffer = this.buffer.subarray(total);
    }
  }

  /** Body length in bytes, or undefined while the body is incomplete. */
  private bodyLength(head: string, bodyStart: number): number | undefined {
    const headers = head.toLowerCase();
    const contentLength = /\r\ncontent-length:\s*(\d+)/.exec(headers);
    if (contentLength) {
      const length = Number(contentLength[1]);
      return this.buffer.length - bodyStart >= length ? length : undefined;
    }
    if (/\r\ntransfer-encoding:\s*chunked/.test(headers)) {
      const last = this.buffer.indexOf('\r\n0\r\n\r\n', bodyStart - 2);
      return last < 0 ? undefined : last + 7 - bodyStart;
    }
    if (this.kind === 'response' && /^http\/1\.1 (1\d\d|204|304)/.test(headers)) return 0;
    return 0;
  }
}
