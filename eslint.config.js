// @ts-check
import js from '@eslint/js';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import importX from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

/** Import directions of docs/architecture.md: each folder lists what it may not reach. */
const forbidden = {
  common: ['protocol', 'firmware-bridge', 'agent', 'cloud', 'client', 'test'],
  protocol: ['firmware-bridge', 'agent', 'cloud', 'client', 'test'],
  'firmware-bridge': ['agent', 'cloud', 'client', 'test'],
  agent: ['cloud', 'client', 'test'],
  cloud: ['agent', 'firmware-bridge', 'client', 'test'],
  client: ['agent', 'firmware-bridge', 'cloud', 'test'],
  // The browser's code: the API's shapes (as types) and nothing of the server.
  console: ['common', 'firmware-bridge', 'agent', 'cloud', 'client', 'test', 'bin'],
  // The release builder: bundles the agent by path, imports only the release's contract.
  packaging: ['firmware-bridge', 'agent', 'cloud', 'client', 'test'],
};

const directionRules = Object.entries(forbidden).map(([folder, banned]) => ({
  files: [`${folder}/**/*.ts`],
  ignores: folder === 'cloud' ? ['cloud/simulator/**/*.ts'] : [],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: banned.map((name) => ({
          group: [`**/${name}/**`, `../${name}`, `../../${name}`],
          message: `${folder}/ may not import ${name}/ (see docs/architecture.md: import directions).`,
        })),
      },
    ],
  },
}));

/**
 * Test code never ships: it lives in `*.test.ts`, `*.contract.ts` (a suite run against
 * every implementation of a port) or a `testing/` folder, which the build leaves out, and
 * no other file may import it or vitest.
 */
const testCode = [
  '**/*.test.ts',
  '**/*.contract.ts',
  '**/testing/**',
  'test/**',
  'vitest.config.ts',
];
const testCodeRule = {
  files: ['**/*.ts'],
  ignores: testCode,
  rules: {
    // Its own rule name, so that it adds to the import directions instead of replacing them.
    '@typescript-eslint/no-restricted-imports': [
      'error',
      {
        patterns: [
          {
            group: ['vitest', 'vitest/*'],
            message: 'vitest only in test code (*.test.ts, *.contract.ts, testing/).',
          },
          {
            group: ['**/testing/**', './testing/*', '**/*.contract', '**/*.contract.js'],
            message:
              'test code (testing/, *.contract.ts) is left out of the build: import it from tests only.',
          },
        ],
      },
    ],
  },
};

/**
 * No import circles, type imports counted: a circle of types still ties the files' designs
 * together, and one value import turns it into a load-order bug. import-x's no-cycle skips
 * `import type` by design, so this wraps it: the linted file's imports and the modules it
 * reads (through languageOptions.parser) all look like value imports to it.
 */
const asValueImport = (node) =>
  node.type === 'ImportDeclaration'
    ? {
        ...node,
        importKind: 'value',
        specifiers: node.specifiers.map((s) => ({ ...s, importKind: 'value' })),
      }
    : node;
const typesAsValues = {
  meta: { name: 'typescript-eslint-parser-types-as-values' },
  parseForESLint(code, options) {
    const parsed = tseslint.parser.parseForESLint(code, options);
    for (const node of parsed.ast.body) {
      if (node.type === 'ImportDeclaration') {
        node.importKind = 'value';
        for (const specifier of node.specifiers) specifier.importKind = 'value';
      } else if (node.type === 'ExportNamedDeclaration' || node.type === 'ExportAllDeclaration') {
        node.exportKind = 'value';
        for (const specifier of node.specifiers ?? []) specifier.exportKind = 'value';
      }
    }
    return parsed;
  },
};
const noCycleCountingTypes = {
  meta: importX.rules['no-cycle'].meta,
  create(context) {
    const counting = Object.create(context, {
      languageOptions: { value: { ...context.languageOptions, parser: typesAsValues } },
    });
    const visitors = importX.rules['no-cycle'].create(counting);
    return Object.fromEntries(
      Object.entries(visitors).map(([key, visit]) => [key, (node) => visit(asValueImport(node))]),
    );
  },
};
const cycleRule = {
  files: ['**/*.ts'],
  plugins: { project: { rules: { 'no-cycle': noCycleCountingTypes } } },
  settings: {
    // What import-x's TypeScript preset sets, but its parser: ours must read the modules.
    'import-x/extensions': ['.ts', '.js'],
    'import-x/external-module-folders': ['node_modules', 'node_modules/@types'],
    'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })],
  },
  // Packages cannot lead back into the project: not read at all.
  rules: { 'project/no-cycle': ['error', { ignoreExternal: true }] },
};

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', 'data/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      // `_`-prefixed names mark what a destructuring leaves out on purpose.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  ...directionRules,
  testCodeRule,
  cycleRule,
);
