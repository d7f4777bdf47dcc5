/**
 * Fleet facts (docs/fleet.md, "Fleet facts"): what a field engineer needs of each
 * terminal, from the terminal's record and what its agent last said of itself and of its
 * configuration. An extension operation of its own, so that the spec's terminal status
 * object keeps exactly the spec's members.
 */
import {
  ConfigReportMessage,
  FactsMessage,
  UpdateStatusMessage,
  type FleetFactsRequest,
  type TerminalFacts,
} from '../../protocol/index.js';
import type { Clock } from '../../common/clock.js';
import type { Principal } from '../accounts/principal.js';
import { ApiError } from '../errors.js';
import type { TerminalRecord } from '../store/records.js';
import type { Store } from '../store/store.js';
import type { TerminalRegistry } from '../terminals/registry.js';
import { MAX_LISTED_TERMINALS } from './configs.js';

export async function fleetFacts(
  deps: { store: Store; registry: TerminalRegistry; clock: Clock },
  principal: Principal,
  request: FleetFactsRequest,
): Promise<TerminalFacts[]> {
  const { accountId, terminalId } = principal;
  // A terminal credential names its own terminal; another answers as one that does not
  // exist (docs/tenants.md, "Who may do what"). The account's whole fleet is not its.
  if (terminalId !== undefined && request.terminal_id === undefined) {
    throw new ApiError(
      'FORBIDDEN',
      'a terminal credential reads the facts of its own terminal only: name it (terminal_id)',
    );
  }
  if (terminalId !== undefined && request.terminal_id !== terminalId) {
    throw new ApiError('TERMINAL_NOT_FOUND', `no terminal ${request.terminal_id}`);
  }
  let terminals = await deps.registry.listTerminals(accountId, request.terminal_id);
  if (request.terminal_id !== undefined && terminals.length === 0) {
    throw new ApiError('TERMINAL_NOT_FOUND', `no terminal ${request.terminal_id}`);
  }
  if (request.cohort !== undefined)
    terminals = terminals.filter((t) => t.cohort === request.cohort);
  const facts: TerminalFacts[] = [];
  for (const terminal of terminals.slice(0, MAX_LISTED_TERMINALS)) {
    facts.push(factsOf(terminal, await deps.store.fleetReports(terminal.id), deps.clock.now()));
  }
  return facts;
}

function factsOf(
  terminal: TerminalRecord,
  reports: Awaited<ReturnType<Store['fleetReports']>>,
  now: Date,
): TerminalFacts {
  const connected = terminal.status.connected === true;
  const parsedFacts = FactsMessage.safeParse(reports.find((r) => r.kind === 'facts')?.body);
  const parsedConfig = ConfigReportMessage.safeParse(
    reports.find((r) => r.kind === 'config')?.body,
  );
  const parsedUpdate = UpdateStatusMessage.safeParse(
    reports.find((r) => r.kind === 'update')?.body,
  );
  const facts = parsedFacts.success ? parsedFacts.data : undefined;
  const config = parsedConfig.success ? parsedConfig.data : undefined;
  return {
    terminal_id: terminal.id,
    name: terminal.name ?? null,
    cohort: terminal.cohort ?? null,
    agent_version: facts?.agent_version ?? null,
    node_version: facts?.node_version ?? null,
    reader_protocol: facts?.reader.protocol ?? terminal.capabilities.reader?.protocol ?? null,
    reader_model: facts?.reader.model ?? null,
    reader_firmware: facts?.reader.firmware ?? null,
    config_version: config?.applied_version ?? null,
    config_status: config?.status ?? null,
    last_update_outcome: parsedUpdate.success ? (parsedUpdate.data.last?.result ?? null) : null,
    // Connected: its broker session is alive now (the broker checks it every keepalive).
    // Gone: the status changed last when it went, by its last will or its goodbye.
    last_seen: connected ? now.toISOString() : (terminal.status.updated_at ?? null),
    connected,
  };
}
