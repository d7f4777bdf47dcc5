/**
 * What an operator scrapes (Prometheus text format, GET /metrics): the process's own
 * figures, HTTP traffic per operation, and the relay's live state read at scrape time.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Live figures read at each scrape. */
export interface RelayGauges {
  parkedTransactionPolls(): number;
  parkedEventWaits(): number;
  commandsAwaitingAck(): number;
  leading(): boolean;
  ready(): boolean;
  brokerConnected(): boolean;
  /** Agents signed in to the embedded broker; undefined with an external broker. */
  agentsConnected(): number | undefined;
}

export class RelayMetrics {
  readonly registry = new Registry();
  readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly httpDuration: Histogram<'route'>;
  readonly reportsApplied: Counter<'outcome'>;
  readonly signInFailures: Counter<'listener' | 'outcome'>;
  readonly mqttLimited: Counter<'limit'>;
  readonly mqttConnects: Counter<'outcome'>;
  readonly securityEvents: Counter<'event'>;

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'tps_' });
    this.httpRequests = new Counter({
      name: 'tps_http_requests_total',
      help: 'HTTP requests answered, by method, route and status code.',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.httpDuration = new Histogram({
      name: 'tps_http_request_duration_seconds',
      help: 'Time to answer an HTTP request, long polls included, by route.',
      labelNames: ['route'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5, 30, 180],
      registers,
    });
    this.reportsApplied = new Counter({
      name: 'tps_agent_reports_total',
      help: 'Reports received from agents, by outcome (applied, duplicate, gap).',
      labelNames: ['outcome'],
      registers,
    });
    this.signInFailures = new Counter({
      name: 'tps_sign_in_failures_total',
      help: 'Sign-ins refused, by listener (http, mqtt) and outcome (wrong_credential, throttled, busy, client_id).',
      labelNames: ['listener', 'outcome'],
      registers,
    });
    this.mqttLimited = new Counter({
      name: 'tps_mqtt_limited_total',
      help: 'What a limit of the embedded broker refused, by limit (packet_size, connect_timeout, connections, payload_size, message_rate).',
      labelNames: ['limit'],
      registers,
    });
    this.mqttConnects = new Counter({
      name: 'tps_mqtt_connects_total',
      help: 'Connection attempts to the embedded broker, by outcome (accepted, refused, timed_out, over_limit); a burst of them is a reconnect storm.',
      labelNames: ['outcome'],
      registers,
    });
    this.securityEvents = new Counter({
      name: 'tps_security_events_total',
      help: 'Security events, by event (unmasked_card_number: a terminal reported a full card number, dropped; card_number_in_text: a terminal sent a full card number in free text, masked).',
      labelNames: ['event'],
      registers,
    });
  }

  /**
   * The live figures, read at each scrape, registered once the parts they read exist (the
   * counters above are needed while those parts are made).
   */
  watch(gauges: RelayGauges): void {
    const registers = [this.registry];
    const gauge = (name: string, help: string, read: () => number | boolean) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(Number(read()));
        },
      });
    gauge(
      'tps_parked_transaction_polls',
      'Long polls waiting for a transaction to leave PROCESSING.',
      gauges.parkedTransactionPolls,
    );
    gauge(
      'tps_parked_event_waits',
      'Event-list waits and idle webhook deliverers parked.',
      gauges.parkedEventWaits,
    );
    gauge(
      'tps_commands_awaiting_ack',
      'Commands this relay has sent to terminals and not yet seen acknowledged.',
      gauges.commandsAwaitingAck,
    );
    gauge('tps_leader', '1 when this relay runs the background work.', gauges.leading);
    gauge('tps_ready', '1 when this relay takes traffic (GET /ready answers 200).', gauges.ready);
    gauge(
      'tps_broker_connected',
      '1 when the relay is connected to the MQTT broker.',
      gauges.brokerConnected,
    );
    const agents = gauges.agentsConnected;
    if (agents() !== undefined) {
      gauge(
        'tps_mqtt_agents_connected',
        'Agents signed in to the embedded broker now.',
        () => agents() ?? 0,
      );
    }
  }
}
