/** The Terminals page (live status of each) and one terminal's page. */
import type { TerminalStatus, Transaction } from '../protocol/index.js';
import {
  api,
  currentSession,
  isSettlementEvent,
  isStatusEvent,
  type CloudEventView,
} from './api.js';
import { announce, errorText, fill, h, money } from './dom.js';
import { battery, localTime, stateBadge, statusBadge, yesNo } from './format.js';
import { onConnection, onEvent, relayReachable } from './live.js';
import { settlementView } from './settlement-view.js';

export type Cleanup = () => void;

function statusCells(status: TerminalStatus): HTMLElement[] {
  return [
    h('td', {}, statusBadge(status.connected, relayReachable())),
    h('td', {}, battery(status)),
    h('td', {}, yesNo(status.plugged_in)),
    h('td', {}, status.screen_message ?? '—'),
    h('td', {}, stateBadge(status.transaction_state)),
  ];
}

export async function terminalsPage(main: HTMLElement): Promise<Cleanup> {
  const body = h('tbody', {});
  const rows = new Map<string, HTMLTableRowElement>();
  fill(
    main,
    h('h1', {}, 'Terminals'),
    h(
      'table',
      { class: 'list', id: 'terminals' },
      h('caption', { class: 'visually-hidden' }, 'Terminals and their live status'),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Terminal', 'Kind', 'Connection', 'Battery', 'Plugged in', 'Screen', 'State'].map((t) =>
            h('th', { scope: 'col' }, t),
          ),
        ),
      ),
      body,
    ),
  );
  const draw = (id: string, kind: string, status: TerminalStatus) => {
    const row = h(
      'tr',
      { 'data-terminal': id },
      h('td', {}, h('a', { href: `#/terminal/${id}` }, id)),
      h('td', {}, kind.toLowerCase()),
      statusCells(status),
    );
    const old = rows.get(id);
    if (old) old.replaceWith(row);
    else body.append(row);
    rows.set(id, row);
  };
  const kinds = new Map<string, string>();
  const statuses = new Map<string, TerminalStatus>();
  const redraw = (id: string, status: TerminalStatus) => {
    statuses.set(id, status);
    draw(id, kinds.get(id) ?? '', status);
  };
  // Lost and found again: each row says so, with what was last heard.
  const unwatch = onConnection(() => {
    for (const [id, status] of statuses) redraw(id, status);
  });
  const unlisten = onEvent((event) => {
    if (!isStatusEvent(event)) return;
    const id = event.data.terminal_id ?? event.subject ?? '';
    if (!rows.has(id)) return;
    redraw(id, event.data);
    announce(`${id}: ${event.data.connected === false ? 'offline' : 'updated'}`);
  });
  try {
    const { terminals } = await api.terminals();
    for (const t of terminals) {
      kinds.set(t.terminal_id, t.kind);
      redraw(t.terminal_id, t.status);
    }
    if (terminals.length === 0) body.append(h('tr', {}, h('td', { colspan: 7 }, 'No terminals.')));
  } catch (error) {
    // The list could not be read: the router shows "Not available" with the reason.
    stop();
    throw error;
  }
  return stop;

  function stop() {
    unlisten();
    unwatch();
  }
}

/** Events of one subject from the oldest kept, at most `max`. */
export async function subjectEvents(subject: string, max = 500): Promise<CloudEventView[]> {
  const events: CloudEventView[] = [];
  let page = await api.events({ filter: { subject: { eq: subject } }, limit: 200 });
  events.push(...page.events);
  while (page.events.length === 200 && events.length < max) {
    page = await api.events({ next_token: page.next_token, limit: 200 });
    events.push(...page.events);
  }
  return events;
}

/** A table of transactions; `withTerminal` adds each one's terminal (lists of several). */
export function transactionRows(transactions: Transaction[], withTerminal = false): HTMLElement {
  const columns = ['External id', 'Type', 'Amount', 'State', 'Result', 'Created'];
  return h(
    'table',
    { class: 'list' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        (withTerminal ? ['Terminal', ...columns] : columns).map((t) =>
          h('th', { scope: 'col' }, t),
        ),
      ),
    ),
    h(
      'tbody',
      {},
      transactions.map((t) =>
        h(
          'tr',
          { 'data-transaction': t.id },
          withTerminal
            ? h('td', {}, h('a', { href: `#/terminal/${t.terminal_id}` }, t.terminal_id))
            : null,
          h(
            'td',
            {},
            h(
              'a',
              { href: `#/transaction/${t.terminal_id}/${encodeURIComponent(t.external_id)}` },
              t.external_id,
            ),
          ),
          h('td', {}, t.type ?? '—'),
          h('td', {}, money(t.requested_amount, t.currency)),
          h('td', {}, stateBadge(t.state)),
          h('td', {}, t.result_code ?? '—'),
          h('td', {}, localTime(t.created_at)),
        ),
      ),
    ),
  );
}

