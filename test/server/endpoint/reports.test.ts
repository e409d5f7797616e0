// The bound on outcome-only reports (src/server/endpoint/reports.ts): a token bucket, and the
// keys told, each once, remembered up to a bound.
import { describe, expect, it } from 'vitest';
import { outcomeReports, REMEMBERED_REPORTS } from '../../../src/server/endpoint/reports.js';

describe('outcomeReports', () => {
  it('tells a key once, and forgets the key told longest ago past its bound', () => {
    const reports = outcomeReports(1, () => 0);
    expect([reports.first('a'), reports.first('a')]).toEqual([true, false]);
    for (let i = 1; i < REMEMBERED_REPORTS; i++) reports.first(`k${i}`);
    expect(reports.first('a')).toBe(false); // at the bound: all kept
    reports.first('one more');
    expect([reports.first('k1'), reports.first('a')]).toEqual([false, true]);
    expect(REMEMBERED_REPORTS).toBe(10_000);
  });

  it('takes five seconds of reports at once, then as many as the rate refills', () => {
    let clock = 0;
    const reports = outcomeReports(2, () => clock);
    expect(Array.from({ length: 11 }, () => reports.take())).toEqual([...Array(10).fill(true), false]);
    clock += 500;
    expect([reports.take(), reports.take()]).toEqual([true, false]);
  });

  it('refuses a rate that is not positive', () => {
    expect(() => outcomeReports(0, () => 0)).toThrow(expect.objectContaining({ code: 'invalid_configuration' }));
  });
});
