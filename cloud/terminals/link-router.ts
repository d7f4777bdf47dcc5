/**
 * One TerminalLink over several: each terminal is reached through the link of its kind
 * (simulated terminals in process, agents over MQTT); the messages of all come to one
 * listener.
 */
import type { TerminalCommand } from '../../protocol/index.js';
import type { TerminalRecord } from '../store/records.js';
import type { Store } from '../store/store.js';
import type { LinkEvents, TerminalLink } from './link.js';

export class LinkRouter implements TerminalLink {
  private readonly kinds = new Map<string, TerminalRecord['kind']>();

  constructor(
    private readonly store: Store,
    private readonly links: Record<TerminalRecord['kind'], TerminalLink>,
  ) {}

  async publish(terminalId: string, command: TerminalCommand): Promise<void> {
    let kind = this.kinds.get(terminalId);
    if (!kind) {
      kind = (await this.store.getTerminal(terminalId))?.kind;
      if (!kind) throw new Error(`no terminal ${terminalId}`);
      this.kinds.set(terminalId, kind);
    }
    await this.links[kind].publish(terminalId, command);
  }

  listen(events: LinkEvents): void {
    for (const link of new Set(Object.values(this.links))) link.listen(events);
  }

  async close(): Promise<void> {
    await Promise.all([...new Set(Object.values(this.links))].map((link) => link.close()));
  }
}
