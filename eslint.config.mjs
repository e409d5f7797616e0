// Lint: typescript-eslint with type information. The rules that matter most in code this
// asynchronous: no promise left floating or passed where a callback's result is ignored.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/** `any` and its unsafe uses: checked in the sources, allowed where code reads untyped input. */
const UNTYPED_INPUT = {
  '@typescript-eslint/no-explicit-any': 'off',
  '@typescript-eslint/no-unsafe-argument': 'off',
  '@typescript-eslint/no-unsafe-assignment': 'off',
  '@typescript-eslint/no-unsafe-call': 'off',
  '@typescript-eslint/no-unsafe-member-access': 'off',
  '@typescript-eslint/no-unsafe-return': 'off',
};

export default tseslint.config(
  {
    ignores: [
      'dist/',
      '.build/',
      '.scratch/',
      '.demo/',
      '.stryker-tmp/',
      'reports/',
      'test-results/',
      'playwright-report/',
      'bench-results/',
      'demo/pages/',
      'diagnose/',
      'element/',
      'emulator/',
      'react/',
      'server/',
      'tcf/',
      'umd/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      'no-sequences': 'error',
      'no-cond-assign': ['error', 'always'],
      '@typescript-eslint/no-unused-expressions': 'error',
      // An async function that never awaits still turns a throw into a rejection: the stores use that.
      '@typescript-eslint/require-await': 'off',
      // A handler made before the value it reads (a lazy closure) is assigned once, later.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // A leading underscore marks a parameter kept for the signature (a production twin's no-op).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // An abort rejects with the signal's reason, whatever the caller put there.
      '@typescript-eslint/prefer-promise-reject-errors': [
        'error',
        { allowThrowingAny: true, allowThrowingUnknown: true },
      ],
      // The browser core throws errors whose message the lazy messages chunk writes, and the
      // delivery chunk a DeliveryFailure that the core turns into one.
      '@typescript-eslint/only-throw-error': [
        'error',
        { allow: [{ from: 'file', name: 'DeliveryFailure' }], allowThrowingUnknown: true },
      ],
    },
  },
  {
    // Option validation: a value is `any` until its rule has passed it; the rules are its types.
    // The emulator's conformance checks read the loader's globals in the page.
    files: [
      'src/browser/options.ts',
      'src/browser/options.production.ts',
      'src/browser/rules.ts',
      'src/emulator/conformance.ts',
    ],
    rules: UNTYPED_INPUT,
  },
  {
    // Tests, browser specs, scripts and benchmarks poke at untyped globals and fixtures; the
    // rules about promises, sequences and assignments hold there too.
    files: ['test/**', 'e2e/**', 'engines/**', 'runtimes/**', 'scripts/**', 'bench/**', 'demo/**', '*.config.*'],
    rules: {
      ...UNTYPED_INPUT,
      '@typescript-eslint/unbound-method': 'off',
      // Playwright reads a fixture's dependencies from its first parameter: `async ({}, use)`.
      'no-empty-pattern': 'off',
      // `import('../dist/x.js' as string)` keeps tsc from resolving a file the build writes.
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
    },
  },
  {
    // Plain JavaScript (scripts, benchmarks, configuration) is outside the TypeScript project.
    files: ['**/*.mjs', '**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { ...tseslint.configs.disableTypeChecked.languageOptions, globals: { ...globals.node } },
  },
);
