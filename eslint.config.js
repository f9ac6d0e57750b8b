import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { boundaryConfigs } from './tools/eslint/boundaries.js';
import { assertMessageRule } from './tools/eslint/assert-message-rule.js';

export default tseslint.config(
  {
    ignores: [
      'node_modules/**',
      '**/fixtures/**',
      'coverage/**',
      'runtime/wire/proto/gen/**',
      'runtime/ha/proto/gen/**',
      'dist/**',
      // Made by npm run build (scripts/build.mjs): compiled output and the server package's copies.
      'packages/*/dist/**',
      'packages/server/{docs,sbin,etc,deploy}/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      eqeqeq: ['error', 'always'],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly' },
    },
  },
  {
    // Tests use node:test's describe/it, which return promises the runner tracks itself.
    files: ['**/*.test.ts'],
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', name: ['describe', 'it', 'test', 'suite'], package: 'node:test' },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.ts'],
    plugins: { 'svc-tests': { rules: { 'assert-message': assertMessageRule } } },
    rules: { 'svc-tests/assert-message': 'error' },
  },
  ...boundaryConfigs,
);
