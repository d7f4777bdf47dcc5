/**
 * The Fleet page: every terminal of the account with what its agent says of itself, its
 * configuration against the desired one, local mode and its last update. The merchant's
 * rows follow status events; the operator, who reads no events, re-reads on a timer or
 * on Refresh, for the account it picks.
 */
import type { TerminalConfigView, TerminalFacts, TerminalStatus } from '../protocol/index.js';
import { api, isStatusEvent } from './api.js';
import { announce, errorText, field, fill, h } from './dom.js';
import {
  configState,
  fleetHref,
  known,
  lastSeen,
  localModeText,
  readerText,
  terminalLink,
  type FleetScope,
} from './fleet-view.js';
import { onEvent } from './live.js';
import type { Cleanup } from './terminal-pages.js';

/** How often the operator's page reads the fleet again: it follows no events. */
const OPERATOR_REREAD_MS = 30_000;
/** A terminal's status events within this time cost one re-read of its row. */
const ROW_REREAD_DELAY_MS = 1_000;

/** The operator's choice of account: a list of the merchant accounts, naming the chosen one. */
export async function accountPicker(scope: FleetScope): Promise<HTMLElement> {
  const { accounts } = await api.accounts();
  const select = h(
    'select',
    { id: 'fleet-account' },
    h('option', { value: '' }, 'Choose an account…'),
    accounts
      .filter((account) => account.kind === 'merchant')
      .map((account) =>
        h(
          'option',
          { value: account.account_id, selected: account.account_id === scope.accountId },
          `${account.name ?? account.account_id} (${account.account_id})${
            account.disabled_at ? ', disabled' : ''
          }`,
        ),
      ),
  );
  select.addEventListener('change', () => {
    location.hash = fleetHref({ ...scope, accountId: select.value || undefined });
  });
  return h(
    'form',
    { class: 'filters', 'aria-label': 'Whose fleet' },
    field('Account', select, 'The operator sees the fleet of the account it picks'),
  );
}

export async function fleetPage(main: HTMLElement, scope: FleetScope): Promise<Cleanup> {
  const picker = scope.operator ? await accountPicker(scope) : null;
  if (scope.operator && !scope.accountId) {
    fill(main, h('h1', {}, 'Fleet'), picker, h('p', {}, 'Choose an account to see its fleet.'));
    return () => undefined;
  }
  // The operator reads no terminal status (it holds payment state): no local mode column.
  const columns = [
    'Terminal',
    'Cohort',
    'Agent',
    'Node.js',
    'Reader',
    'Last seen',
    'Configuration',
    ...(scope.operator ? [] : ['Local mode']),
    'Last update',
  ];
  const body = h('tbody', {});
  const rows = new Map<string, HTMLTableRowElement>();
  const statuses = new Map<string, TerminalStatus>();
  const problem = h('div', {});
  const refresh = h('button', { type: 'button' }, 'Refresh');
  const row = (facts: TerminalFacts, config: TerminalConfigView | undefined) =>
    h(
      'tr',
      { 'data-terminal': facts.terminal_id },
      h('td', {}, terminalLink(scope, facts.terminal_id, facts.name)),
      h('td', {}, known(facts.cohort)),
      h('td', {}, known(facts.agent_version)),
      h('td', {}, known(facts.node_version)),
      h('td', {}, readerText(facts)),
      h('td', {}, lastSeen(facts)),
      h('td', {}, configState(config)),
      scope.operator ? null : h('td', {}, localModeText(statuses.get(facts.terminal_id))),
      h('td', {}, known(facts.last_update_outcome)),
    );
  const draw = (facts: TerminalFacts, config: TerminalConfigView | undefined) => {
    const drawn = row(facts, config);
    const old = rows.get(facts.terminal_id);
    if (old) old.replaceWith(drawn);
    else body.append(drawn);
    rows.set(facts.terminal_id, drawn);
  };
  const readAll = async () => {
    const [{ terminals }, config, list] = await Promise.all([
      api.facts(scope.accountId),
      // The account's layer reaches every terminal: one read gives each one's state.
      api.configGet({ account: true }, scope.accountId),
      scope.operator ? undefined : api.terminals(),
    ]);
    for (const t of list?.terminals ?? []) statuses.set(t.terminal_id, t.status);
    const configs = new Map(config.terminals.map((view) => [view.terminal_id, view]));
    fill(body);
    rows.clear();
    for (const facts of terminals) draw(facts, configs.get(facts.terminal_id));
    if (terminals.length === 0) {
      body.append(h('tr', {}, h('td', { colspan: columns.length }, 'No terminals yet.')));
    }
  };
  const rereadAll = async () => {
    try {
      await readAll();
      fill(problem);
      announce('Fleet read again');
    } catch (error) {
      fill(problem, h('p', { role: 'alert' }, `Not read: ${errorText(error)}`));
    }
  };
  refresh.addEventListener('click', () => void rereadAll());

  const pending = new Set<string>();
  const rereadRow = (terminalId: string) => {
    if (pending.has(terminalId)) return;
    pending.add(terminalId);
    setTimeout(async () => {
      pending.delete(terminalId);
      try {
        const [{ terminals }, config] = await Promise.all([
          api.terminalFacts(terminalId, scope.accountId),
          api.configGet({ terminal_id: terminalId }, scope.accountId),
        ]);
        if (terminals[0] && rows.has(terminalId)) draw(terminals[0], config.terminals[0]);
      } catch {
        // The next event or Refresh tries again; the row keeps what it showed.
      }
    }, ROW_REREAD_DELAY_MS);
  };
  const stopEvents = scope.operator
    ? () => undefined
    : onEvent((event) => {
        if (!isStatusEvent(event)) return;
        const id = event.data.terminal_id ?? event.subject ?? '';
        if (!rows.has(id)) return;
        statuses.set(id, event.data);
        rereadRow(id);
      });
  const timer = scope.operator ? setInterval(() => void rereadAll(), OPERATOR_REREAD_MS) : 0;
  const stop = () => {
    stopEvents();
    clearInterval(timer);
  };

  fill(
    main,
    h('h1', {}, 'Fleet'),
    picker,
    h(
      'p',
      { class: 'toolbar' },
      h('a', { href: fleetHref(scope, 'claim') }, 'Claim a terminal'),
      h('a', { href: fleetHref(scope, 'config') }, 'Configuration'),
    ),
    h(
      'p',
      {},
      scope.operator
        ? 'Read again every 30 s, or now: '
        : 'Rows follow the terminals’ status as it changes. ',
      refresh,
    ),
    problem,
    h(
      'table',
      { class: 'list', id: 'fleet' },
      h('caption', { class: 'visually-hidden' }, 'Terminals of the fleet'),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          columns.map((t) => h('th', { scope: 'col' }, t)),
        ),
      ),
      body,
    ),
  );
  try {
    await readAll();
  } catch (error) {
    stop();
    throw error;
  }
  return stop;
}
