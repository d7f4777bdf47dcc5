/**
 * One terminal in the fleet: its facts, its configuration against the desired one, the
 * diagnostics its running agent answers on request (doctor, logs, trace), and for the
 * merchant its end-of-day. What an agent says is text for a person: it is only ever set
 * as text content, never parsed as HTML.
 */
import type {
  DiagnosticKind,
  DiagnosticsResponse,
  TerminalConfigView,
  TerminalFacts,
} from '../protocol/index.js';
import { api, isSettlementEvent, isStatusEvent } from './api.js';
import { announce, errorText, fill, h } from './dom.js';
import { takeClaimed } from './fleet-claim.js';
import {
  configState,
  fleetHref,
  known,
  lastSeen,
  readerText,
  type FleetScope,
} from './fleet-view.js';
import { localTime } from './format.js';
import { onEvent } from './live.js';
import { settlementView } from './settlement-view.js';
import { subjectEvents, type Cleanup } from './terminal-pages.js';

const DIAGNOSTICS: Array<[DiagnosticKind, string]> = [
  ['doctor', 'Run doctor'],
  ['logs', 'Fetch logs'],
  ['trace', 'Fetch trace'],
];

/** A diagnostic's answer as lines of plain text. */
export function diagnosticText(answer: DiagnosticsResponse): string {
  if (answer.doctor) {
    return answer.doctor.checks
      .map((check) => {
        const detail = check.detail ? `\n      ${check.detail.replace(/\n/g, '\n      ')}` : '';
        return `[${check.status}] ${check.title}${detail}`;
      })
      .join('\n');
  }
  if (answer.logs) {
    const lines = answer.logs.lines.join('\n') || '(no lines)';
    return answer.logs.truncated ? `(older lines left out)\n${lines}` : lines;
  }
  if (answer.trace) {
    const head = answer.trace.transaction_id
      ? `payment ${answer.trace.transaction_id}`
      : 'no payment since the agent started';
    const frames = answer.trace.frames.map((f) => `${f.at} ${f.direction} ${f.text}`);
    return [head, ...(answer.trace.truncated ? ['(older frames left out)'] : []), ...frames].join(
      '\n',
    );
  }
  return '(empty answer)';
}

function factList(facts: TerminalFacts): HTMLElement {
  const rows: Array<[string, HTMLElement | string]> = [
    ['Name', known(facts.name)],
    ['Cohort', known(facts.cohort)],
    ['Connection', lastSeen(facts)],
    ['Agent', known(facts.agent_version)],
    ['Node.js', known(facts.node_version)],
    ['Reader', readerText(facts)],
    ['Configuration in force', `${known(facts.config_version)} ${facts.config_status ?? ''}`],
    ['Last update', known(facts.last_update_outcome)],
  ];
  return h(
    'dl',
    { class: 'facts', id: 'fleet-facts' },
    rows.flatMap(([term, value]) => [h('dt', {}, term), h('dd', {}, value)]),
  );
}

function configView(view: TerminalConfigView | undefined): HTMLElement[] {
  if (!view) return [h('p', {}, 'No configuration reaches it.')];
  const reported = view.reported;
  return [
    h(
      'dl',
      { class: 'facts' },
      h('dt', {}, 'State'),
      h('dd', {}, configState(view)),
      h('dt', {}, 'Desired'),
      h('dd', {}, h('code', {}, view.desired.version)),
      h('dt', {}, 'Reported'),
      h(
        'dd',
        {},
        reported
          ? [
              `${reported.status} `,
              h('code', {}, reported.version),
              ' at ',
              localTime(reported.at),
              reported.reason ? `: ${reported.reason}` : '',
            ]
          : 'nothing yet',
      ),
    ),
    h(
      'pre',
      { class: 'output', tabindex: 0, 'aria-label': 'Desired configuration' },
      JSON.stringify(view.desired.config, null, 2),
    ),
  ];
}

