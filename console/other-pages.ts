/** The Events page (a live tail with filters) and the Webhooks page. */
import type { WebhookView } from '../protocol/index.js';
import { api, isSettlementEvent, isStatusEvent, type CloudEventView } from './api.js';
import { announce, errorText, field, fill, h } from './dom.js';
import { onEvent, recent } from './live.js';
import { localTime } from './format.js';
import type { Cleanup } from './terminal-pages.js';

const TAIL_KEPT = 200;

export function eventsPage(main: HTMLElement): Cleanup {
  const subject = h('input', { id: 'ev-subject', type: 'search', autocomplete: 'off' });
  const kind = h(
    'select',
    { id: 'ev-kind' },
    h('option', { value: '' }, 'All'),
    h('option', { value: 'Transaction' }, 'Transaction'),
    h('option', { value: 'TerminalStatus' }, 'Terminal status'),
    h('option', { value: 'TerminalSettlement' }, 'End-of-day'),
  );
  const paused = h('input', { id: 'ev-paused', type: 'checkbox' });
  const list = h('ol', { class: 'tail', id: 'tail', 'aria-label': 'Events, newest first' });
  fill(
    main,
    h('h1', {}, 'Events'),
    h(
      'form',
      { class: 'filters', 'aria-label': 'Filter events' },
      field('Terminal', subject, 'Shows only this terminal’s events'),
      field('Type', kind),
      h('div', { class: 'check' }, paused, h('label', { for: 'ev-paused' }, 'Pause the tail')),
    ),
    h('p', {}, 'New events appear here as they happen.'),
    list,
  );
  const describe = (event: CloudEventView) =>
    isStatusEvent(event)
      ? `${event.data.connected === false ? 'offline' : 'online'} ${event.data.transaction_state ?? ''} ${event.data.screen_message ?? ''}`
      : isSettlementEvent(event)
        ? `end-of-day ${event.data.status} (${event.data.trigger}) ${event.data.total_amount ?? ''} ${event.data.currency ?? ''}`
        : `${(event.data as { external_id?: string }).external_id ?? ''} ${(event.data as { state?: string }).state ?? ''} ${(event.data as { result_code?: string }).result_code ?? ''}`;
  const shown = (event: CloudEventView) =>
    (!subject.value || event.subject === subject.value) &&
    (!kind.value || event.type.endsWith(`.${kind.value}`));
  const item = (event: CloudEventView) =>
    h(
      'li',
      {},
      localTime(event.time),
      ' ',
      h('code', {}, event.type.split('.').pop() ?? event.type),
      ` ${event.subject ?? ''} — ${describe(event)}`,
    );
  // What the feed brought before this visit, newest first, then each new one on top: the
  // feed hands them on in the log's order, so the tail is in it too.
  const redraw = () =>
    fill(list, [...recent()].filter(shown).slice(-TAIL_KEPT).reverse().map(item));
  redraw();
  subject.addEventListener('input', redraw);
  kind.addEventListener('change', redraw);
  paused.addEventListener('change', () => {
    if (!paused.checked) redraw();
  });
  return onEvent((event) => {
    if (paused.checked || !shown(event)) return;
    list.prepend(item(event));
    while (list.children.length > TAIL_KEPT) list.lastElementChild?.remove();
  });
}

export async function webhooksPage(main: HTMLElement): Promise<Cleanup> {
  const url = h('input', { id: 'wh-url', type: 'url', required: true, placeholder: 'https://' });
  const subject = h('input', { id: 'wh-subject', autocomplete: 'off' });
  const message = h('div', { role: 'status' });
  const table = h('div', {});
  const refresh = async () => {
    try {
      const { webhooks } = await api.webhooks();
      fill(table, webhooks.length ? webhookTable(webhooks) : h('p', {}, 'No webhooks.'));
    } catch (error) {
      fill(table, h('p', { role: 'alert' }, errorText(error)));
    }
  };
  const action = (label: string, run: () => Promise<unknown>) => {
    const button = h('button', { type: 'button' }, label);
    button.addEventListener('click', async () => {
      try {
        await run();
        announce(`${label}: done`);
      } catch (error) {
        fill(message, h('p', { role: 'alert' }, errorText(error)));
      }
      await refresh();
    });
    return button;
  };
  const webhookTable = (webhooks: WebhookView[]) =>
    h(
      'table',
      { class: 'list' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Address', 'Subject', 'Enabled', 'Backlog', 'Last error', 'Actions'].map((t) =>
            h('th', { scope: 'col' }, t),
          ),
        ),
      ),
      h(
        'tbody',
        {},
        webhooks.map((w) =>
          h(
            'tr',
            {},
            h('td', {}, w.url),
            h('td', {}, w.filter.subject?.eq ?? 'all'),
            h(
              'td',
              {},
              w.enabled ? 'yes' : `no${w.disabled_reason ? ` (${w.disabled_reason})` : ''}`,
            ),
            h('td', {}, w.backlog),
            h('td', {}, w.last_error ?? '—'),
            h(
              'td',
              {},
              w.enabled
                ? action(`Disable ${w.url}`, () => api.webhookDisable(w.id))
                : action(`Enable ${w.url}`, () => api.webhookEnable(w.id)),
              action(`Delete ${w.url}`, () => api.webhookDelete(w.id)),
            ),
          ),
        ),
      ),
    );
  const form = h(
    'form',
    { 'aria-label': 'Create a webhook' },
    field('Address', url),
    field('Terminal (optional)', subject, 'Only this terminal’s events; empty for all'),
    h('button', { type: 'submit' }, 'Create'),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      const { webhook } = await api.webhookCreate({
        url: url.value,
        ...(subject.value ? { filter: { subject: { eq: subject.value } } } : {}),
      });
      fill(
        message,
        h('p', {}, 'Created. Its signing secret is shown this once:'),
        h('pre', { class: 'secret' }, webhook.secret),
      );
      url.value = '';
    } catch (error) {
      fill(message, h('p', { role: 'alert' }, errorText(error)));
    }
    await refresh();
  });
  fill(
    main,
    h('h1', {}, 'Webhooks'),
    h('section', {}, h('h2', {}, 'Create'), form, message),
    h('section', {}, h('h2', {}, 'Registered'), table),
  );
  await refresh();
  return () => undefined;
}
