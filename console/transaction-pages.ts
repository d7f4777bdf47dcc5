/** Transactions (searched), one transaction, and the simulators. */
import type { Transaction } from '../protocol/index.js';
import { api, isTransactionEvent, type CloudEventView, type TerminalView } from './api.js';
import { announce, errorText, field, fill, h, money } from './dom.js';
import { fieldTable, localTime, receiptPaper, stateBadge } from './format.js';
import { onEvent } from './live.js';
import { subjectEvents, transactionRows, type Cleanup } from './terminal-pages.js';

const TRANSACTION_STATES = [
  'PROCESSING',
  'AWAITING_CONTINUE',
  'AWAITING_CONFIRM',
  'CONFIRMED',
  'COMMITTED',
];

function terminalSelect(terminals: TerminalView[], id: string, withAll = false) {
  return h(
    'select',
    { id },
    withAll ? h('option', { value: '' }, 'All terminals') : null,
    terminals.map((t) =>
      h('option', { value: t.terminal_id }, `${t.terminal_id} (${t.kind.toLowerCase()})`),
    ),
  );
}

export async function transactionsPage(main: HTMLElement): Promise<Cleanup> {
  const { terminals } = await api.terminals();
  const terminal = terminalSelect(terminals, 'q-terminal', true);
  const externalId = h('input', { id: 'q-external', type: 'search', autocomplete: 'off' });
  const state = h(
    'select',
    { id: 'q-state' },
    h('option', { value: '' }, 'Any'),
    TRANSACTION_STATES.map((s) => h('option', { value: s }, s)),
  );
  const result = h('input', { id: 'q-result', type: 'search', placeholder: 'e.g. SUCCESS' });
  const since = h('input', { id: 'q-since', type: 'datetime-local' });
  const results = h('div', { 'aria-live': 'polite' });
  const more = h('button', { type: 'button', hidden: true }, 'Load more');
  let found: Transaction[] = [];
  let cursor: string | undefined;

  const draw = () => {
    fill(
      results,
      found.length
        ? transactionRows(found, !terminal.value)
        : h('p', {}, 'No transaction matches.'),
    );
    announce(`${found.length} transactions`);
  };
  /** Whether a transaction is one the search shown asks for (as the relay's search would). */
  const matches = (txn: Transaction) =>
    (!terminal.value || txn.terminal_id === terminal.value) &&
    (!externalId.value || txn.external_id === externalId.value) &&
    (!state.value || txn.state === state.value) &&
    (!result.value || txn.result_code === result.value.trim().toUpperCase()) &&
    (!since.value || Date.parse(txn.created_at) >= new Date(since.value).getTime());
  const load = async (next: boolean) => {
    try {
      const page = await api.search({
        limit: 50,
        ...(terminal.value ? { terminal_id: terminal.value } : {}),
        ...(externalId.value ? { external_id: externalId.value } : {}),
        ...(state.value ? { state: state.value as Transaction['state'] } : {}),
        ...(result.value ? { result_code: result.value.trim().toUpperCase() } : {}),
        ...(since.value ? { created_from: new Date(since.value).toISOString() } : {}),
        ...(next && cursor ? { cursor } : {}),
      });
      found = next ? [...found, ...page.transactions] : page.transactions;
      cursor = page.next_cursor;
      more.hidden = cursor === undefined;
      draw();
    } catch (error) {
      fill(results, h('p', { role: 'alert' }, errorText(error)));
    }
  };
  more.addEventListener('click', () => void load(true));
  const form = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Search transactions' },
    field('Terminal', terminal),
    field('External id', externalId),
    field('State', state),
    field('Result', result),
    field('Created since', since),
    h('button', { type: 'submit' }, 'Search'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void load(false);
  });
  fill(main, h('h1', {}, 'Transactions'), form, results, more);
  // Live, as the Terminals list is: a shown transaction takes each change, a new one that
  // matches the search comes first (the list is newest first).
  const stop = onEvent((event) => {
    if (!isTransactionEvent(event)) return;
    const txn = event.data;
    const at = found.findIndex((shown) => shown.id === txn.id);
    if (at >= 0) found[at] = txn;
    else if (matches(txn)) found.unshift(txn);
    else return;
    draw();
  });
  await load(false);
  return stop;
}

function timelineOf(events: CloudEventView[], externalId: string): HTMLElement[] {
  return events
    .filter(isTransactionEvent)
    .filter((e) => e.data.external_id === externalId)
    .map((e) =>
      h(
        'li',
        {},
        localTime(e.time),
        ' ',
        stateBadge(e.data.state),
        e.data.result_code ? ` ${e.data.result_code}` : '',
      ),
    );
}

