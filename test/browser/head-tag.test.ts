// @vitest-environment happy-dom
// The warning of a script tag kept in <head> (src/browser/head-tag.ts), both builds': its text
// comes from the messages chunk, requested as the capture starts.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

const MESSAGES = '../../src/browser/messages.js';

function headTag(attributes: Record<string, string>): HTMLScriptElement {
  const script = document.createElement('script');
  for (const [name, value] of Object.entries(attributes)) script.setAttribute(name, value);
  document.head.append(script);
  return script;
}

const warnings = () => vi.mocked(console.warn).mock.calls.map(([text]) => String(text));

beforeEach(() => {
  vi.resetModules();
  document.head.innerHTML = '';
  document.body.innerHTML = '<input id="bb">';
  vi.spyOn(console, 'warn').mockImplementation(() => {});
});
afterEach(() => {
  vi.doUnmock(MESSAGES);
  vi.restoreAllMocks();
});

describe('the warning of a script tag kept in <head>', () => {
  it('waits for its text when Turbo renders before the text came, then warns once', async () => {
    let release!: () => void;
    const arrived = new Promise<void>((resolve) => (release = resolve));
    vi.doMock(MESSAGES, async () => {
      await arrived;
      return { WARNINGS: { tag_kept_in_head: (field: string) => `field ${field} stays empty` } };
    });
    const { warnTagKeptInHead } = await import('../../src/browser/head-tag.js');
    warnTagKeptInHead(headTag({ 'data-field': 'bb' }), Promise.resolve('bb'));
    await Promise.resolve();
    document.dispatchEvent(new Event('turbo:load'));
    expect(warnings()).toEqual([]);
    release();
    await vi.waitFor(() => expect(warnings()).toEqual(['[blackbox-capture] field bb stays empty']));
    // The text at hand now: a second warning would come at once.
    document.dispatchEvent(new Event('turbo:load'));
    expect(warnings()).toEqual(['[blackbox-capture] field bb stays empty']);
  });

  it('says nothing when its text does not load (the network gone), and throws nothing', async () => {
    vi.doMock(MESSAGES, () => {
      throw new TypeError('Failed to fetch dynamically imported module');
    });
    const { warnTagKeptInHead } = await import('../../src/browser/head-tag.js');
    warnTagKeptInHead(headTag({ 'data-field': 'bb' }), Promise.reject(new Error('failed capture')));
    await vi.dynamicImportSettled(); // the text's import has failed, the capture's end is known
    document.dispatchEvent(new Event('turbo:load'));
    await Promise.resolve(); // the warning, had there been a text, queued before this
    expect(warnings()).toEqual([]);
  });

  it('asks for no text for a tag with data-checkout-id, in <body>, or without a field', async () => {
    const asked = vi.fn(() => ({ WARNINGS: { tag_kept_in_head: () => 'text' } }));
    vi.doMock(MESSAGES, asked);
    const { warnTagKeptInHead } = await import('../../src/browser/head-tag.js');
    const inBody = document.createElement('script');
    inBody.dataset.field = 'bb';
    document.body.append(inBody);
    for (const tag of [headTag({ 'data-field': 'bb', 'data-checkout-id': 'a' }), inBody, headTag({})])
      warnTagKeptInHead(tag, Promise.resolve(''));
    await vi.dynamicImportSettled();
    document.dispatchEvent(new Event('turbo:load'));
    expect(asked).not.toHaveBeenCalled();
    expect(warnings()).toEqual([]);
  });
});
