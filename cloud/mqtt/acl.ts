/**
 * Who may use which topic. An agent, connected with its terminal id as username, reaches
 * only its own terminal's topics, in its own direction; the relay reaches all. The same
 * rules generate broker configuration for external brokers.
 */
import { parseTopic } from '../../protocol/index.js';

export type MqttIdentity = { role: 'relay' } | { role: 'agent'; terminalId: string };

const AGENT_PUBLISHES = new Set(['cmd-ack', 'report', 'presence']);
const AGENT_SUBSCRIBES = new Set(['cmd', 'report-ack']);

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
