/**
 * Docs promise only what the code does (#67): each promise about behaviour listed here names
 * the test that covers it, and a promise taken out because no code kept it must not come back.
 * A new promise in docs/ about refusing, retrying or guarding something gets its line here,
 * with its test, in the change that makes it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('../../', import.meta.url).pathname;
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
/** Prose with its line breaks and indents as single spaces: a claim may wrap anywhere. */
const flat = (text: string) => text.replace(/\s+/g, ' ');

/** A behaviour a document promises, and the test (file and title) that holds the code to it. */
interface Claim {
  doc: string;
  says: string;
  test: { file: string; title: string };
}

const CLAIMS: Claim[] = [
  {
    doc: 'docs/browser.md',
    says: "`capturedAt`, when the page run's blackbox became final",
    test: {
      file: 'test/browser/post.test.ts',
      title: "capturedAt is when the run's blackbox became final, not when it is sent: a later delivery tells its age",
    },
  },
  {
    doc: 'docs/browser.md',
    says: 'the server kit does not read it',
    test: { file: 'test/docs/claims.test.ts', title: 'no server code reads capturedAt' },
  },
  {
    doc: 'docs/browser.md',
    says: '[capture nonce](server.md#replay-protection-defence-in-depth) (`nonce_reused`)',
    test: {
      file: 'test/server/endpoint/nonce-claim.test.ts',
      title: 'claimed once: the same key again goes on, another key is 409 nonce_reused',
    },
  },
  {
    doc: 'docs/answer.md',
    says: '**Another key with a blackbox already used is answered 422 `blackbox_reused`**',
    test: {
      file: 'test/server/endpoint/reuse.stubs.test.ts',
      title: 'the first key claims it; the same key again goes on; another key is 422 blackbox_reused, told',
    },
  },
  {
    doc: 'docs/answer.md',
    says: "from its first failure for as long as half the life of its `Idempotency-Key`'s record",
    test: {
      file: 'test/server/endpoint/queued.stubs.test.ts',
      title:
        'onResult failing for half of idempotencyTtlMs since it first failed: the order is told result_undelivered once, its decision not read again',
    },
  },
  {
    doc: 'docs/gateway.md',
    says: "the outbox store's failures (`outbox: …`, at most one line per code each 10 s",
    test: {
      file: 'test/gateway/outbox.test.ts',
      title: 'a store that refuses every mark: one line per code each 10 s, and one mark tried per pump',
    },
  },
  {
    doc: 'docs/answer.md',
    says: 'the record is marked failed once it resolves, and given up again on a later try if it rejects',
    test: {
      file: 'test/server/callbacks/delivery.test.ts',
      title:
        'a give-up whose telling onError could not keep (its promise rejects): still pending, given up again next try',
    },
  },
];

/** Promises taken out because no code kept them, and why: none may come back in docs/ or the README. */
const REMOVED: Array<{ pattern: RegExp; why: string }> = [
  {
    pattern: /capturedAt[^.]*\b(?:server|endpoint|gateway)\b[^.]*\b(?:refuse|reject)s?\b/i,
    why: 'no server code reads capturedAt, and a client clock is no guard: the capture nonce and the blackbox claim are',
  },
  {
    pattern: /\b(?:refuse|reject)s? an old or reused\b/i,
    why: 'the server kit checks no blackbox age from the page (capturedAt is for logs)',
  },
];

const documents = () => [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((file) => file.endsWith('.md'))
    .map((file) => `docs/${file}`),
];

/** The files of `dir` and below, relative to the repository. */
function walk(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? walk(`${dir}/${entry.name}`) : [`${dir}/${entry.name}`],
  );
}

describe('the claims of docs/', () => {
  it.each(CLAIMS)('$doc: "$says" is still written, and its test exists', ({ doc, says, test }) => {
    expect(flat(read(doc))).toContain(flat(says));
    const source = flat(read(test.file));
    expect(source, `${test.file} has a test "${test.title}"`).toContain(flat(test.title));
  });

  it.each(REMOVED)('a removed promise does not come back: $why', ({ pattern }) => {
    const back = documents().filter((path) => pattern.test(flat(read(path))));
    expect(back).toEqual([]);
  });

  it('catches the removed sentence as it was written (the patterns are not vacuous)', () => {
    const before =
      "the default POST body carries `capturedAt`, when the page run's blackbox became final (ms since the epoch), so that the server can refuse an old or reused one";
    expect(REMOVED.map(({ pattern }) => pattern.test(before))).toEqual([true, true]);
  });

  it('no server code reads capturedAt', () => {
    const server = [...walk('src/server'), ...walk('src/gateway')].filter((file) => file.endsWith('.ts'));
    expect(server.filter((file) => read(file).includes('capturedAt'))).toEqual([]);
  });
});
