/** Creates terminals and the credentials that reach them. */
import type {
  ReaderCapabilities,
  ReaderProtocol,
  SimulatorCreateResponse,
  TerminalReadings,
} from '../../protocol/index.js';
import { hashForBroker } from '../accounts/mosquitto-hash.js';
import { hashGeneratedSecret } from '../accounts/secrets.js';
import type { Clock } from '../../common/clock.js';
import { newAgentTerminalId, newSecret, newSimulatorTerminalId, newUsername } from '../ids.js';
import type { TerminalCapabilities, TerminalRecord } from '../store/records.js';
import type { Store } from '../store/store.js';

const SIMULATOR_READINGS: TerminalReadings = {
  connected: true,
  transaction_state: 'READY',
  screen_message: 'Ready',
  battery_percentage: 100,
  battery_charging: false,
  plugged_in: true,
};

/**
 * What an emulated ZVT terminal's agent is taken to do until it says (the driver's generic
 * profile): no pause at customer identification, no account check, no cashback.
 */
const ZVT_SIMULATOR_READER: ReaderCapabilities = {
  protocol: 'zvt',
  pause_on_customer_identified: false,
  account_check: false,
  cashback: false,
  refund: true,
  cancel: true,
};

export class TerminalRegistry {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    /** A POS credential was issued for a terminal (committed): its agent hears of it. */
    private readonly posCredentialIssued?: (terminalId: string) => void,
  ) {}

  /** A real terminal, its POS credential, and the credential its agent signs in to the broker with. */
  async createAgentTerminal(
    accountId: string,
    capabilities: TerminalCapabilities,
  ): Promise<{ terminal: TerminalRecord; issued: SimulatorCreateResponse; agentSecret: string }> {
    const now = this.clock.now().toISOString();
    let id = newAgentTerminalId();
    while (await this.store.getTerminal(id)) id = newAgentTerminalId();
    const terminal: TerminalRecord = {
      id,
      accountId,
      kind: 'AGENT',
      capabilities,
      status: { terminal_id: id, updated_at: now, connected: false },
      createdAt: now,
    };
    await this.store.createTerminal(terminal);
    const agentSecret = newSecret();
    // Mosquitto's own hash format: `tps broker mosquitto` writes it into a password file as is.
    await this.store.putAgentCredential(id, hashForBroker(agentSecret), now);
    return { terminal, issued: await this.issuePosCredential(accountId, id, now), agentSecret };
  }

  /** A POS credential that reaches only this terminal; the password is answered this once. */
  async issuePosCredential(
    accountId: string,
    terminalId: string,
    now: string,
  ): Promise<SimulatorCreateResponse> {
    const username = newUsername();
    const password = newSecret();
    await this.store.putCredential({
      username,
      secretHash: hashGeneratedSecret(password),
      accountId,
      terminalId,
      createdAt: now,
    });
    this.posCredentialIssued?.(terminalId);
    return { terminal_id: terminalId, username, password };
  }

  /**
   * A simulated terminal (with printer and battery) and a credential that reaches only it.
   * One with a ZVT reader is known as such from the start (its agent says what exactly
   * when it comes online), so that it is started with that reader after a restart.
   */
  async createSimulator(
    accountId: string,
    readerProtocol: ReaderProtocol = 'native',
  ): Promise<{ terminal: TerminalRecord; issued: SimulatorCreateResponse }> {
    const now = this.clock.now().toISOString();
    let id = newSimulatorTerminalId();
    while (await this.store.getTerminal(id)) id = newSimulatorTerminalId();
    const terminal: TerminalRecord = {
      id,
      accountId,
      kind: 'SIMULATOR',
      capabilities: {
        printer: true,
        battery: true,
        ...(readerProtocol === 'zvt' ? { reader: ZVT_SIMULATOR_READER } : {}),
      },
      status: { terminal_id: id, updated_at: now, ...SIMULATOR_READINGS },
      createdAt: now,
    };
    await this.store.createTerminal(terminal);
    return { terminal, issued: await this.issuePosCredential(accountId, id, now) };
  }

  /**
   * The terminals a credential reaches, oldest first: its own for a terminal credential,
   * else every one of its account. Reads every terminal of the store: fine for the fleets
   * one relay serves today; a store query by account is the way on when that changes.
   */
  async listTerminals(accountId: string, terminalId?: string): Promise<TerminalRecord[]> {
    if (terminalId !== undefined) {
      const terminal = await this.store.getTerminal(terminalId);
      return terminal && terminal.accountId === accountId ? [terminal] : [];
    }
    const all = await this.store.listTerminals();
    return all
      .filter((terminal) => terminal.accountId === accountId)
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  }
}
