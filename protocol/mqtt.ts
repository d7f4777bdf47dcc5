/**
 * The MQTT link between the relay and each terminal's agent: topics and messages.
 * Every message is QoS 1 and safe to apply twice: commands carry their `command_id`,
 * reports a per-agent sequence number, acknowledgements name what they acknowledge.
 * docs/mqtt.md draws the exchanges.
 */
import { z } from 'zod';
import { TimestampV1 } from './fields.js';
import { plainText } from './plain-text.js';
import { ReaderCapabilities } from './reader-capabilities.js';
import { CommandId, TerminalCommand, TerminalReport } from './terminal-link.js';

export const TOPIC_ROOT = 'tps/v1/t';

/** The topics of one terminal; `+` in place of the id subscribes to all. */
export function terminalTopics(terminalId: string) {
  const base = `${TOPIC_ROOT}/${terminalId}`;
  return {
    /** relay → agent: commands. */
    command: `${base}/cmd`,
    /** agent → relay: "journaled, I will act on it" for a command. */
    commandAck: `${base}/cmd-ack`,
    /** agent → relay: transaction and status reports, from the agent's outbox. */
    report: `${base}/report`,
    /** relay → agent: "committed" for a report; the agent then drops it from its outbox. */
    reportAck: `${base}/report-ack`,
    /** agent → relay, retained; the agent's last will says `connected: false`. */
    presence: `${base}/presence`,
    /** relay → agent, retained: the release the terminal should run (protocol/update.ts). */
    update: `${base}/update`,
    /** agent → relay, retained: the release it runs and how its last update ended. */
    updateStatus: `${base}/update-status`,
    /** relay → agent, retained: the effective configuration (protocol/fleet-config.ts). */
    config: `${base}/config`,
    /** agent → relay, retained: what the agent did with the newest configuration. */
    configReport: `${base}/config-report`,
    /** agent → relay, retained: agent version, reader model and firmware. */
    facts: `${base}/facts`,
    /** relay → agent: a diagnostic request (protocol/fleet-diagnostics.ts). */
    diagnostic: `${base}/diag`,
    /** agent → relay: the answer to a diagnostic request. */
    diagnosticReply: `${base}/diag-reply`,
    /** relay → agent, retained: verifiers of the terminal's POS credentials (protocol/local-credentials.ts). */
    localCredentials: `${base}/local-credentials`,
    /** agent → relay: a certificate for its local API (protocol/local-tls.ts). */
    localCertRequest: `${base}/local-cert-request`,
    /** relay → agent: the certificate, or why not. */
    localCert: `${base}/local-cert`,
  };
}

/**
 * The client id an agent connects with. A broker lets an agent's credential use only its
 * own (cloud/mqtt/acl.ts), so that no agent can take over another terminal's session.
 */
export const agentClientId = (terminalId: string): string => `agent-${terminalId}`;

/** The client id `tps agent doctor` checks the broker with, beside the running agent. */
export const doctorClientId = (terminalId: string, pid: number): string =>
  `doctor-${terminalId}-${pid}`;

/**
 * Topic filters of the fleet's traffic, heard by every relay (not shared): retained
 * reports reach each one at subscribe, and a diagnostic answer the relay that asked.
 */
export const FLEET_SUBSCRIPTIONS = {
  configReport: `${TOPIC_ROOT}/+/config-report`,
  facts: `${TOPIC_ROOT}/+/facts`,
  diagnosticReply: `${TOPIC_ROOT}/+/diag-reply`,
} as const;

/** Topic filters under which the relay hears every agent. */
export const RELAY_SUBSCRIPTIONS = {
  commandAck: `${TOPIC_ROOT}/+/cmd-ack`,
  report: `${TOPIC_ROOT}/+/report`,
  presence: `${TOPIC_ROOT}/+/presence`,
  updateStatus: `${TOPIC_ROOT}/+/update-status`,
  localCertRequest: `${TOPIC_ROOT}/+/local-cert-request`,
} as const;

const TOPIC_KINDS = [
  'cmd',
  'cmd-ack',
  'report',
  'report-ack',
  'presence',
  'update',
  'update-status',
  'config',
  'config-report',
  'facts',
  'diag',
  'diag-reply',
  'local-credentials',
  'local-cert-request',
  'local-cert',
] as const;
export type TopicKind = (typeof TOPIC_KINDS)[number];

const TOPIC_PATTERN = new RegExp(`^tps/v1/t/([0-9a-zA-Z-]{1,63})/(${TOPIC_KINDS.join('|')})$`);

/** The terminal and kind of a topic, or undefined for a topic outside the link. */
export function parseTopic(topic: string) {
  const match = TOPIC_PATTERN.exec(topic);
  if (!match) return undefined;
  return {
    terminalId: match[1]!,
    kind: match[2] as TopicKind,
  };
}

/** A command; a start carries its own `expires_at` (see StartTransactionCommand). */
export const CommandMessage = z.object({ command: TerminalCommand });
export type CommandMessage = z.infer<typeof CommandMessage>;

export const CommandAckMessage = z.object({
  command_id: CommandId,
  /** ACCEPTED: journaled and will be acted on. EXPIRED: a start refused, past its `expires_at`. */
  outcome: z.enum(['ACCEPTED', 'EXPIRED']),
});
export type CommandAckMessage = z.infer<typeof CommandAckMessage>;

export const ReportMessage = z.object({
  /**
   * The agent journal the report comes from. A new journal (a terminal reinstalled, its
   * data wiped) starts its sequence again; the relay tells the two apart by this id.
   */
  journal: z.string().regex(/^[0-9a-f]{16,64}$/),
  /** Grows with every report of this journal (gaps allowed), across agent restarts. */
  seq: z.number().int().min(1),
  /**
   * The report before this one still in the agent's outbox when it was sent (0 or absent:
   * none). The relay applies this one only after that one: with several relays sharing
   * the agents' traffic, reports of one agent can arrive through different relays.
   */
  prev: z.number().int().min(0).optional(),
  report: TerminalReport,
});
export type ReportMessage = z.infer<typeof ReportMessage>;

export const ReportAckMessage = z.object({ seq: z.number().int().min(1) });
export type ReportAckMessage = z.infer<typeof ReportAckMessage>;

export const PresenceMessage = z.object({
  connected: z.boolean(),
  at: TimestampV1.optional(),
  agent_version: plainText(64).optional(),
  /** What the terminal's reader can do; absent from older agents: assume the native reader. */
  reader: ReaderCapabilities.optional(),
});
export type PresenceMessage = z.infer<typeof PresenceMessage>;
