/**
 * The documentation as a newcomer walks it: every relative link of README.md and docs/
 * leads to a file that exists, and every page of docs/ can be reached from README.md.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..');
/** Markdown links `[text](target)`, without those in code spans or blocks. */
function linksOf(file: string): string[] {
  const text = fs
    .readFileSync(file, 'utf8')
    .replace(/```[\s\S]*?```/g, '')
    .replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
}

const relative = (target: string) => !/^[a-z]+:/i.test(target) && !target.startsWith('#');

describe('documentation links', () => {
  const pages = [
    path.join(ROOT, 'README.md'),
    ...fs
      .readdirSync(path.join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => path.join(ROOT, 'docs', f)),
  ];

  it('every relative link leads to a file that exists', () => {
    const broken = pages.flatMap((page) =>
      linksOf(page)
        .filter(relative)
        .map((target) => target.split('#')[0]!)
        .filter(
          (target) => target !== '' && !fs.existsSync(path.resolve(path.dirname(page), target)),
        )
        .map((target) => `${path.relative(ROOT, page)} → ${target}`),
    );
    expect(broken).toEqual([]);
  });

  it('every docs page can be reached from README.md', () => {
    const reached = new Set<string>();
    const queue = [path.join(ROOT, 'README.md')];
    while (queue.length > 0) {
      const page = queue.pop()!;
      if (reached.has(page)) continue;
      reached.add(page);
      for (const target of linksOf(page).filter(relative)) {
        const file = path.resolve(path.dirname(page), target.split('#')[0]!);
        if (file.endsWith('.md') && fs.existsSync(file)) queue.push(file);
      }
    }
    const unreached = pages.filter((page) => !reached.has(page)).map((p) => path.relative(ROOT, p));
    expect(unreached).toEqual([]);
  });
});
