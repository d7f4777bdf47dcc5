/**
 * Claim a terminal: the pairing code a new terminal shows, with the name and cohort it is
 * given (POST /terminal/claim). The relay checks the code as it checks any claim; its
 * answer is then the new terminal's page, which shows the POS credential this once.
 */
import type { TerminalClaimResponse } from '../protocol/index.js';
import { ApiFailure, api } from './api.js';
import { errorText, field, fill, h } from './dom.js';
import { fleetHref, type FleetScope } from './fleet-view.js';
import type { Cleanup } from './terminal-pages.js';

/** The answer of the claim just made, until its terminal's page has shown it once. */
let claimed: TerminalClaimResponse | undefined;

/** The claim's answer for `terminalId`, once: the password is not kept anywhere. */
export function takeClaimed(terminalId: string): TerminalClaimResponse | undefined {
  const answer = claimed?.terminal_id === terminalId ? claimed : undefined;
  claimed = undefined;
  return answer;
}

/** What to do about a refused claim (docs/fleet.md, "When it goes wrong"). */
function refusal(error: unknown): string {
  if (!(error instanceof ApiFailure)) return `Not claimed: ${errorText(error)}`;
  const advice: Record<string, string> = {
    PAIRING_NOT_FOUND: 'no terminal waits with this code. Read it again from the terminal.',
    PAIRING_EXPIRED: 'the code expired. Pair the terminal again for a new code.',
    PAIRING_CODE_USED:
      'the code was claimed already. If no one here claimed it, pair the terminal again.',
  };
  return `Not claimed (${error.code}): ${advice[error.code] ?? error.message}`;
}

export function claimPage(main: HTMLElement, scope: FleetScope): Cleanup {
  const code = h('input', {
    id: 'claim-code',
    required: true,
    maxlength: 32,
    autocomplete: 'off',
    autocapitalize: 'characters',
    spellcheck: 'false',
  });
  const name = h('input', { id: 'claim-name', maxlength: 64, autocomplete: 'off' });
  const cohort = h('input', { id: 'claim-cohort', maxlength: 128, autocomplete: 'off' });
  const problem = h('div', { id: 'claim-problem' });
  const form = h(
    'form',
    { 'aria-label': 'Claim a terminal' },
    field(
      'Pairing code',
      code,
      'The 8 characters the terminal shows, e.g. 7KQ2-M9XD; any case, with or without the hyphen',
    ),
    field('Name (optional)', name, 'What people call the terminal: 1-64 characters'),
    field(
      'Cohort (optional)',
      cohort,
      'The group it joins, e.g. cohort-store-17: “cohort-” and lowercase letters, digits, hyphens',
    ),
    problem,
    h('button', { type: 'submit' }, 'Claim'),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    fill(problem);
    try {
      const answer = await api.claim({
        code: code.value,
        ...(name.value.trim() ? { name: name.value.trim() } : {}),
        ...(cohort.value.trim() ? { cohort: cohort.value.trim() } : {}),
        ...(scope.accountId ? { account_id: scope.accountId } : {}),
      });
      claimed = answer;
      location.hash = fleetHref(scope, `terminal/${encodeURIComponent(answer.terminal_id)}`);
    } catch (error) {
      fill(problem, h('p', { role: 'alert' }, refusal(error)));
      code.focus();
    }
  });
  fill(
    main,
    h('h1', {}, 'Claim a terminal'),
    h(
      'p',
      {},
      'On the terminal, ',
      h('code', {}, 'tps-agent pair'),
      ' shows a code for 10 minutes. Claimed here, the terminal joins this account and receives its credential.',
    ),
    scope.accountId ? h('p', {}, `For account ${scope.accountId}.`) : null,
    form,
    h('p', {}, h('a', { href: fleetHref(scope) }, 'Back to the fleet')),
  );
  return () => undefined;
}
