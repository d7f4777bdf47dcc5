/**
 * The console: sign-in, the page chosen by the address's fragment (#/terminals, …), the
 * live feed shared by every page. Pages call the API's own operations (api.ts).
 */
import { currentSession, restoreSession, signIn, signOut, whenSignedOut } from './api.js';
import { announce, errorText, fill, h } from './dom.js';
import { onConnection, relayReachable, startLive, stopLive } from './live.js';
import { accountsPage } from './account-pages.js';
import { claimPage } from './fleet-claim.js';
import { configPage } from './fleet-config-page.js';
import { fleetPage } from './fleet-page.js';
import { fleetTerminalPage } from './fleet-terminal-page.js';
import { releasesPage } from './release-page.js';
import { rolloutPage, rolloutsPage } from './rollout-pages.js';
import { rolloutStartPage } from './rollout-start.js';
import type { FleetScope } from './fleet-view.js';
import { eventsPage, webhooksPage } from './other-pages.js';
import { terminalPage, terminalsPage, type Cleanup } from './terminal-pages.js';
import { simulatorsPage, transactionPage, transactionsPage } from './transaction-pages.js';

/** Stops the header's connection line hearing the feed (it is drawn anew at each sign-in). */
let unwatchConnection: () => void = () => undefined;

const main = document.getElementById('main')!;
const nav = document.getElementById('nav')!;
const who = document.getElementById('who')!;
let cleanup: Cleanup = () => undefined;

const PAGES: Array<[string, string]> = [
  ['terminals', 'Terminals'],
  ['fleet', 'Fleet'],
  ['rollouts', 'Rollouts'],
  ['transactions', 'Transactions'],
  ['events', 'Events'],
  ['webhooks', 'Webhooks'],
  ['simulators', 'Simulators'],
];
/** The operator sees no payment of a merchant: its pages are its own (docs/tenants.md). */
const OPERATOR_PAGES: Array<[string, string]> = [
  ['accounts', 'Accounts'],
  ['fleet', 'Fleet'],
  ['releases', 'Releases'],
  ['rollouts', 'Rollouts'],
];
/** A terminal's credential reads no fleet but its own facts, and no rollout. */
const NOT_FOR_TERMINALS = new Set(['fleet', 'rollouts']);
/** The account the operator last picked on a fleet page: the Fleet link goes back to it. */
let operatorAccount: string | undefined;

/** A fleet page: #/fleet, #/fleet/claim, #/fleet/config, #/fleet/terminal/ID (?account=…). */
async function fleetRoute(
  main: HTMLElement,
  operator: boolean,
  params: string[],
  query: URLSearchParams,
): Promise<Cleanup> {
  if (operator) operatorAccount = query.get('account') ?? operatorAccount;
  const scope: FleetScope = { operator, accountId: operator ? operatorAccount : undefined };
  // The operator acts for the account it picked: without one, the picker alone.
  if (operator && !scope.accountId) return fleetPage(main, scope);
  const [page, id] = params;
  if (page === 'claim') return claimPage(main, scope);
  if (page === 'config') return configPage(main, scope, query);
  if (page === 'terminal' && id) return fleetTerminalPage(main, scope, id);
  return fleetPage(main, scope);
}

/** #/releases, #/rollouts, #/rollouts/start, #/rollouts/ID (?account=… for the operator). */
async function releaseRoute(
  main: HTMLElement,
  name: string,
  operator: boolean,
  params: string[],
  query: URLSearchParams,
): Promise<Cleanup> {
  const accountId = (operator && query.get('account')) || undefined;
  const [id] = params;
  if (name === 'releases') return releasesPage(main);
  if (operator && id === 'start') return rolloutStartPage(main, accountId);
  if (id) return rolloutPage(main, operator, id, accountId);
  return rolloutsPage(main, operator, accountId);
}

function drawNav(route: string, pages: Array<[string, string]>) {
  fill(
    nav,
    h(
      'ul',
      {},
      pages.map(([id, label]) =>
        h(
          'li',
          {},
          h('a', { href: `#/${id}`, 'aria-current': route === id ? 'page' : undefined }, label),
        ),
      ),
    ),
  );
}

