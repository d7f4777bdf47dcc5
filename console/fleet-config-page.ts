/**
 * The fleet's configuration (docs/fleet.md, "Configuration"): one layer at a time (the
 * account's, a cohort's, a terminal's) in an editor that saves the layer whole, as
 * /fleet/config/set replaces it, and every terminal the layer reaches with its desired
 * configuration against what its agent reported. The relay checks a layer with the
 * configuration's schema, as it checks any call; what it refuses is shown as it says it.
 */
import type { ConfigScope, FleetConfig, FleetConfigResponse } from '../protocol/index.js';
import { ApiFailure, api } from './api.js';
import { announce, errorText, field, fill, h } from './dom.js';
import { configState, fleetHref, terminalLink, type FleetScope } from './fleet-view.js';
import { localTime } from './format.js';
import type { Cleanup } from './terminal-pages.js';

/** After a save, how often and how long the page reads again until the agents answered. */
const SETTLE_READ_MS = 2_000;
const SETTLE_FOR_MS = 60_000;

type Layer = 'account' | 'cohort' | 'terminal';

/** The layer the address names: `?layer=terminal&terminal=t-…`; the account's by default. */
function scopeOf(query: URLSearchParams): { layer: Layer; scope: ConfigScope } | undefined {
  const layer = query.get('layer') ?? 'account';
  if (layer === 'account') return { layer, scope: { account: true } };
  const cohort = query.get('cohort');
  if (layer === 'cohort' && cohort) return { layer, scope: { cohort } };
  const terminal = query.get('terminal');
  if (layer === 'terminal' && terminal) return { layer, scope: { terminal_id: terminal } };
  return undefined;
}

const layerName = (scope: ConfigScope) =>
  'terminal_id' in scope
    ? `terminal ${scope.terminal_id}`
    : 'cohort' in scope
      ? `cohort ${scope.cohort}`
      : 'the account (every terminal)';

function reachedTable(fleet: FleetScope, answer: FleetConfigResponse): HTMLElement {
  if (answer.terminals.length === 0) return h('p', {}, 'It reaches no terminal yet.');
  return h(
    'table',
    { class: 'list', id: 'config-terminals' },
    h('caption', {}, 'Terminals this layer reaches'),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ['Terminal', 'State', 'Desired', 'Reported'].map((t) => h('th', { scope: 'col' }, t)),
      ),
    ),
    h(
      'tbody',
      {},
      answer.terminals.map((view) =>
        h(
          'tr',
          { 'data-terminal': view.terminal_id },
          h('td', {}, terminalLink(fleet, view.terminal_id, null)),
          h('td', {}, configState(view)),
          h(
            'td',
            {},
            h('code', {}, view.desired.version),
            ' ',
            h('code', {}, JSON.stringify(view.desired.config)),
          ),
          h(
            'td',
            {},
            view.reported
              ? [
                  `${view.reported.status} `,
                  h('code', {}, view.reported.version),
                  ' at ',
                  localTime(view.reported.at),
                ]
              : 'nothing yet',
          ),
        ),
      ),
    ),
  );
}

/** The form that picks a layer: its choice goes into the address, so a reload keeps it. */
async function layerPicker(fleet: FleetScope, query: URLSearchParams): Promise<HTMLElement> {
  const { terminals } = await api.facts(fleet.accountId);
  const chosen = query.get('layer') ?? 'account';
  const layer = h(
    'select',
    { id: 'config-layer' },
    (
      [
        ['account', 'Account: every terminal'],
        ['cohort', 'Cohort'],
        ['terminal', 'Terminal'],
      ] as const
    ).map(([value, label]) => h('option', { value, selected: value === chosen }, label)),
  );
  const cohort = h('input', {
    id: 'config-cohort',
    autocomplete: 'off',
    placeholder: 'cohort-…',
    value: query.get('cohort') ?? '',
  });
  const terminal = h(
    'select',
    { id: 'config-terminal' },
    terminals.map((t) =>
      h(
        'option',
        { value: t.terminal_id, selected: t.terminal_id === query.get('terminal') },
        t.name && t.name !== t.terminal_id ? `${t.name} (${t.terminal_id})` : t.terminal_id,
      ),
    ),
  );
  const cohortField = field('Cohort', cohort, 'e.g. cohort-store-17');
  const terminalField = field('Terminal', terminal);
  const show = () => {
    cohortField.hidden = layer.value !== 'cohort';
    terminalField.hidden = layer.value !== 'terminal';
  };
  show();
  layer.addEventListener('change', show);
  const form = h(
    'form',
    { class: 'filters', 'aria-label': 'Which layer' },
    field('Layer', layer),
    cohortField,
    terminalField,
    h('button', { type: 'submit' }, 'Open'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const asked: Record<string, string> = { layer: layer.value };
    if (layer.value === 'cohort') asked.cohort = cohort.value.trim();
    if (layer.value === 'terminal') asked.terminal = terminal.value;
    location.hash = fleetHref(fleet, 'config', asked);
  });
  return form;
}

