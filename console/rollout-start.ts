/**
 * The operator starts a rollout (POST …/fleet/rollouts): a published release to a cohort
 * of the merchant account it picks, with the gate's settings as the API takes them. The
 * relay checks the request; what it refuses is shown as it says it, with what to do.
 */
import type { RolloutStartRequest } from '../protocol/index.js';
import { ApiFailure, api, releasesAndRollouts } from './api.js';
import { errorText, field, fill, h } from './dom.js';
import { accountLabel, merchantAccounts } from './rollout-pages.js';
import { rolloutsHref } from './rollout-view.js';
import type { Cleanup } from './terminal-pages.js';

const ADVICE: Record<string, string> = {
  COHORT_NOT_FOUND:
    'no terminal of this account is in that cohort; a terminal joins a cohort when it is claimed.',
  RELEASE_NOT_FOUND: 'that release is not published; publish it on the Releases page.',
};

function refusal(error: unknown): string {
  if (!(error instanceof ApiFailure)) return `Not started: ${errorText(error)}`;
  return `Not started (${error.code}): ${ADVICE[error.code] ?? error.message}`;
}

/** A number input with the API's bounds; empty leaves the relay's default. */
function numberInput(id: string, min: number, max: number, value: number): HTMLInputElement {
  return h('input', { id, type: 'number', min, max, step: 1, value, inputmode: 'numeric' });
}

export async function rolloutStartPage(
  main: HTMLElement,
  accountId: string | undefined,
): Promise<Cleanup> {
  const [accounts, { releases }] = await Promise.all([
    merchantAccounts(),
    releasesAndRollouts.list(),
  ]);
  const account = h(
    'select',
    { id: 'rollout-account', required: true },
    h('option', { value: '' }, 'Choose an account…'),
    accounts.map((a) =>
      h('option', { value: a.account_id, selected: a.account_id === accountId }, accountLabel(a)),
    ),
  );
  const release = h(
    'select',
    { id: 'rollout-release', required: true },
    releases.map((r, index) => h('option', { value: index }, `${r.version} (${r.arch})`)),
  );
  const cohorts = h('datalist', { id: 'rollout-cohorts' });
  const cohort = h('input', {
    id: 'rollout-cohort',
    required: true,
    maxlength: 128,
    autocomplete: 'off',
    list: 'rollout-cohorts',
  });
  const share = numberInput('rollout-share', 1, 100, 10);
  const failures = numberInput('rollout-failures', 0, 100, 10);
  const deadline = numberInput('rollout-deadline', 10, 604_800, 900);
  const problem = h('div', { id: 'rollout-start-problem' });

  // The cohorts the chosen account's terminals are in, offered as the cohort's choices.
  const offerCohorts = async () => {
    fill(cohorts);
    if (!account.value) return;
    const { terminals } = await api.facts(account.value).catch(() => ({ terminals: [] }));
    const names = new Set(terminals.map((t) => t.cohort).filter((c): c is string => !!c));
    fill(
      cohorts,
      [...names].sort().map((name) => h('option', { value: name })),
    );
  };
  account.addEventListener('change', () => void offerCohorts());

  const form = h(
    'form',
    { 'aria-label': 'Start a rollout' },
    field('Account', account, 'The merchant account whose cohort it reaches'),
    field('Release', release, 'Each agent downloads the release of its own architecture'),
    field('Cohort', cohort, 'e.g. cohort-store-17, as its terminals were claimed into it'),
    field('Wave 2 share (%)', share, 'Of the cohort, at least one terminal (1-100)'),
    field(
      'Failures allowed after wave 1 (%)',
      failures,
      'Of a wave, rounded down; more pause the rollout. Wave 1 allows none (0-100)',
    ),
    field('Deadline per wave (s)', deadline, 'For a wave’s terminals to report (10-604800)'),
    problem,
    h('button', { type: 'submit' }, 'Start'),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    fill(problem);
    const chosen = releases[Number(release.value)];
    if (!chosen) return;
    const numbers = { share_percent: share, max_failure_percent: failures, deadline_s: deadline };
    const request: RolloutStartRequest = {
      account_id: account.value,
      version: chosen.version,
      arch: chosen.arch,
      cohort: cohort.value.trim(),
    };
    for (const [name, input] of Object.entries(numbers) as Array<
      [keyof typeof numbers, HTMLInputElement]
    >) {
      if (input.value !== '') request[name] = Number(input.value);
    }
    try {
      const { rollout } = await releasesAndRollouts.start(request);
      location.hash = rolloutsHref(account.value, rollout.id);
    } catch (error) {
      fill(problem, h('p', { role: 'alert' }, refusal(error)));
    }
  });

  fill(
    main,
    h('h1', {}, 'Start a rollout'),
    h(
      'p',
      {},
      'Wave 1 orders one terminal, wave 2 the share, wave 3 the rest; a failure over the limit pauses it. A running or paused rollout of the same cohort is superseded.',
    ),
    releases.length === 0
      ? h(
          'p',
          {},
          'No release is published yet: ',
          h('a', { href: '#/releases' }, 'publish one'),
          '.',
        )
      : [form, cohorts],
    h('p', {}, h('a', { href: rolloutsHref(accountId) }, 'Back to the rollouts')),
  );
  await offerCohorts();
  return () => undefined;
}
