/**
 * The operator's Releases page (docs/fleet.md, "Releases"): every published agent release,
 * newest first, and a form that publishes an archive chosen from disk. The relay checks the
 * archive whole (signature, manifest, every file); what it refuses is shown with what to do.
 */
import type { ReleaseView } from '../protocol/index.js';
import { ApiFailure, releasesAndRollouts } from './api.js';
import { announce, errorText, field, fill, h } from './dom.js';
import { localTime } from './format.js';
import type { Cleanup } from './terminal-pages.js';

/** What to do about a refused archive, beside the relay's own words. */
const ADVICE: Record<string, string> = {
  RELEASE_INVALID:
    'Choose the tps-agent-VERSION-ARCH.tar.gz that npm run package:agent wrote, as it wrote it.',
  RELEASE_SIGNATURE_INVALID:
    'It is not signed with the key this relay trusts (TPS_RELEASE_PUBLIC_KEY): sign it with the matching private key.',
  RELEASE_EXISTS:
    'A version is published once per architecture, as agents rely on it never changing: publish a new version.',
};

function refusal(error: unknown): string {
  if (!(error instanceof ApiFailure)) return `Not published: ${errorText(error)}`;
  const advice = ADVICE[error.code];
  return `Not published (${error.code}): ${error.message}${advice ? `. ${advice}` : ''}`;
}

const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;

function releaseTable(releases: ReleaseView[]): HTMLElement {
  if (releases.length === 0) return h('p', { id: 'releases' }, 'No release published yet.');
  return h(
    'table',
    // Focusable: on a narrow screen it scrolls sideways, and nothing in it takes focus.
    { class: 'list', id: 'releases', tabindex: 0 },
    h('caption', { class: 'visually-hidden' }, 'Published releases, newest first'),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ['Version', 'Architecture', 'Files', 'Size', 'SHA-256', 'Published'].map((t) =>
          h('th', { scope: 'col' }, t),
        ),
      ),
    ),
    h(
      'tbody',
      {},
      releases.map((release) =>
        h(
          'tr',
          { 'data-release': `${release.version}/${release.arch}` },
          h('td', {}, release.version),
          h('td', {}, release.arch),
          h('td', {}, release.files),
          h('td', {}, kib(release.archive_size)),
          h('td', { class: 'digest' }, h('code', {}, release.archive_sha256)),
          h('td', {}, localTime(release.published_at)),
        ),
      ),
    ),
  );
}

export async function releasesPage(main: HTMLElement): Promise<Cleanup> {
  const list = h('div', {});
  const read = async () => fill(list, releaseTable((await releasesAndRollouts.list()).releases));

  const archive = h('input', {
    id: 'release-archive',
    type: 'file',
    accept: '.tar.gz,.tgz,application/gzip',
    required: true,
  });
  const problem = h('div', { id: 'publish-problem' });
  const done = h('p', { id: 'publish-done', role: 'status' });
  const submit = h('button', { type: 'submit' }, 'Publish');
  const form = h(
    'form',
    { 'aria-label': 'Publish a release' },
    field(
      'Release archive',
      archive,
      'tps-agent-VERSION-ARCH.tar.gz, as npm run package:agent writes it and signs it',
    ),
    problem,
    submit,
    done,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    fill(problem);
    done.textContent = '';
    const file = archive.files?.[0];
    if (!file) {
      fill(problem, h('p', { role: 'alert' }, 'Choose a release archive first.'));
      return;
    }
    submit.disabled = true;
    done.textContent = `Sending ${file.name}…`;
    try {
      const { release } = await releasesAndRollouts.publish(file);
      done.textContent = `Published ${release.version} for ${release.arch}: ${release.files} files, ${release.archive_size} bytes.`;
      form.reset();
      await read().catch(() => undefined);
      announce(done.textContent);
    } catch (error) {
      done.textContent = '';
      fill(problem, h('p', { role: 'alert' }, refusal(error)));
      archive.focus();
    } finally {
      submit.disabled = false;
    }
  });

  await read();
  fill(
    main,
    h('h1', {}, 'Releases'),
    h(
      'p',
      {},
      'Agent releases, relay-wide: a rollout brings one to a cohort of a merchant’s terminals. ',
      h('a', { href: '#/rollouts' }, 'Rollouts'),
    ),
    h(
      'section',
      { 'aria-labelledby': 'publish-title' },
      h('h2', { id: 'publish-title' }, 'Publish'),
      form,
    ),
    h(
      'section',
      { 'aria-labelledby': 'published-title' },
      h('h2', { id: 'published-title' }, 'Published'),
      list,
    ),
  );
  return () => undefined;
}