export async function configPage(
  main: HTMLElement,
  fleet: FleetScope,
  query: URLSearchParams,
): Promise<Cleanup> {
  const picker = await layerPicker(fleet, query);
  const chosen = scopeOf(query);
  const page = [
    h('h1', {}, 'Configuration'),
    fleet.accountId ? h('p', {}, `For account ${fleet.accountId}.`) : null,
    h('p', {}, h('a', { href: fleetHref(fleet) }, 'Back to the fleet')),
    picker,
  ];
  if (!chosen) {
    fill(main, page, h('p', {}, 'Name the cohort or pick the terminal, then Open.'));
    return () => undefined;
  }
  const { scope } = chosen;
  const editor = h('textarea', {
    id: 'layer-editor',
    class: 'editor',
    spellcheck: 'false',
    autocomplete: 'off',
  });
  const changed = h('p', {});
  const problem = h('div', { id: 'layer-problem' });
  const reached = h('div', {});
  const save = h('button', { type: 'submit' }, 'Save');
  let settling: ReturnType<typeof setTimeout> | undefined;
  const show = (answer: FleetConfigResponse) => {
    fill(
      changed,
      answer.changed_at ? ['Last set ', localTime(answer.changed_at), '.'] : 'Never set.',
    );
    fill(reached, reachedTable(fleet, answer));
  };
  // After a save, each agent applies and reports: read again until each has said.
  const settle = (until: number) => {
    clearTimeout(settling);
    settling = setTimeout(async () => {
      try {
        const answer = await api.configGet(scope, fleet.accountId);
        show(answer);
        const waiting = answer.terminals.some(
          (t) => !t.in_sync && t.reported?.status !== 'REJECTED',
        );
        if (waiting && Date.now() < until) settle(until);
        else announce(waiting ? 'Some terminals have not answered yet' : 'Every terminal answered');
      } catch {
        if (Date.now() < until) settle(until);
      }
    }, SETTLE_READ_MS);
  };
  const form = h(
    'form',
    { 'aria-labelledby': 'h-layer' },
    h('h2', { id: 'h-layer' }, `Layer of ${layerName(scope)}`),
    changed,
    field(
      'Settings of this layer (JSON)',
      editor,
      'Saved whole: a setting left out is no longer set here; {} clears the layer. ' +
        'E.g. {"heartbeat_s": 10, "idle_screen_text": "Welcome"}. ' +
        'The settings and their bounds: docs/fleet.md, “Configuration”.',
    ),
    problem,
    save,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    fill(problem);
    let config: FleetConfig;
    try {
      config = JSON.parse(editor.value || '{}') as FleetConfig;
    } catch (error) {
      fill(problem, h('p', { role: 'alert' }, `Not saved: not JSON: ${errorText(error)}`));
      return;
    }
    if (config === null || typeof config !== 'object' || Array.isArray(config)) {
      fill(problem, h('p', { role: 'alert' }, 'Not saved: the layer is a JSON object, {…}.'));
      return;
    }
    try {
      const answer = await api.configSet(scope, config, fleet.accountId);
      editor.value = JSON.stringify(answer.layer, null, 2);
      show(answer);
      announce('Saved; the terminals apply it now');
      settle(Date.now() + SETTLE_FOR_MS);
    } catch (error) {
      const code = error instanceof ApiFailure ? ` (${error.code})` : '';
      fill(problem, h('p', { role: 'alert' }, `Not saved${code}: ${errorText(error)}`));
    }
  });
  fill(
    main,
    page,
    h('section', {}, form),
    h('section', { 'aria-label': 'Terminals it reaches' }, reached),
  );
  const answer = await api.configGet(scope, fleet.accountId);
  editor.value = JSON.stringify(answer.layer, null, 2);
  show(answer);
  return () => clearTimeout(settling);
}
