/**
 * A terminal's end-of-day on its page (docs/zvt.md, "End-of-day"): its settlements, newest
 * first, with the day's totals per card group and the receipt the terminal printed, and a
 * button that closes the day now (the account's session alone may: POST /fleet/end-of-day).
 */
import type { TerminalSettlement } from '../protocol/index.js';
import { api } from './api.js';
import { errorText, fill, h, money } from './dom.js';
import { receiptPaper } from './format.js';

const KEPT = 20;

export interface SettlementView {
  element: HTMLElement;
  /** Every settlement known at load, oldest first. */
  show(settlements: TerminalSettlement[]): void;
  /** One that arrived on the live feed. */
  add(settlement: TerminalSettlement): void;
}

function describe(s: TerminalSettlement): HTMLElement {
  const when = s.finished_at;
  const why = {
    SCHEDULE: 'scheduled',
    ON_DEMAND: 'asked for',
    TERMINAL_REQUIRED: 'terminal asked',
  }[s.trigger];
  const head =
    s.status === 'SUCCESS'
      ? `${when} — closed (${why}): ${money(s.total_amount, s.currency)}`
      : `${when} — failed (${why}, try ${s.attempt}): ${s.result_description ?? s.result_code ?? ''}${s.retry_at ? `; next try ${s.retry_at}` : ''}`;
  const receipts =
    s.first_receipt_number !== undefined
      ? `receipts ${s.first_receipt_number}–${s.last_receipt_number ?? '?'}`
      : '';
  const period = s.period_start ? `since ${s.period_start}` : '';
  return h(
    'li',
    {},
    h('p', {}, head),
    ...(receipts || period ? [h('p', {}, [period, receipts].filter(Boolean).join(', '))] : []),
    ...(s.totals?.length
      ? [
          h(
            'table',
            {},
            h(
              'thead',
              {},
              h('tr', {}, h('th', {}, 'Cards'), h('th', {}, 'Count'), h('th', {}, 'Amount')),
            ),
            h(
              'tbody',
              {},
              ...s.totals.map((t) =>
                h(
                  'tr',
                  {},
                  h('td', {}, t.card_group),
                  h('td', {}, String(t.count)),
                  h('td', {}, money(t.amount, s.currency)),
                ),
              ),
            ),
          ),
        ]
      : []),
  );
}

export function settlementView(terminalId: string): SettlementView {
  const list = h('ol', { class: 'timeline', 'aria-label': 'End-of-day history' });
  const receipt = h('div', {});
  const result = h('p', { role: 'status' });
  const button = h('button', { type: 'button' }, 'Close the day now');
  button.addEventListener('click', async () => {
    try {
      await api.endOfDay(terminalId);
      result.textContent = 'End-of-day queued: it runs when no payment runs.';
    } catch (error) {
      result.textContent = `Not queued: ${errorText(error)}`;
    }
  });
  const shown: TerminalSettlement[] = [];
  const draw = () => {
    fill(list, shown.length ? shown.map(describe) : h('li', {}, 'None yet.'));
    const latest = shown.find((s) => s.receipt_text);
    fill(receipt, receiptPaper('Last end-of-day receipt', latest?.receipt_text) ?? []);
  };
  draw();
  return {
    element: h('section', {}, h('h2', {}, 'End-of-day'), button, result, list, receipt),
    show(settlements) {
      shown.splice(0, shown.length, ...settlements.slice(-KEPT).reverse());
      draw();
    },
    add(settlement) {
      shown.unshift(settlement);
      shown.splice(KEPT);
      draw();
    },
  };
}
