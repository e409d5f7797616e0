// <blackbox-capture> on a server: importing the element module defines nothing and throws
// nothing (no HTMLElement, no customElements), so server rendering may import it.
import { describe, expect, it } from 'vitest';

describe('blackbox-capture/element on a server', () => {
  it('imports without a DOM and registers nothing', async () => {
    expect(typeof HTMLElement).toBe('undefined');
    const element = await import('../../src/browser/element.js');
    expect(typeof element.defineBlackboxCapture).toBe('function');
    expect(() => element.defineBlackboxCapture()).not.toThrow();
    expect(typeof (globalThis as { customElements?: unknown }).customElements).toBe('undefined');
  });
});
