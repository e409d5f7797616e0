/**
 * The code snippets of the README, CONTRIBUTING.md and docs/*.md, as written. Every fenced
 * block stands right after a `<!-- snippet: NAME -->` marker, and RUN_BY names the test that
 * runs it; the meta test in test/docs/readme.test.ts holds all of them to that, so that the docs
 * and the code cannot drift apart unseen. A block after `<!-- picture -->` is a drawing, not code.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';

export interface Snippet {
  name: string;
  lang: string;
  code: string;
  /** The document, relative to the package root, e.g. `docs/server.md`. */
  file: string;
  line: number;
}

const ROOT = new URL('../../', import.meta.url);

/** The documents whose snippets are tested: the README, CONTRIBUTING.md and every docs/*.md. */
export function documents(): string[] {
  const docs = readdirSync(new URL('docs/', ROOT))
    .filter((name) => name.endsWith('.md'))
    .sort();
  return ['README.md', 'CONTRIBUTING.md', ...docs.map((name) => `docs/${name}`)];
}

/** Every fenced block but drawings, with the marker before it (name '' when there is none). */
export function readmeBlocks(): Snippet[] {
  const blocks: Snippet[] = [];
  for (const file of documents()) {
    const lines = readFileSync(new URL(file, ROOT), 'utf8').split('\n');
    for (let i = 0; i < lines.length; i++) {
      const open = /^```(\S*)\s*$/.exec(lines[i]!);
      if (!open) continue;
      const end = lines.indexOf('```', i + 1);
      const before = (lines[i - 1] === '' ? lines[i - 2] : lines[i - 1]) ?? '';
      const marker = /^<!-- snippet: ([\w-]+) -->$/.exec(before);
      if (before !== '<!-- picture -->')
        blocks.push({
          name: marker?.[1] ?? '',
          lang: open[1]!,
          code: lines.slice(i + 1, end).join('\n') + '\n',
          file,
          line: i + 1,
        });
      i = end;
    }
  }
  return blocks;
}

export function snippet(name: string): Snippet {
  const found = readmeBlocks().find((block) => block.name === name);
  if (!found) throw new Error(`no document has a snippet "${name}"`);
  return found;
}

/** The file a snippet is, from its first line: `// device-risk.ts: …`, `// app/x/route.ts (…)`, `// server.mjs: …`. */
export function fileOf(block: Snippet): string {
  const match = /^\/\/ ([\w./[\]-]+\.(?:tsx|ts|mjs))\b/.exec(block.code);
  if (!match) throw new Error(`snippet "${block.name}" does not start with a "// file.ts" comment`);
  return match[1]!;
}

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens. */
export const slug = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

/**
 * The relative links of `files` (Markdown, relative to `root`) that name no file under `root`,
 * or a heading their Markdown target lacks: `root` is the checkout, or the packed package.
 */
export function brokenLinks(root: string, files: string[]): string[] {
  const prose = (file: string) => readFileSync(join(root, file), 'utf8').replace(/```[\s\S]*?```/g, '');
  const anchors = new Map<string, Set<string>>();
  const anchorsOf = (file: string) => {
    if (!anchors.has(file))
      anchors.set(file, new Set([...prose(file).matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!))));
    return anchors.get(file)!;
  };
  const broken: string[] = [];
  for (const file of files) {
    for (const [, target] of prose(file).matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue; // https:, mailto:
      const [path, hash] = target!.split('#') as [string, string | undefined];
      const resolved = path ? normalize(join(dirname(file), path)) : file;
      if (resolved.startsWith('..') || !existsSync(join(root, resolved)))
        broken.push(`${file}: ${target} (no such file)`);
      else if (hash !== undefined && resolved.endsWith('.md') && !anchorsOf(resolved).has(hash))
        broken.push(`${file}: ${target} (no such heading)`);
    }
  }
  return broken;
}

