/**
 * Which relay hosts simulated terminals: the leading one, which runs the background work.
 * A relay that creates a simulator while another leads tells the leader through the change
 * bus, and the leader starts it.
 */
import type { ChangeBus } from '../cluster/change-bus.js';
import type { Store } from '../store/store.js';
import type { TerminalRecord } from '../store/records.js';
import type { SimulatorFleet } from './fleet.js';

export class SimulatorPlacement {
  constructor(
    private readonly simulators: SimulatorFleet,
    private readonly bus: Pick<ChangeBus, 'announce'>,
    private readonly store: Pick<Store, 'listTerminals'>,
    private readonly leading: () => boolean,
  ) {}

  /**
   * Starts every stored simulator not yet running here, when this relay leads: on taking
   * the lead, and after the bus may have missed an announcement.
   */
  async reconcile(): Promise<void> {
    if (!this.leading()) return;
    const terminals = await this.store.listTerminals('SIMULATOR');
    await Promise.all(terminals.map((t) => this.simulators.attach(t)));
  }

  /** Starts a simulator just created: here when this relay leads, else at the leader. */
  async place(terminal: TerminalRecord): Promise<void> {
    if (this.leading()) await this.simulators.attach(terminal);
    else await this.bus.announce({ kind: 'simulator', terminalId: terminal.id });
  }

  /** Another relay created `terminal`: the leader starts it. */
  async announced(terminal: TerminalRecord | undefined): Promise<void> {
    if (terminal && this.leading()) await this.simulators.attach(terminal);
  }
}
