/**
 * The operator's page (docs/tenants.md): merchant accounts, created with their credential
 * shown once, disabled and enabled again. No other role sees it.
 */
import type { AccountView } from '../protocol/index.js';
import { api } from './api.js';
import { announce, errorText, field, fill, h } from './dom.js';
import { localTime } from './format.js';
import type { Cleanup } from './terminal-pages.js';

export async function accountsPage(main: HTMLElement): Promise<Cleanup> {
  const name = h('input', { id: 'acct-name', required: true, maxlength: 64, autocomplete: 'off' });
  const created = h('div', { role: 'status' });
  const message = h('div', {});
  const table = h('div', {});
  const refresh = async () => {
    const { accounts } = await api.accounts();
    fill(table, accountTable(accounts));
  };
  const toggle = (account: AccountView) => {
    const disable = account.disabled_at === undefined;
    const button = h(
      'button',
      { type: 'button' },
      disable
        ? `Disable ${account.name ?? account.account_id}`
        : `Enable ${account.name ?? account.account_id}`,
    );
    button.addEventListener('click', async () => {
      try {
        await api.accountSet(account.account_id, disable);
        announce(`${account.name ?? account.account_id} ${disable ? 'disabled' : 'enabled'}`);
        await refresh();
      } catch (error) {
        fill(message, h('p', { role: 'alert' }, errorText(error)));
      }
    });
    return button;
  };
  const accountTable = (accounts: AccountView[]) =>
    h(
      'table',
      { class: 'list', id: 'accounts' },
      h('caption', { class: 'visually-hidden' }, 'Accounts'),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Account', 'Name', 'Kind', 'Created', 'State', ''].map((t) =>
            h('th', { scope: 'col' }, t),
          ),
        ),
      ),
      h(
        'tbody',
        {},
        accounts.map((account) =>
          h(
            'tr',
            { 'data-account': account.account_id },
            h('td', {}, h('code', {}, account.account_id)),
            h('td', {}, account.name ?? '—'),
            h('td', {}, account.kind),
            h('td', {}, localTime(account.created_at)),
            h(
              'td',
              {},
              account.disabled_at === undefined
                ? 'enabled'
                : ['disabled since ', localTime(account.disabled_at)],
            ),
            h('td', {}, account.kind === 'merchant' ? toggle(account) : null),
          ),
        ),
      ),
    );
  const form = h(
    'form',
    { class: 'filters', 'aria-label': 'Create a merchant account' },
    field('Name', name, 'What people call the merchant: 1-64 printable ASCII characters'),
    h('button', { type: 'submit' }, 'Create'),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      const answer = await api.accountCreate(name.value.trim());
      name.value = '';
      fill(
        created,
        h(
          'p',
          {},
          `Created ${answer.account.name ?? ''}. Its account credential is shown this once:`,
        ),
        h(
          'pre',
          { class: 'secret' },
          `account_id ${answer.account.account_id}\nusername   ${answer.credential.username}\npassword   ${answer.credential.password}`,
        ),
      );
      await refresh();
    } catch (error) {
      fill(created, h('p', { role: 'alert' }, errorText(error)));
    }
  });
  fill(main, h('h1', {}, 'Accounts'), form, created, message, table);
  await refresh();
  return () => undefined;
}