export async function fleetTerminalPage(
  main: HTMLElement,
  scope: FleetScope,
  terminalId: string,
): Promise<Cleanup> {
  const factsBox = h('div', {});
  const configBox = h('div', { id: 'fleet-config-state' });
  const progress = h('p', { role: 'status', id: 'diagnostics-status' });
  const output = h('pre', {
    class: 'output',
    id: 'diagnostics-output',
    tabindex: 0,
    'aria-label': 'Diagnostics answer',
    hidden: true,
  });
  const refresh = h('button', { type: 'button' }, 'Refresh');
  const read = async () => {
    const [facts, config] = await Promise.all([
      api.terminalFacts(terminalId, scope.accountId),
      api.configGet({ terminal_id: terminalId }, scope.accountId),
    ]);
    const found = facts.terminals[0];
    fill(factsBox, found ? factList(found) : h('p', {}, 'Not known.'));
    fill(configBox, configView(config.terminals[0]));
  };
  refresh.addEventListener('click', () => {
    read().then(
      () => announce('Read again'),
      (error: unknown) => fill(factsBox, h('p', { role: 'alert' }, errorText(error))),
    );
  });

  const buttons = DIAGNOSTICS.map(([kind, label]) => {
    const button = h('button', { type: 'button' }, label);
    button.addEventListener('click', async () => {
      for (const b of buttons) b.disabled = true;
      progress.textContent = `${label}: asking the terminal…`;
      try {
        const answer = await api.diagnostics(terminalId, kind, scope.accountId);
        output.textContent = diagnosticText(answer);
        output.hidden = false;
        progress.textContent = `${label}: answered at ${new Date().toLocaleTimeString()}.`;
      } catch (error) {
        progress.textContent = `${label}: no answer: ${errorText(error)}`;
      } finally {
        for (const b of buttons) b.disabled = false;
      }
    });
    return button;
  });

  const claimed = takeClaimed(terminalId);
  // End-of-day totals arrive as events, which the operator does not read.
  const settlements = scope.operator ? undefined : settlementView(terminalId);
  fill(
    main,
    h('h1', {}, `Fleet: ${terminalId}`),
    claimed
      ? h(
          'div',
          { role: 'status' },
          h(
            'p',
            {},
            `Claimed: ${claimed.name}${claimed.cohort ? ` in ${claimed.cohort}` : ''}. Its POS credential is shown this once:`,
          ),
          h(
            'pre',
            { class: 'secret' },
            `terminal_id ${claimed.terminal_id}\nusername    ${claimed.username}\npassword    ${claimed.password}`,
          ),
        )
      : null,
    h(
      'p',
      { class: 'toolbar' },
      h('a', { href: fleetHref(scope) }, 'Back to the fleet'),
      scope.operator ? null : h('a', { href: `#/terminal/${terminalId}` }, 'Payments and status'),
      refresh,
    ),
    h('section', { 'aria-labelledby': 'h-facts' }, h('h2', { id: 'h-facts' }, 'Facts'), factsBox),
    h(
      'section',
      { 'aria-labelledby': 'h-config' },
      h('h2', { id: 'h-config' }, 'Configuration'),
      configBox,
      h(
        'p',
        {},
        h(
          'a',
          { href: fleetHref(scope, 'config', { layer: 'terminal', terminal: terminalId }) },
          'Change its terminal layer',
        ),
      ),
    ),
    h(
      'section',
      { 'aria-labelledby': 'h-diagnostics' },
      h('h2', { id: 'h-diagnostics' }, 'Diagnostics'),
      h('p', {}, 'Asked of the running agent; it answers within 15 s when it is connected.'),
      h('div', { class: 'toolbar' }, buttons),
      progress,
      output,
    ),
    settlements?.element,
  );
  const stop = scope.operator
    ? () => undefined
    : onEvent((event) => {
        if (event.subject !== terminalId && event.data.terminal_id !== terminalId) return;
        if (isStatusEvent(event)) void read().catch(() => undefined);
        if (isSettlementEvent(event)) settlements?.add(event.data);
      });
  try {
    await read();
    if (settlements) {
      const events = await subjectEvents(terminalId);
      settlements.show(events.filter(isSettlementEvent).map((e) => e.data));
    }
  } catch (error) {
    stop();
    throw error;
  }
  return stop;
}
