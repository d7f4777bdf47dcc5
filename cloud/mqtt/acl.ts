/**
 * Who may use which topic. An agent, connected with its terminal id as username, reaches
 * only its own terminal's topics, in its own direction; the relay reaches all. The same
 * rules generate broker configuration for external brokers (broker-files.ts).
 */
import { parseTopic } from '../../protocol/index.js';

export type MqttIdentity = { role: 'relay' } | { role: 'agent'; terminalId: string };

/** The topic kinds (protocol/mqtt.ts) an agent publishes to, and subscribes to, for its own terminal. */
export const AGENT_PUBLISHES: ReadonlySet<string> = new Set(['cmd-ack', 'report', 'presence']);
export const AGENT_SUBSCRIBES: ReadonlySet<string> = new Set(['cmd', 'report-ack']);

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
