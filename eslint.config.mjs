// Lint: typescript-eslint with type information. The rules that matter most in code this
// asynchronous: no promise left floating or passed where a callback's result is ignored.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

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
    },
  },
);