/** Which test runs each snippet. */
export const RUN_BY: Record<string, string> = {
  'two-commands': 'test/package/demo-command.test.ts',
  'quick-start-script-tag': 'e2e/readme.spec.ts',
  'quick-start-npm': 'e2e/readme.spec.ts',
  'quick-start-lean': 'e2e/readme.spec.ts',
  'consent-tcf': 'e2e/readme.spec.ts',
  'quick-start-element': 'e2e/readme.spec.ts',
  'react-hook': 'engines/react.test.ts',
  'vue-vite-config': 'test/package/vue.test.ts',
  'vue-checkout': 'test/package/vue.test.ts',
  'vue-composable': 'test/package/vue.test.ts',
  'nuxt-checkout': 'test/package/nuxt.test.ts',
  'sveltekit-checkout': 'test/package/sveltekit.test.ts',
  'sveltekit-action': 'test/package/sveltekit.test.ts',
  'svelte-store': 'test/package/sveltekit.test.ts',
  'sveltekit-vite-config': 'test/package/sveltekit.test.ts',
  'preload-hint': 'e2e/readme.spec.ts',
  'adopt-mode': 'e2e/readme.spec.ts',
  'server-setup': 'test/docs/readme.test.ts',
  'server-node-http': 'test/docs/readme.test.ts',
  'server-express': 'test/docs/readme.test.ts',
  'server-hono': 'test/docs/readme.test.ts',
  'server-deno': 'runtimes/runtimes.test.ts',
  'server-bun': 'runtimes/runtimes.test.ts',
  'server-fastify': 'test/docs/readme-frameworks.test.ts',
  'server-nuxt-caller': 'test/docs/readme-frameworks.test.ts',
  'server-nuxt': 'test/docs/readme-frameworks.test.ts',
  'server-nuxt-callback': 'test/docs/readme-frameworks.test.ts',
  'server-nuxt-proxy': 'test/docs/readme-frameworks.test.ts',
  'local-dev-commands': 'test/package/local-dev.test.ts',
  'local-dev-server': 'test/package/local-dev.test.ts',
  'server-nextjs-setup': 'test/package/nextjs.test.ts',
  'server-nextjs': 'test/package/nextjs.test.ts',
  'server-nextjs-callback': 'test/package/nextjs.test.ts',
  'server-nextjs-proxy': 'test/package/nextjs.test.ts',
  'frameworks-next-checkout': 'test/package/nextjs.test.ts',
  'frameworks-next-page': 'test/package/nextjs.test.ts',
  'frameworks-next-cart': 'test/package/nextjs.test.ts',
  'frameworks-angular-checkout': 'test/package/angular.test.ts',
  'frameworks-angular-element': 'test/package/angular.test.ts',
  'turbo-checkout': 'test/package/navigation.test.ts',
  'htmx-cart': 'test/package/navigation.test.ts',
  'react-router-cart': 'test/package/navigation.test.ts',
  'astro-cart': 'test/package/navigation.test.ts',
  'server-workers': 'test/package/workerd.test.ts',
  'server-callbacks': 'test/docs/readme.test.ts',
  'server-fleet': 'test/docs/readme.test.ts',
  'nginx-excerpt': 'test/docs/readme.test.ts',
  'nginx-njs': 'test/docs/readme.test.ts',
  emulator: 'test/docs/readme.test.ts',
  'conformance-command': 'e2e/conformance.spec.ts',
  'doctor-command': 'test/package/doctor.test.ts',
  'gateway-serve': 'test/package/gateway.test.ts',
  'gateway-webhook-body': 'test/gateway/webhook.test.ts',
  'gateway-failure-body': 'test/gateway/webhook.test.ts',
  layout: 'test/docs/readme.test.ts',
  'gateway-php': 'test/docs/gateway-backends.test.ts',
  'gateway-python': 'test/docs/gateway-backends.test.ts',
  'gateway-go': 'test/docs/gateway-backends.test.ts',
  'gateway-java': 'test/docs/gateway-backends.test.ts',
  'gateway-ruby': 'test/docs/gateway-backends.test.ts',
  'gateway-caddyfile': 'test/docs/gateway-fronts.test.ts',
  'deploy-container-build': 'test/deploy/container.test.ts',
};