export async function transactionPage(
  main: HTMLElement,
  terminalId: string,
  externalId: string,
): Promise<Cleanup> {
  const summary = h('div', { id: 'summary' });
  const actions = h('div', { class: 'actions' });
  const timeline = h('ol', { class: 'timeline', id: 'timeline', 'aria-label': 'State timeline' });
  const receipts = h('div', { class: 'receipts' });
  const fields = h('div', {});
  const message = h('p', { role: 'status' });
  fill(
    main,
    h('h1', {}, `Transaction ${externalId}`),
    summary,
    actions,
    message,
    h('section', {}, h('h2', {}, 'Timeline'), timeline),
    h('section', {}, h('h2', {}, 'Receipts'), receipts),
    h('section', {}, h('h2', {}, 'All fields'), fields),
  );
  const act = (label: string, run: () => Promise<{ transaction: Transaction }>) => {
    const button = h('button', { type: 'button' }, label);
    button.addEventListener('click', async () => {
      button.disabled = true;
      try {
        draw((await run()).transaction);
        message.textContent = `${label}: done.`;
      } catch (error) {
        message.textContent = `${label} failed: ${errorText(error)}`;
        button.disabled = false;
      }
    });
    return button;
  };
  /** "Reverse payment…", then the question, then the reversal only when confirmed. */
  const reverseAction = (txn: Transaction) => {
    const ask = h('button', { type: 'button' }, 'Reverse payment…');
    const question = h(
      'div',
      { role: 'group', 'aria-label': 'Reverse the payment?', hidden: true },
      h(
        'p',
        {},
        `Reverse ${money(txn.total_amount ?? txn.requested_amount, txn.currency)}? The terminal gives the money back to the customer.`,
      ),
      act('Reverse', () => api.confirm(terminalId, externalId, REVERSED_BY_MERCHANT)),
    );
    const keep = h('button', { type: 'button' }, 'Keep the payment');
    question.append(keep);
    ask.addEventListener('click', () => {
      ask.hidden = true;
      question.hidden = false;
    });
    keep.addEventListener('click', () => {
      question.hidden = true;
      ask.hidden = false;
      ask.focus();
    });
    return h('span', {}, ask, question);
  };
  const draw = (txn: Transaction) => {
    fill(
      summary,
      h(
        'dl',
        { class: 'facts' },
        h('dt', {}, 'State'),
        h('dd', { id: 'txn-state' }, stateBadge(txn.state)),
        h('dt', {}, 'Result'),
        h('dd', {}, txn.result_code ?? '—'),
        h('dt', {}, 'Amount'),
        h('dd', {}, money(txn.total_amount ?? txn.requested_amount, txn.currency)),
        h('dt', {}, 'Terminal'),
        h('dd', {}, h('a', { href: `#/terminal/${terminalId}` }, terminalId)),
      ),
    );
    const succeeded = txn.result_code === 'SUCCESS';
    const running = txn.state === 'PROCESSING' || txn.state === 'AWAITING_CONTINUE';
    fill(
      actions,
      txn.state === 'AWAITING_CONTINUE'
        ? act('Continue', () => api.continue(terminalId, externalId))
        : null,
      txn.state === 'AWAITING_CONFIRM' && succeeded
        ? act('Confirm success', () => api.confirm(terminalId, externalId, 'SUCCESS'))
        : null,
      // A failed payment is confirmed with its own result: a decline stays a decline.
      txn.state === 'AWAITING_CONFIRM' && !succeeded && txn.result_code
        ? act(`Confirm the failure (${txn.result_code})`, () =>
            api.confirm(terminalId, externalId, txn.result_code!),
          )
        : null,
      running ? act('Cancel payment', () => api.confirm(terminalId, externalId, 'ABORTED')) : null,
      // Reversing gives the customer's money back: asked before anything is sent.
      succeeded && (txn.state === 'AWAITING_CONFIRM' || txn.state === 'CONFIRMED')
        ? reverseAction(txn)
        : null,
    );
    fill(
      receipts,
      reversedAfterReceipts(txn)
        ? h(
            'p',
            { class: 'notice', id: 'reversed-notice' },
            'Reversed: the receipts below were printed before the reversal and show the payment approved; the customer was not charged.',
          )
        : null,
      receiptPaper('Customer receipt', txn.receipt_details_customer),
      receiptPaper('Merchant receipt', txn.receipt_details_merchant),
      !txn.receipt_details_customer && !txn.receipt_details_merchant
        ? h('p', {}, 'No receipt yet.')
        : null,
    );
    fill(fields, fieldTable(txn));
    announce(`Transaction ${externalId} is ${txn.state}`);
  };
  const stop = onEvent((event) => {
    if (!isTransactionEvent(event)) return;
    if (event.data.terminal_id !== terminalId || event.data.external_id !== externalId) return;
    draw(event.data);
    timeline.append(...timelineOf([event], externalId));
  });
  try {
    const [{ transaction }, events] = await Promise.all([
      api.get(terminalId, externalId),
      subjectEvents(terminalId, 2000),
    ]);
    draw(transaction);
    fill(timeline, timelineOf(events, externalId));
  } catch (error) {
    message.textContent = errorText(error);
  }
  return stop;
}

/** The result the console confirms a reversed success with (docs/console.md). */
const REVERSED_BY_MERCHANT = 'REVERSED_BY_MERCHANT';

