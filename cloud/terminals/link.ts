/**
 * How the relay reaches terminals, whatever carries the messages: a transport publishes,
 * subscribes and parses, and decides nothing about delivery. What is sent again, what is
 * acknowledged and in which order reports apply is decided above it, once, by the command
 * outbox and the report inbox (cloud/delivery/). Kept narrow, so that an in-process
 * simulator and the MQTT link to real agents are interchangeable.
 */
import type {
  ReaderCapabilities,
  TerminalCommand,
  TerminalReport,
  UpdateStatusMessage,
} from '../../protocol/index.js';
import type { Sequenced } from '../delivery/inbox.js';

/** What a transport tells of the terminals' messages, as they arrive. */
export interface LinkEvents {
  /** The terminal acknowledged a command: it will act on it, even across its own restart. */
  commandAcked(terminalId: string, commandId: string): void;
  /**
   * A report; `sequenced` when it has a place in its agent's outbox, with the way to
   * acknowledge it. Resolves once handled: a transport may wait for it before it goes on.
   */
  report(terminalId: string, report: TerminalReport, sequenced?: Sequenced): Promise<void>;
  /** The terminal came (back) online: what waits for it may be sent again now. */
  reachable(terminalId: string): void;
  /**
   * What the terminal's card reader can do, told as it comes online; undefined when its
   * agent does not say (an older agent: the native reader).
   */
  readerReported(terminalId: string, reader: ReaderCapabilities | undefined): void;
  /** The transport (re)connected: everything waiting may be sent again now. */
  reconnected(): void;
  /** The agent's retained `update-status`: where its updates stand (protocol/update.ts). */
  updateStatus?(terminalId: string, status: UpdateStatusMessage): void;
  /** The agent asks for a certificate for its local API: JSON, checked by cloud/local-tls/. */
  localCertRequest?(terminalId: string, request: unknown): void;
}

export interface TerminalLink {
  /** Where the terminals' messages go; set before the link connects. */
  listen(events: LinkEvents): void;
  /**
   * Hands a command to the terminal once. Whether it arrived is told by `commandAcked`,
   * or never: a command may be lost on the way, and the outbox sends it again.
   */
  publish(terminalId: string, command: TerminalCommand): Promise<void>;
  close(): Promise<void>;
}
