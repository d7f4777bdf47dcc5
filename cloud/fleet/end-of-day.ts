/**
 * End-of-day on demand (docs/fleet.md, "End-of-day"): `POST /fleet/end-of-day` and
 * `tps fleet end-of-day` queue a `terminal.end_of_day` command for one terminal or each
 * of a cohort, in the command outbox (kept and sent again until the agent acknowledges
 * it). The agent runs it when no payment runs and reports a settlement, which becomes a
 * TerminalSettlement event.
 */
import type {
  FleetEndOfDayRequest,
  FleetEndOfDayResponse,
  TerminalCommand,
} from '../../protocol/index.js';
import type { Principal } from '../accounts/principal.js';
import { ApiError } from '../errors.js';
import { newCommandId } from '../ids.js';
import type { TerminalRegistry } from '../terminals/registry.js';

export interface FleetEndOfDayOptions {
  registry: Pick<TerminalRegistry, 'listTerminals'>;
  /** Queues a command durably, then sends it (CommandOutbox.queue). */
  queue: (terminalId: string, command: TerminalCommand) => Promise<void>;
}

export class FleetEndOfDay {
  constructor(private readonly options: FleetEndOfDayOptions) {}

  async request(
    principal: Principal,
    request: FleetEndOfDayRequest,
  ): Promise<FleetEndOfDayResponse> {
    if (principal.terminalId !== undefined) {
      throw new ApiError('FORBIDDEN', 'only an account credential can close a terminal day');
    }
    const all = await this.options.registry.listTerminals(principal.accountId);
    const { terminal_id: terminalId, cohort } = request;
    const reached =
      terminalId !== undefined
        ? all.filter((t) => t.id === terminalId)
        : all.filter((t) => t.cohort === cohort);
    if (terminalId !== undefined && reached.length === 0) {
      throw new ApiError('TERMINAL_NOT_FOUND', `no terminal ${terminalId}`);
    }
    const ids = reached.map((t) => t.id).sort();
    for (const id of ids) {
      await this.options.queue(id, {
        type: 'terminal.end_of_day',
        command_id: newCommandId(),
      });
    }
    return { terminal_ids: ids };
  }
}
