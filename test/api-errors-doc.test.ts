/**
 * docs/errors.md documents the error catalogue: one table row per code of ERROR_CATALOGUE
 * with its HTTP status, no row for a code that does not exist, and the advice on how
 * clients react.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE } from '../protocol/index.js';

const DOC = fileURLToPath(new URL('../docs/errors.md', import.meta.url));

interface Row {
  code: string;
  status: number;
  meaning: string;
  when: string;
}

/** The rows of the table whose header is `| CODE | HTTP status | meaning | when |`. */
function parseTable(markdown: string): Row[] {
  const lines = markdown.split('\n');
  const cells = (line: string) =>
    line
      .trim()
      .replace(/^\|/, '')
      .replace(/\|$/, '')
      .split('|')
      .map((cell) => cell.trim());
  const header = lines.findIndex((line) => {
    const c = cells(line).map((cell) => cell.toLowerCase());
    return line.trim().startsWith('|') && c[0] === 'code' && c[1] === 'http status';
  });
  if (header < 0)
    throw new Error('no table with the header | CODE | HTTP status | meaning | when |');
  expect(cells(lines[header]!).map((c) => c.toLowerCase())).toEqual([
    'code',
    'http status',
    'meaning',
    'when',
  ]);
  expect(lines[header + 1]).toMatch(/^\|[\s:|-]+\|$/);
  const rows: Row[] = [];
  for (const line of lines.slice(header + 2)) {
    if (!line.trim().startsWith('|')) break;
    const [code = '', status = '', meaning = '', when = '', ...rest] = cells(line);
    expect(rest, `extra cells in: ${line}`).toEqual([]);
    rows.push({ code: code.replace(/`/g, ''), status: Number(status), meaning, when });
  }
  return rows;
}

describe('docs/errors.md', () => {
  const markdown = fs.readFileSync(DOC, 'utf8');
  const rows = parseTable(markdown);

  it('has one row per code, each code once', () => {
    const codes = rows.map((row) => row.code);
    expect(new Set(codes).size).toBe(codes.length);
    expect([...codes].sort()).toEqual(Object.keys(ERROR_CATALOGUE).sort());
  });

  it('gives every code the HTTP status of the catalogue', () => {
    const documented = Object.fromEntries(rows.map((row) => [row.code, row.status]));
    const catalogue = Object.fromEntries(
      Object.entries(ERROR_CATALOGUE).map(([code, entry]) => [code, entry.status]),
    );
    expect(documented).toEqual(catalogue);
  });

  it('says for every code what it means and what produces it', () => {
    for (const row of rows) {
      expect(row.meaning.length, `${row.code} meaning`).toBeGreaterThan(10);
      expect(row.when.length, `${row.code} when`).toBeGreaterThan(20);
    }
  });

  it('tells clients how to react: retry only 5xx and network errors, never branch on description', () => {
    const advice = markdown.slice(markdown.search(/^## How a client should react/m));
    expect(advice).toMatch(/^## How a client should react/);
    expect(advice).toMatch(/retry only 5xx/i);
    expect(advice).toMatch(/network errors/i);
    expect(advice).toMatch(/never on `description`/i);
  });
});
