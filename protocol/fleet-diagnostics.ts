/**
 * What a field engineer asks a terminal from afar (docs/fleet.md, "Diagnostics"): the
 * facts its agent tells of itself, and on request its doctor checks, its last log lines
 * and a trace of the reader line during its last payment. Requests and replies travel
 * over MQTT with a correlation id; a reply fits one agent message (DIAGNOSTIC_REPLY_BYTES).
 */
import { z } from 'zod';
import { AccountId } from './accounts.js';
import { CohortId } from './events.js';
import { TerminalId, TimestampV1 } from './fields.js';
import { ConfigApplyStatus, FleetConfigVersion } from './fleet-config.js';
import { multilineText, plainText } from './plain-text.js';

/**
 * The largest diagnostic reply an agent sends, in bytes of JSON: under the embedded
 * broker's 16 KiB limit on an agent's message, which drops anything larger.
 */
export const DIAGNOSTIC_REPLY_BYTES = 15 * 1024;
/** Log lines kept by the agent, and the most a request may ask for. */
export const DIAGNOSTIC_LOG_LINES = 200;
/** Frames kept of the last payment's reader line. */
export const DIAGNOSTIC_TRACE_FRAMES = 200;

/** agent → relay, retained: what the agent knows of itself, told at every connect. */
export const FactsMessage = z.object({
  agent_version: plainText(64),
  /** The Node.js the agent runs on (`process.versions.node`); absent from older agents. */
  node_version: plainText(32).optional(),
  reader: z.object({
    protocol: plainText(16),
    model: plainText(64).optional(),
    firmware: plainText(64).optional(),
  }),
  at: TimestampV1,
});
export type FactsMessage = z.infer<typeof FactsMessage>;

export const DiagnosticKind = z.enum(['doctor', 'logs', 'trace']);
export type DiagnosticKind = z.infer<typeof DiagnosticKind>;

export const DiagnosticRequestId = z.string().regex(/^[0-9a-f]{16,32}$/);

/** relay → agent (QoS 1, not retained). */
export const DiagnosticRequestMessage = z.object({
  request_id: DiagnosticRequestId,
  kind: DiagnosticKind,
  /** For `logs`: the newest lines, at most this many. */
  lines: z.int().min(1).max(DIAGNOSTIC_LOG_LINES).optional(),
});
export type DiagnosticRequestMessage = z.infer<typeof DiagnosticRequestMessage>;

export const DoctorCheck = z.object({
  status: z.enum(['ok', 'warn', 'fail']),
  title: plainText(300),
  /** May run over several lines. */
  detail: multilineText(1000).optional(),
});

export const TraceFrame = z.object({
  at: TimestampV1,
  /** host→reader or reader→host. */
  direction: z.enum(['host→reader', 'reader→host']),
  text: multilineText(400),
});

/** agent → relay: the answer to one request; `error` when it could not be made. */
export const DiagnosticReplyMessage = z.object({
  request_id: DiagnosticRequestId,
  kind: DiagnosticKind,
  /** May run over several lines. */
  error: multilineText(500).optional(),
  doctor: z.object({ checks: z.array(DoctorCheck).max(50) }).optional(),
  logs: z
    .object({
      lines: z.array(multilineText(4000)).max(DIAGNOSTIC_LOG_LINES),
      /** Older lines were left out to fit the reply. */
      truncated: z.boolean(),
    })
    .optional(),
  trace: z
    .object({
      /** The payment traced; absent when none ran since the agent started. */
      transaction_id: plainText(64).optional(),
      frames: z.array(TraceFrame).max(DIAGNOSTIC_TRACE_FRAMES),
      truncated: z.boolean(),
    })
    .optional(),
});
export type DiagnosticReplyMessage = z.infer<typeof DiagnosticReplyMessage>;

/** `/fleet/diagnostics`: one request to one terminal, answered within `wait_seconds`. */
export const DiagnosticsRequest = z.object({
  /** The account acted for: the operator names one; an account's own credential may name itself. */
  account_id: AccountId.optional(),
  terminal_id: TerminalId,
  kind: DiagnosticKind,
  lines: z.int().min(1).max(DIAGNOSTIC_LOG_LINES).optional(),
  /** How long to wait for the agent's answer (default 10, at most 60). */
  wait_seconds: z.number().min(1).max(60).optional(),
});
export type DiagnosticsRequest = z.infer<typeof DiagnosticsRequest>;

export const DiagnosticsResponse = z.object({
  terminal_id: TerminalId,
  kind: DiagnosticKind,
  doctor: DiagnosticReplyMessage.shape.doctor,
  logs: DiagnosticReplyMessage.shape.logs,
  trace: DiagnosticReplyMessage.shape.trace,
});
export type DiagnosticsResponse = z.infer<typeof DiagnosticsResponse>;

/** `/fleet/facts`: one terminal, a cohort, or (neither) every terminal of the account. */
export const FleetFactsRequest = z.object({
  /** The account acted for: the operator names one; an account's own credential may name itself. */
  account_id: AccountId.optional(),
  terminal_id: TerminalId.optional(),
  cohort: CohortId.optional(),
});
export type FleetFactsRequest = z.infer<typeof FleetFactsRequest>;

/** What a field engineer needs of a terminal; null: not known (yet). */
export const TerminalFacts = z.object({
  terminal_id: TerminalId,
  name: z.string().nullable(),
  cohort: z.string().nullable(),
  agent_version: z.string().nullable(),
  /** The Node.js the agent runs on: the release's own, or the host's. */
  node_version: z.string().nullable(),
  reader_protocol: z.string().nullable(),
  reader_model: z.string().nullable(),
  reader_firmware: z.string().nullable(),
  config_version: FleetConfigVersion.nullable(),
  config_status: ConfigApplyStatus.nullable(),
  /** The outcome of the terminal's last agent update; null until updates report one. */
  last_update_outcome: z.string().nullable(),
  /** Now while it is connected; else when it went away. */
  last_seen: z.string().nullable(),
  connected: z.boolean(),
});
export type TerminalFacts = z.infer<typeof TerminalFacts>;

export const FleetFactsResponse = z.object({ terminals: z.array(TerminalFacts) });
export type FleetFactsResponse = z.infer<typeof FleetFactsResponse>;
