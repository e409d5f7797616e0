// The demo site the doctor's tests check, one per test file, and what they read of a report.
import { afterAll, beforeAll } from 'vitest';
import { startDemo, type Demo } from '../../demo/app.js';
import { configFromEnvironment } from '../../demo/config.js';
import type { DoctorReport, Finding } from '../../src/doctor/doctor.js';

/** Starts the demo before the file's tests and closes it after; read `.demo` inside a test. */
export function useDemo(): { readonly demo: Demo; collectorUrl(): string } {
  let demo: Demo | undefined;
  beforeAll(async () => {
    demo = await startDemo({ ...configFromEnvironment({}), port: 0 }, { delays: {} });
  });
  afterAll(async () => {
    await demo?.close();
  });
  return {
    get demo() {
      return demo!;
    },
    collectorUrl: () => demo!.settings.collectorUrl,
  };
}

export const statusOf = (report: DoctorReport, id: Finding['id']) =>
  report.findings.filter((f) => f.id === id).map((f) => f.status);
