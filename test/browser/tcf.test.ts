// @vitest-environment happy-dom
// tcfConsent against a stub CMP that implements the IAB TCF v2 __tcfapi contract
// (addEventListener / removeEventListener, eventStatus, gdprApplies, vendor and purpose consents).
import { afterEach, describe, expect, it } from 'vitest';
import { tcfConsent } from '../../src/browser/tcf.js';
import { consents, stubCmp } from '../support/tcf-cmp.js';
import { failure, freshPage, LOADER_URL, w } from '../support/vendor-dom.js';

afterEach(() => {
  delete (window as unknown as { __tcfapi?: unknown }).__tcfapi;
});

describe('tcfConsent', () => {
  it('a stored choice (tcloaded) with the vendor and purpose 1 consented grants, and the listener is removed', async () => {
    const cmp = stubCmp({ gdprApplies: true, eventStatus: 'tcloaded', ...consents({ 810: true }, { 1: true }) });
    expect(await tcfConsent({ vendorId: 810 })()).toBe(true);
    expect(cmp.removed).toEqual([1]);
    expect(cmp.listeners.size).toBe(0);
  });

  it.each([
    ['the vendor without consent', consents({ 810: false }, { 1: true })],
    ['purpose 1 without consent', consents({ 810: true }, { 1: false })],
    ['another vendor only', consents({ 811: true }, { 1: true })],
  ])('%s denies', async (_, given) => {
    stubCmp({ gdprApplies: true, eventStatus: 'tcloaded', ...given });
    expect(await tcfConsent({ vendorId: 810 })()).toBe(false);
  });

  it('every purpose listed must have consent', async () => {
    stubCmp({ gdprApplies: true, eventStatus: 'tcloaded', ...consents({ 810: true }, { 1: true, 7: false }) });
    expect(await tcfConsent({ vendorId: 810, purposes: [1, 7] })()).toBe(false);
    stubCmp({ gdprApplies: true, eventStatus: 'tcloaded', ...consents({ 810: true }, { 1: true, 7: true }) });
    expect(await tcfConsent({ vendorId: 810, purposes: [1, 7] })()).toBe(true);
  });

  it("waits while the CMP shows its UI, and answers the user's choice", async () => {
    const cmp = stubCmp({ gdprApplies: true, eventStatus: 'cmpuishown', ...consents({}, {}) });
    let answer: boolean | undefined;
    const pending = tcfConsent({ vendorId: 810 })().then((a) => (answer = a));
    await new Promise((r) => setTimeout(r, 20));
    expect(answer).toBeUndefined();
    cmp.choose(consents({ 810: true }, { 1: true }));
    await pending;
    expect(answer).toBe(true);
  });

  it('GDPR not applying grants at once', async () => {
    stubCmp({ gdprApplies: false, eventStatus: 'cmpuishown', ...consents({}, {}) });
    expect(await tcfConsent({ vendorId: 810 })()).toBe(true);
  });

  it('no CMP on the page, or a failing one, rejects: nothing without consent', async () => {
    await expect(tcfConsent({ vendorId: 810 })()).rejects.toThrow(/no __tcfapi/);
    (window as unknown as { __tcfapi: unknown }).__tcfapi = (
      _c: string,
      _v: number,
      callback: (d: unknown, success: boolean) => void,
    ) => callback({}, false);
    await expect(tcfConsent({ vendorId: 810 })()).rejects.toThrow(/CMP failed/);
  });

  it('a vendor id that is no positive integer is refused at once', () => {
    for (const vendorId of [0, -1, 1.5, Number.NaN]) expect(() => tcfConsent({ vendorId })).toThrow(TypeError);
  });

  it("as captureBlackbox's consent: a denial is consent_denied and nothing is written", async () => {
    const api = await freshPage();
    stubCmp({ gdprApplies: true, eventStatus: 'tcloaded', ...consents({ 810: false }, { 1: true }) });
    expect(
      (await failure(api.captureBlackbox({ loaderUrl: LOADER_URL, consent: tcfConsent({ vendorId: 810 }) }))).code,
    ).toBe('consent_denied');
    expect(w().IGLOO).toBeUndefined();
  });

  it('data-consent="tcf:810" on the script tag asks the CMP', async () => {
    await freshPage();
    const cmp = stubCmp({ gdprApplies: true, eventStatus: 'cmpuishown', ...consents({}, {}) });
    const tag = document.createElement('script');
    Object.assign(tag.dataset, { loaderUrl: LOADER_URL, consent: 'tcf:810' });
    const { startFromScriptTag } = await import('../../src/browser/declarative.js');
    const pending = startFromScriptTag(tag)!;
    await new Promise((r) => setTimeout(r, 50));
    expect(w().IGLOO).toBeUndefined();
    cmp.choose(consents({ 810: true }, { 1: true }));
    expect(await pending).toMatch(/^0400/);
  });

  it('data-consent that is not tcf:<id> is invalid_option', async () => {
    await freshPage();
    const tag = document.createElement('script');
    Object.assign(tag.dataset, { loaderUrl: LOADER_URL, consent: 'yes' });
    const { startFromScriptTag } = await import('../../src/browser/declarative.js');
    expect((await failure(startFromScriptTag(tag)!)).code).toBe('invalid_option');
  });
});
