/**
 * Remote diagnostics (docs/fleet.md, "Diagnostics"): a request goes to the terminal's
 * agent over MQTT with a fresh correlation id, and the answer with that id, from that
 * terminal, ends the wait. A terminal that is not connected is refused at once (409
 * TERMINAL_OFFLINE) rather than waited for; one that does not answer in time gets 504
 * TERMINAL_NO_ANSWER. Each account has its own share of the requests that may wait at
 * once (`perAccount`), so that one account cannot take them all; the relay as a whole
 * keeps a ceiling above the shares (WAITING_CEILING).
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type {
  DiagnosticReplyMessage,
  DiagnosticRequestMessage,
  DiagnosticsRequest,
  DiagnosticsResponse,
} from '../../protocol/index.js';
import type { Timers } from '../../common/clock.js';
import type { Principal } from '../accounts/principal.js';
import { Cancellation } from '../cancellation.js';
import { ApiError } from '../errors.js';
import { longPoll, type Parked } from '../long-poll.js';
import type { TerminalRecord } from '../store/records.js';
import type { Store } from '../store/store.js';

export const DEFAULT_DIAGNOSTIC_WAIT_S = 10;
/**
 * Requests waiting for an answer on one relay at once, all accounts together: a bound on
 * the relay's memory (a parked request holds ≈ 10 KB, an answer at most 15 KiB: ≈ 25 MB
 * at the ceiling), reached only when fifty accounts each fill their share of the default.
 */
export const WAITING_CEILING = 1_000;

interface Pending {
  terminalId: string;
  parked: Parked<DiagnosticReplyMessage | undefined>;
}

export interface FleetDiagnosticsOptions {
  store: Store;
  /** Whether the terminal has an agent to ask (a simulator inside the relay has none). */
  hasAgent: (terminal: TerminalRecord) => boolean;
  /** Answers false when the request could not leave (the relay's broker link is down). */
  send: (terminalId: string, request: DiagnosticRequestMessage) => boolean;
  /** Requests one account may have waiting at once (TPS_DIAGNOSTICS_PER_ACCOUNT). */
  perAccount: number;
  timers: Timers;
  logger: Logger;
}

export class FleetDiagnostics {
  private readonly pending = new Map<string, Pending>();
  /** Requests waiting, per account, from the check of the bound to the end of the wait. */
  private readonly waiting = new Map<string, number>();
  private waitingTotal = 0;
  /** Cancelled at shutdown: waiting requests end as unanswered. */
  private readonly closing = new Cancellation();

  constructor(private readonly options: FleetDiagnosticsOptions) {}

  async request(
    principal: Principal,
    body: DiagnosticsRequest,
    gone?: Cancellation,
  ): Promise<DiagnosticsResponse> {
    const { store } = this.options;
    if (principal.terminalId !== undefined) {
      throw new ApiError('FORBIDDEN', 'only an account credential can ask for diagnostics');
    }
    const terminal = await store.getTerminal(body.terminal_id);
    if (!terminal || terminal.accountId !== principal.accountId) {
      throw new ApiError('TERMINAL_NOT_FOUND', `no terminal ${body.terminal_id}`);
    }
    if (!this.options.hasAgent(terminal)) {
      throw new ApiError(
        'UNSUPPORTED_BY_TERMINAL',
        `terminal ${terminal.id} is simulated inside the relay: it has no agent to ask`,
      );
    }
    if (terminal.status.connected !== true) {
      throw new ApiError(
        'TERMINAL_OFFLINE',
        `terminal ${terminal.id} is not connected (last seen ${terminal.status.updated_at}); ask again once it is`,
      );
    }
    const { accountId } = principal;
    const ofAccount = this.waiting.get(accountId) ?? 0;
    if (ofAccount >= this.options.perAccount) {
      throw new ApiError(
        'TOO_MANY_REQUESTS',
        `this account has ${ofAccount} diagnostic requests waiting for terminals, its most at once`,
        { 'Retry-After': '5' },
      );
    }
    if (this.waitingTotal >= WAITING_CEILING) {
      throw new ApiError('SERVICE_BUSY', 'too many diagnostic requests wait for terminals', {
        'Retry-After': '5',
      });
    }
    // Counted from here, synchronously after the check: requests arriving together cannot
    // all pass it.
    this.waiting.set(accountId, ofAccount + 1);
    this.waitingTotal++;
    try {
      return await this.ask(terminal, body, gone);
    } finally {
      this.waitingTotal--;
      const left = (this.waiting.get(accountId) ?? 1) - 1;
      if (left === 0) this.waiting.delete(accountId);
      else this.waiting.set(accountId, left);
    }
  }

  private async ask(
    terminal: TerminalRecord,
    body: DiagnosticsRequest,
    gone: Cancellation | undefined,
  ): Promise<DiagnosticsResponse> {
    const { timers, logger } = this.options;
    const request: DiagnosticRequestMessage = {
      request_id: randomBytes(12).toString('hex'),
      kind: body.kind,
      ...(body.lines !== undefined ? { lines: body.lines } : {}),
    };
    const waitMs = (body.wait_seconds ?? DEFAULT_DIAGNOSTIC_WAIT_S) * 1000;
    const reply = await longPoll<DiagnosticReplyMessage | undefined>(
      {
        waitMs,
        otherwise: () => undefined,
        cancelledBy: gone ? [gone, this.closing] : [this.closing],
        timers,
      },
      (parked) => {
        this.pending.set(request.request_id, { terminalId: terminal.id, parked });
        if (!this.options.send(terminal.id, request)) parked.settle(undefined);
        return () => this.pending.delete(request.request_id);
      },
    );
    if (!reply) {
      logger.info({ terminalId: terminal.id, kind: body.kind }, 'no diagnostic answer in time');
      throw new ApiError(
        'TERMINAL_NO_ANSWER',
        `terminal ${terminal.id} did not answer within ${waitMs / 1000} s`,
      );
    }
    if (reply.error !== undefined) {
      throw new ApiError('DIAGNOSTICS_FAILED', `terminal ${terminal.id}: ${reply.error}`);
    }
    return {
      terminal_id: terminal.id,
      kind: reply.kind,
      ...(reply.doctor ? { doctor: reply.doctor } : {}),
      ...(reply.logs ? { logs: reply.logs } : {}),
      ...(reply.trace ? { trace: reply.trace } : {}),
    };
  }

  /** An agent's answer; one for another request, or from another terminal, is ignored. */
  replied(terminalId: string, reply: DiagnosticReplyMessage): void {
    const pending = this.pending.get(reply.request_id);
    if (pending?.terminalId === terminalId) pending.parked.settle(reply);
  }

  /** Waiting requests end as unanswered. */
  close(): void {
    this.closing.cancel();
  }
}
