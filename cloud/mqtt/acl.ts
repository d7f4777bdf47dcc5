/**
 * Who may use which client id and which topic. An agent, connected with its terminal id
 * as username, may use only its own client id (and the doctor's), so it can never take
 * over another terminal's session; it reaches only its own terminal's topics, in its own
 * direction, and is handed no message of another terminal's. The relay reaches all. The
 * same rules generate broker configuration for external brokers (broker-files.ts).
 */
import { agentClientId, doctorClientId, parseTopic, type TopicKind } from '../../protocol/index.js';

export type MqttIdentity = { role: 'relay' } | { role: 'agent'; terminalId: string };

/** The topic kinds (protocol/mqtt.ts) an agent publishes to, and subscribes to, for its own terminal. */
export const AGENT_PUBLISHES: ReadonlySet<TopicKind> = new Set<TopicKind>([
  'cmd-ack',
  'report',
  'presence',
  'update-status',
  'config-report',
  'facts',
  'diag-reply',
  'local-cert-request',
]);
export const AGENT_SUBSCRIBES: ReadonlySet<TopicKind> = new Set<TopicKind>([
  'cmd',
  'report-ack',
  'update',
  'config',
  'diag',
  'local-credentials',
  'local-cert',
]);

export function mayPublish(identity: MqttIdentity, topic: string): boolean {
  if (identity.role === 'relay') return true;
  const parsed = parseTopic(topic);
  return parsed?.terminalId === identity.terminalId && AGENT_PUBLISHES.has(parsed.kind);
}

/** Subscriptions are exact topics for agents: no wildcards, no shared subscriptions. */
export function maySubscribe(identity: MqttIdentity, topicFilter: string): boolean {
  if (identity.role === 'relay') return true;
  const parsed = parseTopic(topicFilter);
  return parsed?.terminalId === identity.terminalId && AGENT_SUBSCRIBES.has(parsed.kind);
}

/**
 * Whether an agent's credential may connect under this client id: its agent's own
 * (`agent-<terminal id>`), or `tps agent doctor`'s (`doctor-<terminal id>-<pid>`), which
 * checks the broker beside the running agent. Both name the terminal, so neither is
 * another terminal's session.
 */
export function mayConnectAs(terminalId: string, clientId: string): boolean {
  if (clientId === agentClientId(terminalId)) return true;
  const prefix = doctorClientId(terminalId, 0).slice(0, -1);
  return clientId.startsWith(prefix) && /^\d{1,10}$/.test(clientId.slice(prefix.length));
}

/** Whether a message on `topic` may be handed to this client (forwarding, retained). */
export function mayReceive(identity: MqttIdentity, topic: string): boolean {
  if (identity.role === 'relay') return true;
  const parsed = parseTopic(topic);
  return parsed?.terminalId === identity.terminalId && AGENT_SUBSCRIBES.has(parsed.kind);
}
