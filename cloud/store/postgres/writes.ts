/**
 * The PostgreSQL store's writes that commit in groups (group-commit.ts), each as a Write:
 * what it locks and reads, and what it decides on what they answered. A report is taken
 * only next in line after the one its locked terminal row names; each change adds the
 * notices its commit sends to the other relays.
 */
import type { TerminalReadings, TerminalStatus } from '../../../protocol/index.js';
import type { ChangeNotice } from '../../cluster/change-bus.js';
import type { ChangeContext, Decide } from '../../transactions/change.js';
import type { Settlement } from '../../../protocol/settlement.js';
import { settlementEvent, type NewEvent } from '../records.js';
import { toTransaction } from '../rows.js';
import { ReportOutOfOrder, checkReport, type ReportPosition } from '../../delivery/report-order.js';
import type { ChangeKey } from '../store.js';
import type { Write } from './group-commit.js';
import {
  CONTEXT_QUERIES,
  LOCK_TERMINAL,
  LOCK_TRANSACTION,
  lastReportOf,
  type ContextRow,
  type TerminalRow,
  type WritePlan,
} from './statements.js';

const eventsNotice = (events: NewEvent[]): ChangeNotice => ({
  kind: 'events',
  events: events.map(({ accountId, subject, kind }) => ({ accountId, subject, kind })),
});

/** Throws ReportOutOfOrder unless the report is next after the locked row's last one. */
function takeReport(row: TerminalRow | undefined, position: ReportPosition, plan: WritePlan) {
  const verdict = checkReport(lastReportOf(row), position);
  if (verdict !== 'apply') throw new ReportOutOfOrder(verdict);
  if (row) {
    plan.report = position;
    plan.notes.push({ kind: 'report', terminalId: row.id });
  }
}

/** A report that changes nothing else (see Store.recordReport). */
export function reportWrite(terminalId: string, position: ReportPosition): Write {
  return {
    keys: [`t:${terminalId}`],
    locks: { terminal: terminalId },
    lead: (query) => [query({ ...LOCK_TERMINAL, values: [terminalId] })],
    decide: ([locked]) => {
      const plan: WritePlan = { terminalId, events: [], notes: [] };
      takeReport(locked!.rows[0], position, plan);
      return { plan, answer: () => undefined };
    },
  };
}

/**
 * A write on the locked terminal row that may append one event: the report is checked
 * first (and taken even for an unknown terminal), then `decide` says what changes.
 */
function terminalEventWrite(
  terminalId: string,
  report: ReportPosition | undefined,
  decide: (row: TerminalRow, plan: WritePlan) => NewEvent | undefined,
): Write {
  return {
    keys: [`t:${terminalId}`],
    locks: { terminal: terminalId },
    lead: (query) => [query({ ...LOCK_TERMINAL, values: [terminalId] })],
    decide: ([locked]) => {
      const row: TerminalRow | undefined = locked!.rows[0];
      const plan: WritePlan = { terminalId, events: [], notes: [] };
      if (report) takeReport(row, report, plan);
      const event = row && decide(row, plan);
      if (!event) return { plan, answer: () => undefined };
      plan.events.push(event);
      plan.notes.push(eventsNotice(plan.events));
      return { plan, answer: (position) => ({ ...event, position }) };
    },
  };
}

/** Readings merged into the terminal's status (see Store.updateTerminalStatus). */
export function statusWrite(
  terminalId: string,
  readings: TerminalReadings,
  at: string,
  eventId: string,
  report?: ReportPosition,
): Write {
  return terminalEventWrite(terminalId, report, (row, plan) => {
    const current: TerminalStatus = JSON.parse(row.status);
    const changed = Object.entries(readings).some(
      ([key, value]) => current[key as keyof TerminalStatus] !== value,
    );
    if (!changed) return undefined;
    const status: TerminalStatus = { ...current, ...readings, updated_at: at };
    plan.status = JSON.stringify(status);
    return {
      id: eventId,
      accountId: row.account_id,
      subject: terminalId,
      kind: 'TerminalStatus',
      time: at,
      data: status,
    };
  });
}

/** An end-of-day's event (see Store.appendSettlement). */
export function settlementWrite(
  terminalId: string,
  settlement: Settlement,
  eventId: string,
  report?: ReportPosition,
): Write {
  return terminalEventWrite(terminalId, report, (row) =>
    settlementEvent(terminalId, row.account_id, settlement, eventId),
  );
}

/**
 * A transaction's change: the terminal's lock (and the original's, after it); the context
 * in one statement, after the locks, so that its snapshot shows every commit that held
 * them before; the report check; the decision; its rows.
 */
export function changeWrite<R>(key: ChangeKey, decide: Decide<R>): Write {
  const query = CONTEXT_QUERIES.get(`${Boolean(key.forCreate)}/${Boolean(key.original)}`)!;
  const values = [key.terminalId, key.externalId];
  if (key.original) values.push(key.original.terminalId, key.original.externalId);
  return {
    keys: [`t:${key.terminalId}`, ...(key.original ? [`t:${key.original.terminalId}`] : [])],
    locks: { terminal: key.terminalId, ...(key.original ? { original: key.original } : {}) },
    lead: (send) => [
      send({ ...LOCK_TERMINAL, values: [key.terminalId] }),
      // After the terminal, never before: locks are taken in one order everywhere.
      ...(key.original
        ? [
            send({
              ...LOCK_TRANSACTION,
              values: [key.original.terminalId, key.original.externalId],
            }),
          ]
        : []),
      send({ ...query, values }),
    ],
    decide: (results) => {
      const terminal: TerminalRow | undefined = results[0]!.rows[0];
      const row: ContextRow = results.at(-1)!.rows[0];
      const plan: WritePlan = { terminalId: key.terminalId, events: [], notes: [] };
      if (key.report) takeReport(terminal, key.report, plan);
      const context: ChangeContext = {
        terminalOwner: terminal?.account_id,
        current: row.current ? toTransaction(row.current) : undefined,
        active: row.active ? toTransaction(row.active) : undefined,
        unconfirmedCount: key.forCreate ? (row.unconfirmed ?? 0) : 0,
      };
      if (key.original) {
        context.original = {
          record: row.original ? toTransaction(row.original) : undefined,
          refunds: (row.refunds ?? []).map(toTransaction),
        };
      }
      const change = decide(context);
      if (change.write) {
        const { txn, version, dueAt } = change.write;
        plan.transaction = change.write;
        plan.notes.push({
          kind: 'transaction',
          terminalId: txn.terminal_id,
          externalId: txn.external_id,
          version,
          ...(dueAt ? { dueAt } : {}),
        });
      }
      if (change.commands?.length) plan.commands = change.commands;
      if (change.events?.length) {
        plan.events = change.events;
        plan.notes.push(eventsNotice(change.events));
      }
      return { plan, answer: () => change.result };
    },
  };
}

/** A command's acknowledgement by its own terminal (see Store.ackCommand). */
export function ackWrite(terminalId: string, commandId: string, at: string): Write {
  return {
    keys: [`c:${commandId}`],
    lead: (query) => [
      query({
        name: 'tps_ack_command',
        text: `UPDATE terminal_commands SET acked_at = $1 WHERE command_id = $2 AND terminal_id = $3 AND acked_at IS NULL`,
        values: [at, commandId, terminalId],
      }),
    ],
    // Tells the others only when it acknowledged a command.
    decide: ([acked]) => ({
      plan: {
        terminalId: '',
        events: [],
        notes: acked!.rowCount ? [{ kind: 'command-acked', commandId }] : [],
      },
      answer: () => undefined,
    }),
  };
}
