// The tag's types as the templates' own checkers read them, on the packed package:
// vue-tsc checks docs/frameworks.md's Vue snippets as written (the tag in Vue's
// `GlobalComponents`, from `blackbox-capture/vue`), svelte-check its Svelte ones (the tag in
// `svelteHTML.IntrinsicElements`, from `blackbox-capture/element`); each refuses an attribute
// value the element does not take. tsc alone (element-types.test.ts) reads no template.
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { snippet } from '../support/readme.js';
import { installPackedTarball, ROOT } from '../support/tarball.js';

let app: string;

const TSCONFIG = {
  compilerOptions: {
    strict: true,
    target: 'es2022',
    module: 'esnext',
    moduleResolution: 'bundler',
    lib: ['es2022', 'dom', 'dom.iterable'],
    noEmit: true,
    skipLibCheck: true,
    types: [],
  },
};

function write(folder: string, file: string, text: string) {
  mkdirSync(dirname(join(app, folder, file)), { recursive: true });
  writeFileSync(join(app, folder, file), text);
}

/** A project folder of the app: its tsconfig and files. */
function project(folder: string, files: Record<string, string>, include: string[]) {
  write(folder, 'tsconfig.json', JSON.stringify({ ...TSCONFIG, include }));
  for (const [file, text] of Object.entries(files)) write(folder, file, text);
  return join(app, folder);
}

/**
 * Runs a checker's command with Node in `cwd`; its whole output, without colours, and status.
 * (Under CI=true svelte-check colours its output, whatever the stream.)
 */
function run(bin: string, args: string[], cwd: string) {
  const result = spawnSync(process.execPath, [join(ROOT, 'node_modules', bin), ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
  });
  // eslint-disable-next-line no-control-regex -- the colour codes a checker may still write
  const output = (result.stdout + result.stderr).replace(/\u001b\[[0-9;]*m/g, '');
  return { status: result.status, output };
}

const vueTsc = (cwd: string) => run('vue-tsc/bin/vue-tsc.js', ['--noEmit', '-p', 'tsconfig.json'], cwd);
const svelteCheck = (cwd: string) =>
  run('svelte-check/bin/svelte-check', ['--workspace', cwd, '--tsconfig', './tsconfig.json', '--output', 'human'], cwd);

beforeAll(() => {
  app = installPackedTarball('template-types-').dir;
  for (const name of ['vue', 'svelte', 'typescript']) {
    mkdirSync(dirname(join(app, 'node_modules', name)), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules', name), join(app, 'node_modules', name));
  }
  write('.', 'package.json', JSON.stringify({ name: 'shop', private: true, type: 'module' }));
});

afterAll(() => rmSync(app, { recursive: true, force: true }));

// The line docs/frameworks.md gives a project that uses the element alone in Vue templates.
const VUE_DECLARATION = "import type {} from 'blackbox-capture/vue';\n";

// What each checker must refuse, in a file of its own beside the snippets: one run a checker
// reads both (each run takes seconds), and each file's lines are told apart by its name.
const VUE_REFUSED = `<script setup lang="ts">
import 'blackbox-capture/element';
function took(count: number) {
  return count;
}
</script>

<template>
  <blackbox-capture loader-url="/l.js" consent="yes" @blackbox="took" />
</template>
`;
const SVELTE_TAG = `<script lang="ts">
  import 'blackbox-capture/element';

  let outcome = $state('');
</script>

<blackbox-capture
  name="blackbox"
  loader-url="/static/vendor/loader.js"
  post-url="/device-risk"
  checkout-id="cart-1"
  max-wait-ms="3000"
  consent="tcf:1234"
  onblackboxoutcome={(event) => (outcome = event.detail.outcome)}
></blackbox-capture>
<p>{outcome}</p>
`;
const SVELTE_REFUSED = `<script lang="ts">
  import 'blackbox-capture/element';
</script>

<blackbox-capture loader-url="/l.js" consent="yes"></blackbox-capture>
<blackbox-capture name="blackbox"></blackbox-capture>
`;

describe('vue-tsc', () => {
  let output = '';
  let status: number | null = null;
  beforeAll(() => {
    const cwd = project(
      'vue',
      {
        'src/env.d.ts': VUE_DECLARATION,
        'src/Checkout.vue': snippet('vue-checkout').code,
        'src/DeviceCheck.vue': snippet('vue-composable').code,
        'src/Refused.vue': VUE_REFUSED,
      },
      ['src/**/*.ts', 'src/**/*.vue'],
    );
    ({ output, status } = vueTsc(cwd));
  });

  it("checks 'vue-checkout' (v-model, attributes) and 'vue-composable' as written", () => {
    expect(output.match(/^src\/(?!Refused\.vue)\S+\(\d+,\d+\): error.*$/gm) ?? []).toEqual([]);
  });

  it('refuses a consent value the element does not take, and an event handler of the wrong type', () => {
    expect(status).not.toBe(0);
    expect(output).toMatch(/Refused\.vue\(9,\d+\): error TS\d+:[^\n]*"yes"/);
    expect(output).toMatch(/Refused\.vue\(9,\d+\): error TS\d+:[^\n]*number/);
  });
});

/**
 * SvelteKit's `$app/forms`, which the store's snippet imports, as @sveltejs/kit 3.2 types it
 * (`enhance` and its `SubmitFunction`, abridged): SvelteKit itself is not installed here; the
 * snippet runs in its real build in test/package/sveltekit.test.ts.
 */
const SVELTEKIT_FORMS = `declare module '$app/forms' {
  type MaybePromise<T> = T | Promise<T>;
  type ActionResult = { type: 'success' | 'failure' | 'redirect' | 'error'; status?: number };
  export type SubmitFunction = (input: {
    action: URL;
    formData: FormData;
    formElement: HTMLFormElement;
    controller: AbortController;
    submitter: HTMLElement | null;
    cancel: () => void;
  }) => MaybePromise<
    void | ((opts: { formData: FormData; formElement: HTMLFormElement; action: URL; result: ActionResult; update: () => Promise<void> }) => MaybePromise<void>)
  >;
  export function enhance(form: HTMLFormElement, submit?: SubmitFunction): { destroy(): void };
}
`;

describe('svelte-check', () => {
  let output = '';
  let status: number | null = null;
  beforeAll(() => {
    const cwd = project(
      'svelte',
      {
        'src/DeviceCheck.svelte': snippet('svelte-store').code,
        'src/app-forms.d.ts': SVELTEKIT_FORMS,
        'src/Checkout.svelte': SVELTE_TAG,
        'src/Refused.svelte': SVELTE_REFUSED,
      },
      ['src/**/*.ts', 'src/**/*.svelte'],
    );
    ({ output, status } = svelteCheck(cwd));
  });

  it("checks 'svelte-store' and the element's attributes and events as written", () => {
    expect(output).toMatch(/svelte-check found 2 errors and 0 warnings in 1 file/);
    expect(output.match(/^\S+\/src\/(?!Refused\.svelte)\S+:\d+:\d+$/gm) ?? []).toEqual([]);
  });

  it('refuses a consent value the element does not take, and the tag without its loader-url', () => {
    expect(status).not.toBe(0);
    expect(output).toMatch(/Refused\.svelte:5:\d+\n[^\n]*"yes"/);
    expect(output).toMatch(/Refused\.svelte:6:\d+\n[^\n]*'{ name: string; }'[^\n]*BlackboxCaptureAttributes/);
  });
});
