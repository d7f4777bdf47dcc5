/**
 * The Rollouts pages (docs/fleet.md, "Rollouts"): the list, newest first, and one
 * rollout's page with its waves and each terminal's outcome, read again every 2 s while it
 * runs. The operator sees every account's (or the one it picks), starts rollouts and
 * pauses or resumes one; a merchant reads those that reach its account, with no control.
 */
import type { AccountView, RolloutView } from '../protocol/index.js';
import { api, releasesAndRollouts } from './api.js';
import { announce, errorText, field, fill, h, type Child } from './dom.js';
import { terminalLink } from './fleet-view.js';
import { localTime } from './format.js';
import {
  WAVES,
  installedText,
  outcome,
  releaseText,
  rolloutState,
  rolloutsHref,
} from './rollout-view.js';
import type { Cleanup } from './terminal-pages.js';

/** How often a running rollout's page reads it again. */
const RUNNING_REREAD_MS = 2_000;

/** The merchant accounts, for the operator's pickers. */
export async function merchantAccounts(): Promise<AccountView[]> {
  const { accounts } = await api.accounts();
  return accounts.filter((account) => account.kind === 'merchant');
}

export const accountLabel = (account: AccountView) =>
  `${account.name ?? account.account_id} (${account.account_id})${
    account.disabled_at ? ', disabled' : ''
  }`;

function rolloutTable(rollouts: RolloutView[], operator: boolean, accountId?: string) {
  if (rollouts.length === 0) return h('p', { id: 'rollouts' }, 'No rollout yet.');
  const columns = [
    'Rollout',
    ...(operator ? ['Account'] : []),
    'Release',
    'Cohort',
    'State',
    'Wave',
    'Terminals',
    'Started',
  ];
  return h(
    'table',
    { class: 'list', id: 'rollouts' },
    h('caption', { class: 'visually-hidden' }, 'Rollouts, newest first'),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        columns.map((t) => h('th', { scope: 'col' }, t)),
      ),
    ),
    h(
      'tbody',
      {},
      rollouts.map((rollout) =>
        h(
          'tr',
          { 'data-rollout': rollout.id },
          h('td', {}, h('a', { href: rolloutsHref(accountId, rollout.id) }, rollout.id)),
          operator ? h('td', {}, rollout.account_id) : null,
          h('td', {}, releaseText(rollout)),
          h('td', {}, rollout.cohort),
          h('td', {}, rolloutState(rollout)),
          h('td', {}, `${rollout.wave} of ${WAVES}`),
          h('td', {}, installedText(rollout)),
          h('td', {}, localTime(rollout.created_at)),
        ),
      ),
    ),
  );
}

export async function rolloutsPage(
  main: HTMLElement,
  operator: boolean,
  accountId: string | undefined,
): Promise<Cleanup> {
  const [{ rollouts }, accounts] = await Promise.all([
    releasesAndRollouts.rollouts(accountId),
    operator ? merchantAccounts() : undefined,
  ]);
  let filter: HTMLElement | null = null;
  if (accounts) {
    const select = h(
      'select',
      { id: 'rollouts-account' },
      h('option', { value: '' }, 'Every account'),
      accounts.map((account) =>
        h(
          'option',
          { value: account.account_id, selected: account.account_id === accountId },
          accountLabel(account),
        ),
      ),
    );
    select.addEventListener('change', () => {
      location.hash = rolloutsHref(select.value || undefined);
    });
    filter = h(
      'form',
      { class: 'filters', 'aria-label': 'Whose rollouts' },
      field('Account', select, 'The rollouts that reach this merchant account'),
    );
  }
  fill(
    main,
    h('h1', {}, 'Rollouts'),
    h(
      'p',
      {},
      operator
        ? 'Releases brought to a cohort of a merchant’s terminals in three waves, a health gate between them. '
        : 'The agent releases the operator brings to your terminals, in three waves; read only. ',
    ),
    operator
      ? h(
          'p',
          { class: 'toolbar' },
          h(
            'a',
            { href: `#/rollouts/start${accountId ? `?account=${accountId}` : ''}` },
            'Start a rollout',
          ),
          h('a', { href: '#/releases' }, 'Releases'),
        )
      : null,
    filter,
    rolloutTable(rollouts, operator, accountId),
  );
  return () => undefined;
}