/** A payment that succeeded and was then committed as failed: its receipts say approved. */
const reversedAfterReceipts = (txn: Transaction) =>
  txn.state === 'COMMITTED' &&
  txn.result_code !== 'SUCCESS' &&
  (txn.authorized_amount ?? 0) > 0 &&
  Boolean(txn.receipt_details_customer ?? txn.receipt_details_merchant);

/** What each trigger amount does (docs/simulator.md). */
export const TRIGGERS: ReadonlyArray<[number, string]> = [
  [100001, 'Success after 2 seconds'],
  [100002, 'Success at once'],
  [100003, 'Rejected by the payment processor'],
  [100004, 'Aborted: the customer cancelled'],
  [100005, 'Card removed during processing'],
  [100006, 'Declined by the issuer'],
  [100007, 'Internal system error'],
  [100008, 'Network connectivity error'],
  [100009, 'Card or payment method not accepted'],
  [100010, 'Success, contactless with PIN'],
  [100011, 'Success, contactless, verified on the device'],
  [100012, 'Success, chip without PIN'],
  [100013, 'Success, chip with PIN'],
  [100014, 'Success, magnetic stripe with signature'],
  [100015, 'Success, magnetic stripe with PIN'],
  [100016, 'Success, girocard chip with PIN'],
  [100017, 'Success with a 10 % tip'],
  [100018, 'Success with a 1.5 % surcharge'],
  [100019, 'Success with currency conversion (DCC)'],
  [100020, 'Success after 30 seconds'],
  [100021, 'Success with a customer identity'],
];

export async function simulatorsPage(main: HTMLElement, canCreate: boolean): Promise<Cleanup> {
  const { terminals } = await api.terminals();
  const simulators = terminals.filter((t) => t.kind === 'SIMULATOR');
  const created = h('div', { role: 'status' });
  const createButton = h('button', { type: 'button', hidden: !canCreate }, 'Create a simulator');
  createButton.addEventListener('click', async () => {
    try {
      const issued = await api.simulatorCreate();
      fill(
        created,
        h('p', {}, 'Created. The password is shown this once:'),
        h(
          'pre',
          { class: 'secret' },
          `terminal_id ${issued.terminal_id}\nusername    ${issued.username}\npassword    ${issued.password}`,
        ),
      );
      terminal.append(
        h('option', { value: issued.terminal_id }, `${issued.terminal_id} (simulator)`),
      );
    } catch (error) {
      fill(created, h('p', { role: 'alert' }, errorText(error)));
    }
  });
  const terminal = terminalSelect(simulators, 'pay-terminal');
  const amount = h('input', {
    id: 'pay-amount',
    inputmode: 'decimal',
    value: '25.00',
    required: true,
  });
  const currency = h('input', { id: 'pay-currency', value: 'EUR', maxlength: 3, required: true });
  const trigger = h(
    'select',
    { id: 'pay-trigger' },
    h('option', { value: '' }, 'None: the amount above (success after the normal delay)'),
    TRIGGERS.map(([value, what]) => h('option', { value }, `${money(value, '')} — ${what}`)),
  );
  const pause = h('input', { id: 'pay-pause', type: 'checkbox' });
  const outcome = h('p', { role: 'status' });
  const form = h(
    'form',
    { 'aria-label': 'Pay with a simulator' },
    field('Simulator', terminal),
    field('Amount', amount, 'In the currency’s units, e.g. 25.00'),
    field('Currency', currency),
    field('Trigger amount', trigger, 'Picks the outcome; replaces the amount above'),
    h(
      'div',
      { class: 'check' },
      pause,
      h('label', { for: 'pay-pause' }, 'Pause when the customer is identified'),
    ),
    h('button', { type: 'submit' }, 'Pay'),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const minor = trigger.value ? Number(trigger.value) : Math.round(Number(amount.value) * 100);
    if (!Number.isSafeInteger(minor) || minor <= 0) {
      outcome.textContent = 'The amount must be a positive number.';
      amount.focus();
      return;
    }
    const externalId = `console-${Date.now().toString(36)}`;
    try {
      await api.purchase({
        terminal_id: terminal.value,
        external_id: externalId,
        requested_amount: minor,
        currency: currency.value.toUpperCase(),
        wait_seconds: 0,
        ...(pause.checked ? { options: { on_customer_identified: { pause: true } } } : {}),
      });
      location.hash = `#/transaction/${terminal.value}/${externalId}`;
    } catch (error) {
      outcome.textContent = `Not started: ${errorText(error)}`;
    }
  });
  fill(
    main,
    h('h1', {}, 'Simulators'),
    h(
      'section',
      {},
      h('h2', {}, 'Create'),
      canCreate ? createButton : h('p', {}, 'Only an account credential creates simulators.'),
      created,
    ),
    h(
      'section',
      {},
      h('h2', {}, 'Pay'),
      simulators.length ? form : h('p', {}, 'No simulator yet.'),
      outcome,
    ),
  );
  return () => undefined;
}
