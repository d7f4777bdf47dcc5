// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Import directions of the architecture brief: each folder lists what it may not reach. */
const forbidden = {
  protocol: ['firmware-bridge', 'agent', 'cloud', 'client', 'test'],
  'firmware-bridge': ['agent', 'cloud', 'client', 'test'],
  agent: ['cloud', 'client', 'test'],
  cloud: ['agent', 'firmware-bridge', 'client', 'test'],
  client: ['agent', 'firmware-bridge', 'cloud', 'test'],
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
          message: `${folder}/ may not import ${name}/ (see ARCHITECTURE: import directions).`,
        })),
      },
    ],
  },
}));

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
);