async function route(): Promise<void> {
  cleanup();
  cleanup = () => undefined;
  const session = currentSession();
  if (!session) return signInPage();
  const operator = session.role === 'operator';
  const [path = '', search = ''] = location.hash.replace(/^#\/?/, '').split('?');
  const [asked = '', ...rest] = path.split('/');
  const name = asked || (operator ? 'accounts' : 'terminals');
  const params = rest.map(decodeURIComponent);
  nav.hidden = false;
  const merchantPages = session.terminal_id
    ? PAGES.filter(([id]) => !NOT_FOR_TERMINALS.has(id))
    : PAGES;
  drawNav(name, operator ? OPERATOR_PAGES : merchantPages);
  fill(main, h('p', {}, 'Loading…'));
  try {
    if (name === 'fleet' && !session.terminal_id)
      cleanup = await fleetRoute(main, operator, params, new URLSearchParams(search));
    else if ((name === 'releases' && operator) || (name === 'rollouts' && !session.terminal_id))
      cleanup = await releaseRoute(main, name, operator, params, new URLSearchParams(search));
    else if (operator) cleanup = await accountsPage(main);
    else if (name === 'terminal' && params[0]) cleanup = await terminalPage(main, params[0]);
    else if (name === 'transactions') cleanup = await transactionsPage(main);
    else if (name === 'transaction' && params[0] && params[1])
      cleanup = await transactionPage(main, params[0], params[1]);
    else if (name === 'events') cleanup = eventsPage(main);
    else if (name === 'webhooks') cleanup = await webhooksPage(main);
    else if (name === 'simulators')
      cleanup = await simulatorsPage(main, session.terminal_id === undefined);
    else cleanup = await terminalsPage(main);
  } catch (error) {
    fill(main, h('h1', {}, 'Not available'), h('p', { role: 'alert' }, errorText(error)));
  }
  const heading = main.querySelector('h1');
  document.title = `${heading?.textContent ?? 'Console'} · TPS console`;
  main.focus();
}

function drawWho() {
  const session = currentSession();
  if (!session) return fill(who);
  const out = h('button', { type: 'button' }, 'Sign out');
  out.addEventListener('click', async () => {
    await signOut();
    stopLive();
    drawWho();
    void route();
  });
  // The operator follows no merchant's events: no live feed, no connection line.
  const connection = h('span', {
    id: 'connection',
    role: 'status',
    hidden: session.role === 'operator',
  });
  const show = (online: boolean) => {
    connection.textContent = online ? 'live' : 'reconnecting…';
    connection.className = online ? 'live' : 'offline';
  };
  show(relayReachable());
  unwatchConnection();
  unwatchConnection = onConnection(show);
  fill(
    who,
    connection,
    ` ${session.terminal_id ? `terminal ${session.terminal_id}` : session.username} `,
    out,
  );
}

/** The live feed, for the roles that read events. */
function followEvents(): void {
  if (currentSession()?.role !== 'operator') startLive();
}

function signInPage() {
  nav.hidden = true;
  // The live region still holds what the signed-in pages said: nothing of it after sign-out.
  announce('');
  const username = h('input', {
    id: 'username',
    name: 'username',
    autocomplete: 'username',
    required: true,
  });
  const password = h('input', {
    id: 'password',
    name: 'password',
    type: 'password',
    autocomplete: 'current-password',
    required: true,
  });
  const problem = h('p', { id: 'sign-in-problem', role: 'alert' });
  const form = h(
    'form',
    { class: 'sign-in', 'aria-labelledby': 'sign-in-title' },
    h('h1', { id: 'sign-in-title' }, 'Sign in'),
    h('p', {}, 'With the account credential, or a terminal’s credential for that terminal alone.'),
    h('div', { class: 'field' }, h('label', { for: 'username' }, 'Username'), username),
    h('div', { class: 'field' }, h('label', { for: 'password' }, 'Password'), password),
    problem,
    h('button', { type: 'submit' }, 'Sign in'),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    problem.textContent = '';
    try {
      await signIn(username.value, password.value);
      password.value = '';
      followEvents();
      drawWho();
      void route();
    } catch (error) {
      problem.textContent = `Not signed in: ${errorText(error)}`;
      password.focus();
    }
  });
  fill(main, form);
  document.title = 'Sign in · TPS console';
  username.focus();
}

whenSignedOut(() => {
  stopLive();
  drawWho();
  void route();
});
window.addEventListener('hashchange', () => void route());
void restoreSession().then(() => {
  if (currentSession()) {
    followEvents();
    drawWho();
  }
  void route();
});
