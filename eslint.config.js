import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import regexp from 'eslint-plugin-regexp';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  regexp.configs['flat/recommended'],
  {
    languageOptions: { globals: globals.node },
    rules: {
      // Linear-time parsing is a security property: no regular expression may backtrack
      // super-linearly on hostile input.
      'regexp/no-super-linear-backtracking': 'error',
      'regexp/no-super-linear-move': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    // Only adapters, the CLI, mailverdict/node and tests touch node's I/O modules (DESIGN.md 1).
    files: ['src/**/*.ts'],
    ignores: ['src/adapters/**', 'src/cli/**', 'src/http/node-server.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            'node:net',
            'node:tls',
            'node:dns',
            'node:dgram',
            'node:fs',
            'node:http',
            'node:https',
            'net',
            'tls',
            'dns',
            'dgram',
            'fs',
            'http',
            'https',
            {
              name: 'better-sqlite3',
              message: 'Native module: only src/adapters may load it (mailverdict/sqlite).',
            },
            {
              name: 'pino',
              message:
                'The library logs through the Logger port (src/ports/logger.ts); only the CLI composes pino.',
            },
          ],
        },
      ],
    },
  },
);