function wavesOf(rollout: RolloutView, operator: boolean): HTMLElement[] {
  const scope = { operator, accountId: operator ? rollout.account_id : undefined };
  const waves: HTMLElement[] = [];
  for (let wave = 1; wave <= WAVES; wave++) {
    const ordered = rollout.terminals.filter((t) => t.wave === wave);
    const title = `Wave ${wave}`;
    const body =
      ordered.length === 0
        ? h('p', {}, wave <= rollout.wave ? 'Nobody to order in this wave.' : 'Not ordered yet.')
        : h(
            'table',
            { class: 'list', 'data-wave': wave },
            h('caption', { class: 'visually-hidden' }, `Terminals of wave ${wave}`),
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                ['Terminal', 'Outcome', 'Ordered', 'Reported'].map((t) =>
                  h('th', { scope: 'col' }, t),
                ),
              ),
            ),
            h(
              'tbody',
              {},
              ordered.map((terminal) =>
                h(
                  'tr',
                  { 'data-terminal': terminal.terminal_id },
                  h('td', {}, terminalLink(scope, terminal.terminal_id, null)),
                  h('td', {}, outcome(terminal)),
                  h('td', {}, localTime(terminal.ordered_at)),
                  h('td', {}, localTime(terminal.reported_at)),
                ),
              ),
            ),
          );
    waves.push(
      h(
        'section',
        { 'aria-labelledby': `wave-${wave}` },
        h('h2', { id: `wave-${wave}` }, title),
        body,
      ),
    );
  }
  return waves;
}

function factsOf(rollout: RolloutView, operator: boolean): HTMLElement {
  const rows: Array<[string, Child | Child[]]> = [
    ['State', rolloutState(rollout)],
    ['Release', releaseText(rollout)],
    ...(operator ? [['Account', rollout.account_id] as [string, string]] : []),
    ['Cohort', rollout.cohort],
    ['Wave', [`${rollout.wave} of ${WAVES}, since `, localTime(rollout.wave_started_at)]],
    ['Terminals', installedText(rollout)],
    [
      'Gate',
      `wave 2: ${rollout.share_percent} % of the cohort; at most ${rollout.max_failure_percent} % failed after wave 1; ${rollout.deadline_s} s a wave`,
    ],
    ['Started', localTime(rollout.created_at)],
    ['Updated', localTime(rollout.updated_at)],
  ];
  return h(
    'dl',
    { class: 'facts', id: 'rollout-facts' },
    rows.flatMap(([name, value]) => [h('dt', {}, name), h('dd', {}, value)]),
  );
}

export async function rolloutPage(
  main: HTMLElement,
  operator: boolean,
  id: string,
  accountId: string | undefined,
): Promise<Cleanup> {
  let rollout = (await releasesAndRollouts.rollout(id)).rollout;
  const problem = h('div', { id: 'rollout-problem' });
  const view = h('div', {});
  const act = async (action: 'pause' | 'resume') => {
    fill(problem);
    try {
      rollout = (await releasesAndRollouts.act(rollout.id, action)).rollout;
      draw();
      announce(`Rollout ${rollout.state}`);
    } catch (error) {
      fill(problem, h('p', { role: 'alert' }, `Not done: ${errorText(error)}`));
    }
  };
  const controls = () => {
    if (!operator) return null;
    const pause = h('button', { type: 'button', disabled: rollout.state !== 'running' }, 'Pause');
    const resume = h('button', { type: 'button', disabled: rollout.state !== 'paused' }, 'Resume');
    pause.addEventListener('click', () => void act('pause'));
    resume.addEventListener('click', () => void act('resume'));
    return h('p', { class: 'actions' }, pause, resume);
  };
  const draw = () =>
    fill(
      view,
      factsOf(rollout, operator),
      rollout.paused_reason
        ? h(
            'p',
            { id: 'rollout-paused-reason' },
            h('strong', {}, 'Paused: '),
            rollout.paused_reason,
          )
        : null,
      rollout.superseded_by
        ? h(
            'p',
            {},
            'Superseded by ',
            h('a', { href: rolloutsHref(accountId, rollout.superseded_by) }, rollout.superseded_by),
            '.',
          )
        : null,
      controls(),
      problem,
      wavesOf(rollout, operator),
    );
  const refresh = h('button', { type: 'button' }, 'Refresh');
  const reread = async () => {
    try {
      rollout = (await releasesAndRollouts.rollout(id)).rollout;
      draw();
    } catch (error) {
      fill(problem, h('p', { role: 'alert' }, `Not read: ${errorText(error)}`));
    }
  };
  refresh.addEventListener('click', () => void reread());
  // While it runs its waves move on; paused, completed or superseded it waits for a person.
  const timer = setInterval(() => {
    if (rollout.state === 'running') void reread();
  }, RUNNING_REREAD_MS);
  draw();
  fill(
    main,
    h('h1', { class: 'named-id' }, `Rollout ${rollout.id}`),
    h(
      'p',
      { class: 'toolbar' },
      h('a', { href: rolloutsHref(accountId) }, 'Every rollout'),
      h('span', {}, 'Read again every 2 s while it runs, or now: ', refresh),
    ),
    view,
  );
  return () => clearInterval(timer);
}
