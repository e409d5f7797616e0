// Size guards of the browser bundle, measured as a user's bundler would (scripts/size.mjs):
// each file a page downloads compressed on its own, the sizes added.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module script without types
import { bundle, figures, GUARDS, HEADROOM, measure, overGuards, TARGETS } from '../../scripts/size.mjs';
// @ts-expect-error: a plain ES module script without types
import { COMMAND, staleBlocks } from '../../scripts/reference-docs.mjs';
// @ts-expect-error: a plain ES module script without types
import { sizeFiles } from '../../scripts/size-docs.mjs';

interface Upfront {
  gzip: number;
  files: number;
  deliveryCodeUpfront: boolean;
  messagesUpfront: boolean;
  entriesUpfront: string[];
  fullOnly: string[];
}
interface Sizes {
  minimal: Upfront;
  mainMinimal: Upfront;
  full: { gzip: number; files: number; lazy: number };
  messages: { gzip: number };
  umd: { gzip: number; messagesInside: boolean; deliveryInside: boolean };
}

const FIELD_AND_POST = `import { captureBlackbox } from './dist/index.js'; captureBlackbox({ loaderUrl: '/l.js', field: 'bb', post: '/risk' });`;

describe('the guard logic', () => {
  it('names each figure over its guard, and only those', () => {
    expect(
      overGuards(
        { minimal: 10, mainMinimal: 15, full: 20, umd: 30 },
        { minimal: 10, mainMinimal: 16, full: 19, umd: 31 },
      ),
    ).toEqual(['full: 20 > 19']);
  });

  it('a figure that is missing or not a number is over its guard', () => {
    expect(overGuards({ minimal: NaN, full: 1 }, { minimal: 10, full: 10, umd: 10 })).toEqual([
      'minimal: NaN > 10',
      'umd: undefined > 10',
    ]);
  });

  it('no guard is over its target, nor more than 5 % over its figure (lowered as the figures fall)', async () => {
    const measured = figures((await measure()) as Sizes) as Record<string, number>;
    const targets = TARGETS as Record<string, number>;
    for (const [name, guard] of Object.entries(GUARDS as Record<string, number>)) {
      expect(guard, name).toBeLessThanOrEqual(targets[name] ?? Infinity);
      expect(guard, name).toBeLessThanOrEqual(Math.ceil(measured[name]! * (1 + 2.5 * HEADROOM)));
    }
  });

  it('the measured dist fails a guard a byte below its figure', async () => {
    const measured = figures((await measure()) as Sizes) as Record<string, number>;
    const tight = Object.fromEntries(Object.entries(measured).map(([name, figure]) => [name, figure - 1]));
    expect(overGuards(measured, tight)).toHaveLength(Object.keys(GUARDS).length);
  });
});

describe('browser bundle size', async () => {
  const sizes = (await measure()) as Sizes;

  it('the same dist measures the same bytes from any working directory (chunk names do not hash it)', async () => {
    // In a process of its own: esbuild keeps the working directory its service started in.
    const script = new URL('../../scripts/size.mjs', import.meta.url).href;
    const measured = `const m = await import(${JSON.stringify(script)});
      const { upfront } = await m.bundle(${JSON.stringify(FIELD_AND_POST)});
      console.log(JSON.stringify({ upfront, figures: m.figures(await m.measure()) }));`;
    const elsewhere = execFileSync(process.execPath, ['--input-type=module', '-e', measured], {
      cwd: '/',
      encoding: 'utf8',
    });
    expect(JSON.parse(elsewhere)).toEqual({
      upfront: ((await bundle(FIELD_AND_POST)) as { upfront: string[] }).upfront,
      figures: figures(sizes),
    });
  });

  it('importing only a minimal path leaves the POST code out (tree-shaking works)', () => {
    expect(sizes.minimal.deliveryCodeUpfront).toBe(false);
    expect(sizes.mainMinimal.deliveryCodeUpfront).toBe(false);
    expect(sizes.full.lazy).toBeGreaterThan(300); // the delivery chunk exists and is loaded only with `post`
    expect(sizes.full.files).toBe(sizes.mainMinimal.files + 1);
  });

  it('the entries of their own, the consent chunk and the failed-script analysis add no byte to a minimal path', () => {
    expect(sizes.minimal.entriesUpfront).toEqual([]);
    expect(sizes.mainMinimal.entriesUpfront).toEqual([]);
  });

  it("the lean path is one file, without the full entry's preconnect hint, outcomes or field writes", () => {
    expect(sizes.minimal.files).toBe(1);
    expect(sizes.minimal.fullOnly).toEqual([]);
    // The markers mean something: the full entry's smallest call has each.
    expect(sizes.mainMinimal.fullOnly).toHaveLength(3);
    expect(sizes.minimal.gzip).toBeLessThan(sizes.mainMinimal.gzip);
  });

  it('the message texts are a chunk of their own, loaded only on failure', () => {
    expect(sizes.minimal.messagesUpfront).toBe(false);
    expect(sizes.mainMinimal.messagesUpfront).toBe(false);
    expect(sizes.umd.messagesInside).toBe(false); // the UMD file imports them from beside it
    expect(sizes.messages.gzip).toBeGreaterThan(800);
  });

  it(`docs/performance.md lists the figures this build measures (${COMMAND})`, async () => {
    expect(staleBlocks(await sizeFiles()).join('\n'), `run ${COMMAND}`).toBe('');
  });

  it('the UMD file holds the delivery code: a tag that starts a capture, with `post` or not, loads one file', () => {
    expect(sizes.umd.deliveryInside).toBe(true);
  });

  it.each(Object.keys(GUARDS))('%s stays within its guard', (name) => {
    expect(overGuards(figures(sizes))).not.toContainEqual(expect.stringMatching(`^${name}:`));
  });
});
