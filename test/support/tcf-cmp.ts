// A page's consent platform for the browser tests: a stub of the IAB TCF v2 __tcfapi contract
// (addEventListener / removeEventListener, eventStatus, gdprApplies, vendor and purpose consents).
import { expect } from 'vitest';

export interface TcData {
  gdprApplies: boolean;
  eventStatus: 'tcloaded' | 'cmpuishown' | 'useractioncomplete';
  listenerId?: number;
  vendor: { consents: Record<number, boolean> };
  purpose: { consents: Record<number, boolean> };
}

/** The vendor and purpose consents of TC data. */
export const consents = (vendor: Record<number, boolean>, purpose: Record<number, boolean>) => ({
  vendor: { consents: vendor },
  purpose: { consents: purpose },
});

/**
 * Installs a CMP stub as the page's __tcfapi: listeners get the current TC data at once and on
 * every change (`choose`), as the contract says; `asked` holds every command it was given.
 */
export function stubCmp(initial: Omit<TcData, 'listenerId'>) {
  let data = initial;
  let next = 1;
  const listeners = new Map<number, (d: TcData, success: boolean) => void>();
  const removed: number[] = [];
  const asked: string[] = [];
  (window as unknown as { __tcfapi: unknown }).__tcfapi = (
    command: string,
    version: number,
    callback: (d: TcData, success: boolean) => void,
    parameter?: number,
  ) => {
    asked.push(command);
    expect(version).toBe(2);
    if (command === 'addEventListener') {
      const id = next++;
      listeners.set(id, callback);
      callback({ ...data, listenerId: id }, true);
    } else if (command === 'removeEventListener') {
      listeners.delete(parameter!);
      removed.push(parameter!);
      callback({ ...data }, true);
    }
  };
  return {
    asked,
    removed,
    listeners,
    choose(change: Partial<TcData>) {
      data = { ...data, ...change, eventStatus: 'useractioncomplete' };
      for (const [id, listener] of [...listeners]) listener({ ...data, listenerId: id }, true);
    },
  };
}
