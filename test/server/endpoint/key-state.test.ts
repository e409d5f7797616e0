// An Idempotency-Key's states and their one transition function (src/server/endpoint/key-state.ts),
// over random runs of events from a new key: only the allowed moves, final states final, and
// every state the same once written to the store and read back.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  isFinal,
  keyStateOf,
  nextKeyState,
  recordOf,
  type KeyEvent,
  type KeyState,
} from '../../../src/server/endpoint/key-state.js';
import { nextRecordState } from '../../../src/server/endpoint/key-record.js';
import { isDeviceRiskError } from '../../../src/server/errors.js';

type StateName = KeyState['state'];

/** Where each state may go (by any event), and where each event leads. */
const MOVES: Record<StateName, StateName[]> = {
  none: ['open', 'stale'],
  open: ['open', 'transacted', 'none', 'finished', 'stale'],
  transacted: ['transacted', 'finished', 'stale'],
  finished: [],
  stale: [],
};
const LEADS_TO: Record<KeyEvent['type'], StateName | 'same'> = {
  start: 'same',
  'intend-create': 'same',
  'intend-upload': 'same',
  settle: 'same',
  record: 'transacted',
  withdraw: 'none',
  finish: 'finished',
  'give-up': 'stale',
};

const fingerprint = fc.constantFrom('f1', 'f2');
const intent = fc.record({ owner: fc.string({ maxLength: 8 }), until: fc.nat() });
const event: fc.Arbitrary<KeyEvent> = fc.oneof(
  fc.record({ type: fc.constant('start' as const), fingerprint }),
  fc.record({ type: fc.constant('intend-create' as const), intent }),
  fc.record({ type: fc.constant('intend-upload' as const), intent }),
  fc.record(
    {
      type: fc.constant('record' as const),
      transaction: fc.string({ minLength: 1 }),
      uploaded: fc.boolean(),
      uploading: intent,
    },
    { requiredKeys: ['type', 'transaction', 'uploaded'] },
  ),
  fc.constant({ type: 'settle' as const }),
  fc.constant({ type: 'withdraw' as const }),
  fc.record({
    type: fc.constant('finish' as const),
    result: fc.record({ accountId: fc.string(), workflowExecutionId: fc.string(), status: fc.string() }),
  }),
  fc.record({ type: fc.constant('give-up' as const), fingerprint }),
);

/** The states a run of `events` goes through from a new key, the refused events skipped. */
function run(events: KeyEvent[]): KeyState[] {
  const states: KeyState[] = [{ state: 'none' }];
  for (const each of events) {
    const next = nextKeyState(states.at(-1)!, each);
    if (next) states.push(next);
  }
  return states;
}
const reachable = fc.array(event, { maxLength: 12 }).map((events) => run(events).at(-1)!);

describe("an Idempotency-Key's states", () => {
  it('from any reachable state, an event makes only an allowed move, to where the event leads', () => {
    fc.assert(
      fc.property(reachable, event, (from, each) => {
        const next = nextKeyState(from, each);
        if (!next) return;
        expect(MOVES[from.state]).toContain(next.state);
        // A new key's first move is its start; past it, `start` begins another attempt where the last stopped.
        const leads = from.state === 'none' && each.type === 'start' ? 'open' : LEADS_TO[each.type];
        expect(next.state).toBe(leads === 'same' ? from.state : leads);
        // The key's request stays the one that took it; a given-up key names the one given up.
        if (each.type === 'give-up') expect(next).toEqual({ state: 'stale', fingerprint: each.fingerprint });
        else if ('fingerprint' in from && 'fingerprint' in next) expect(next.fingerprint).toBe(from.fingerprint);
      }),
      { numRuns: 2000 },
    );
  });

  it('finished and stale are final: no event moves them', () => {
    fc.assert(
      fc.property(reachable, event, (from, each) => {
        if (isFinal(from)) expect(nextKeyState(from, each)).toBeUndefined();
      }),
      { numRuns: 2000 },
    );
  });

  it('an upload intent only with a transaction whose blackbox is not there', () => {
    fc.assert(
      fc.property(reachable, (state) => {
        if (state.state === 'transacted' && state.uploading) expect(state.uploaded).toBe(false);
        expect('uploading' in state && state.state !== 'transacted').toBe(false);
      }),
      { numRuns: 2000 },
    );
  });

  it('a state written to the store (JSON) reads back as the same state', () => {
    fc.assert(
      fc.property(reachable, (state) => {
        const record = recordOf(state);
        const stored = record === undefined ? undefined : (JSON.parse(JSON.stringify(record)) as typeof record);
        expect(keyStateOf(stored)).toEqual(state);
      }),
      { numRuns: 2000 },
    );
  });

  it('every state is reached, and every event refused somewhere: the properties are not vacuous', () => {
    const seen = new Set<StateName>();
    const refused = new Set<KeyEvent['type']>();
    fc.assert(
      fc.property(reachable, event, (from, each) => {
        seen.add(from.state);
        if (!nextKeyState(from, each)) refused.add(each.type);
      }),
      { numRuns: 2000 },
    );
    expect([...seen].sort()).toEqual(Object.keys(MOVES).sort());
    expect([...refused].sort()).toEqual(Object.keys(LEADS_TO).sort());
  });

  it('reads the records the store has held: an odd one as the nearest state', () => {
    const creating = { owner: 'o', until: 5 };
    expect(keyStateOf(undefined)).toEqual({ state: 'none' });
    expect(keyStateOf({ fingerprint: 'f', creating })).toEqual({ state: 'open', fingerprint: 'f', creating });
    expect(keyStateOf({ fingerprint: 'f', uploaded: false })).toEqual({ state: 'open', fingerprint: 'f' });
    expect(keyStateOf({ fingerprint: 'f', transaction: 't', uploaded: true })).toEqual({
      state: 'transacted',
      fingerprint: 'f',
      transaction: 't',
      uploaded: true,
    });
    expect(keyStateOf({ fingerprint: 'f', stale: true })).toEqual({ state: 'stale', fingerprint: 'f' });
  });

  it('an attempt asking a move its state refuses stops as a fenced one: 409 idempotency_key_in_use', () => {
    const finished: KeyState = {
      state: 'finished',
      fingerprint: 'f',
      result: { accountId: 'a', workflowExecutionId: 'w', status: 'PROCESSED' },
    };
    expect(nextRecordState({ state: 'none' }, { type: 'start', fingerprint: 'f' })).toEqual({
      state: 'open',
      fingerprint: 'f',
    });
    let thrown: unknown;
    try {
      nextRecordState(finished, { type: 'start', fingerprint: 'f' });
    } catch (error) {
      thrown = error;
    }
    expect(isDeviceRiskError(thrown) && thrown.code).toBe('idempotency_key_in_use');
    expect(isDeviceRiskError(thrown) && thrown.retryAfter).toBe(1);
  });
});
