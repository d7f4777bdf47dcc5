/** Creates terminals and the credentials that reach them. */
import type { SimulatorCreateResponse, TerminalReadings } from '../../protocol/index.js';
import { hashSecret } from '../accounts/secrets.js';
import type { Clock } from '../clock.js';
import { newSecret, newSimulatorTerminalId, newUsername } from '../ids.js';
import type { TerminalRecord } from '../store/records.js';
import type { Store } from '../store/store.js';

const SIMULATOR_READINGS: TerminalReadings = {
  connected: true,
  transaction_state: 'READY',
  screen_message: 'Ready',
  battery_percentage: 100,
  battery_charging: false,
  plugged_in: true,
};

export class TerminalRegistry {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  /** A simulated terminal (with printer and battery) and a credential that reaches only it. */
  async createSimulator(
    accountId: string,
  ): Promise<{ terminal: TerminalRecord; issued: SimulatorCreateResponse }> {
    const now = this.clock.now().toISOString();
    let id = newSimulatorTerminalId();
    while (await this.store.getTerminal(id)) id = newSimulatorTerminalId();
    const terminal: TerminalRecord = {
      id,
      accountId,
      kind: 'SIMULATOR',
      capabilities: { printer: true, battery: true },
      status: { terminal_id: id, updated_at: now, ...SIMULATOR_READINGS },
      createdAt: now,
    };
    await this.store.createTerminal(terminal);
    const username = newUsername();
    const password = newSecret();
    await this.store.putCredential({
      username,
      secretHash: await hashSecret(password),
      accountId,
      terminalId: id,
      createdAt: now,
    });
    return { terminal, issued: { terminal_id: id, username, password } };
  }
}