/** A small PNG drawn on a canvas: a printer check that needs no file. */
function testPrintPng(terminalId: string): string {
  const canvas = document.createElement('canvas');
  canvas.width = 384;
  canvas.height = 96;
  const context = canvas.getContext('2d')!;
  context.fillStyle = '#fff';
  context.fillRect(0, 0, canvas.width, canvas.height);
  context.fillStyle = '#000';
  context.font = '24px sans-serif';
  context.fillText('Test print', 16, 40);
  context.font = '16px sans-serif';
  context.fillText(`${terminalId} ${new Date().toISOString()}`, 16, 72);
  return canvas.toDataURL('image/png').replace(/^data:image\/png;base64,/, '');
}

export async function terminalPage(main: HTMLElement, terminalId: string): Promise<Cleanup> {
  const statusBox = h('div', { id: 'status' });
  const history = h('ol', { class: 'timeline', 'aria-label': 'Status history' });
  const unconfirmedBox = h('div', {});
  const recentBox = h('div', {});
  const settlements = settlementView(terminalId);
  const printResult = h('p', { role: 'status' });
  const printButton = h('button', { type: 'button' }, 'Send a test print');
  printButton.addEventListener('click', async () => {
    try {
      await api.print(terminalId, testPrintPng(terminalId));
      printResult.textContent = 'The test print is queued.';
    } catch (error) {
      printResult.textContent = `Not printed: ${errorText(error)}`;
    }
  });
  fill(
    main,
    h('h1', {}, `Terminal ${terminalId}`),
    currentSession()?.terminal_id === undefined
      ? h(
          'p',
          {},
          h(
            'a',
            { href: `#/fleet/terminal/${encodeURIComponent(terminalId)}` },
            'In the fleet: facts, configuration, diagnostics',
          ),
        )
      : null,
    h(
      'section',
      { 'aria-labelledby': 'h-status' },
      h('h2', { id: 'h-status' }, 'Status'),
      statusBox,
    ),
    h('section', {}, h('h2', {}, 'Test print'), printButton, printResult),
    settlements.element,
    h('section', {}, h('h2', {}, 'Unconfirmed transactions'), unconfirmedBox),
    h('section', {}, h('h2', {}, 'Recent transactions'), recentBox),
    h('section', {}, h('h2', {}, 'Status history'), history),
  );
  let lastStatus: TerminalStatus | undefined;
  const drawStatus = (status: TerminalStatus) => {
    lastStatus = status;
    fill(
      statusBox,
      h(
        'dl',
        { class: 'facts' },
        h('dt', {}, 'Connection'),
        h('dd', {}, statusBadge(status.connected, relayReachable())),
        h('dt', {}, 'Battery'),
        h('dd', {}, battery(status)),
        h('dt', {}, 'Plugged in'),
        h('dd', {}, yesNo(status.plugged_in)),
        h('dt', {}, 'Screen'),
        h('dd', {}, status.screen_message ?? '—'),
        h('dt', {}, 'Transaction state'),
        h('dd', {}, stateBadge(status.transaction_state)),
        h('dt', {}, 'Updated'),
        h('dd', {}, localTime(status.updated_at)),
      ),
    );
  };
  const historyItem = (status: TerminalStatus) =>
    h(
      'li',
      {},
      localTime(status.updated_at),
      ` — ${status.connected === false ? 'offline' : 'online'}, ${
        status.transaction_state ?? ''
      } ${status.screen_message ? `“${status.screen_message}”` : ''}`,
    );
  // Lost and found again: the status says so, with what was last heard.
  const unwatch = onConnection(() => {
    if (lastStatus) drawStatus(lastStatus);
  });
  const unlisten = onEvent((event) => {
    if (event.subject !== terminalId && event.data.terminal_id !== terminalId) return;
    if (isStatusEvent(event)) {
      drawStatus(event.data);
      history.prepend(historyItem(event.data));
    }
    if (isSettlementEvent(event)) settlements.add(event.data);
  });
  const stop = () => {
    unlisten();
    unwatch();
  };
  try {
    const [{ status }, { transactions }, events, search] = await Promise.all([
      api.status(terminalId),
      api.unconfirmed(terminalId),
      subjectEvents(terminalId),
      api.search({ terminal_id: terminalId, limit: 20 }),
    ]);
    drawStatus(status);
    fill(unconfirmedBox, transactions.length ? transactionRows(transactions) : h('p', {}, 'None.'));
    const recent = search.transactions;
    fill(recentBox, recent.length ? transactionRows(recent) : h('p', {}, 'None yet.'));
    settlements.show(events.filter(isSettlementEvent).map((e) => e.data));
    const statuses = events.filter(isStatusEvent).slice(-50).reverse();
    fill(
      history,
      statuses.map((e) => historyItem(e.data)),
    );
  } catch (error) {
    // A terminal that is not there (or not this credential's) has no page to act on: the
    // router shows "Not available" with the reason, and no test print is offered.
    stop();
    throw error;
  }
  return stop;
}
