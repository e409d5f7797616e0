// The doctor as users run it: dist/cli.js, and the README's command through npx, against the demo.
import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { DoctorReport } from '../../src/doctor/doctor.js';
import { statusOf, useDemo } from '../support/doctor-demo.js';
import { snippet } from '../support/readme.js';

const site = useDemo();
const collectorUrl = site.collectorUrl;

describe('npx blackbox-capture doctor (dist/cli.js)', () => {
  const cli = (...args: string[]) => spawnSync(process.execPath, ['dist/cli.js', ...args], { encoding: 'utf8' });
  // Asynchronous: the demo it checks runs in this process.
  const cliAsync = (...args: string[]) =>
    new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = execFile(process.execPath, ['dist/cli.js', ...args], { encoding: 'utf8' }, (_, stdout, stderr) =>
        resolve({ status: child.exitCode, stdout, stderr }),
      );
    });
  it('resolves every name before fetching it: a name that does not resolve is not fetched', async () => {
    const { status, stdout } = await cliAsync('doctor', 'http://shop.invalid/checkout', '--json');
    expect(status).toBe(1);
    const report = JSON.parse(stdout) as DoctorReport;
    expect(report.findings.find((f) => f.id === 'page')?.message).toContain(
      'not fetched: shop.invalid could not be resolved',
    );
  });

  /** The doctor on the demo's checkout, told where its third party is; `flags` after. */
  const doctorOnDemo = (...flags: string[]) =>
    cliAsync('doctor', `${site.demo.url}/checkout`, '--third-party-host', site.demo.emulator!.thirdPartyUrl, ...flags);

  it('exits 0 on a healthy page, 1 on a failing one, with --json the same report', async () => {
    const healthy = await doctorOnDemo('--collector-url', collectorUrl());
    expect([healthy.status, healthy.stderr]).toEqual([0, '']);
    expect(healthy.stdout).toMatch(/14 pass, 0 warn, 0 fail/);
    expect(healthy.stdout).toMatch(/^PASS {2}refuses_post +the front refuses a POST$/m);
    expect(healthy.stdout).toMatch(/^PASS {2}leak_cookies +the shop's cookies did not reach the collector$/m);
    const broken = await cliAsync('doctor', `${site.demo.url}/checkout`, '--prefix', '/broken-404/iojs', '--json');
    expect(broken.status).toBe(1);
    const report = JSON.parse(broken.stdout) as DoctorReport;
    expect(report.ok).toBe(false);
    expect(statusOf(report, 'static_script')).toEqual(['fail']);
  });

  it('--cookie-prefix names the namespace the vendor cookies must carry', async () => {
    const other = await doctorOnDemo('--cookie-prefix', 'other_');
    expect(other.status).toBe(1);
    expect(other.stdout).toMatch(
      /^FAIL {2}set_cookie +the front sets the vendor's cookie on the shop's site: bbc_fpc: not in the other_ namespace$/m,
    );
  });

  it("runs as the README writes it ('doctor-command'), through npx in a project that installed the package", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bbc-doctor-'));
    mkdirSync(join(dir, 'node_modules', '.bin'), { recursive: true });
    symlinkSync(process.cwd(), join(dir, 'node_modules', 'blackbox-capture'));
    symlinkSync(join(process.cwd(), 'dist', 'cli.js'), join(dir, 'node_modules', '.bin', 'blackbox-capture'));
    const command = snippet('doctor-command').code.trim();
    expect(command).toBe('npx blackbox-capture doctor https://shop.example/checkout');
    const result = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = execFile(
        'sh',
        ['-c', command.replace('https://shop.example/checkout', `${site.demo.url}/checkout?doctor=double-tag`)],
        { cwd: dir, env: { ...process.env, npm_config_yes: 'false' } },
        (_, stdout) => resolve({ code: child.exitCode, out: stdout }),
      );
    });
    expect(result.out).toMatch(/^FAIL {2}loader_tag_once/m);
    expect(result.code).toBe(1);
  });

  it('--help, alone or after doctor, prints the usage and exits 0', () => {
    for (const args of [['--help'], ['-h'], ['doctor', '--help'], ['doctor', 'https://a.example', '-h']]) {
      const result = cli(...args);
      expect(result.status, args.join(' ')).toBe(0);
      expect(result.stdout).toContain('usage: blackbox-capture doctor');
      expect(result.stderr).toBe('');
    }
  });

  it('bad usage exits 2 with the usage, on stderr', () => {
    for (const args of [
      [],
      ['doctor'],
      ['doctor', 'shop.example'],
      ['doctor', 'https://a.example', '--nope'],
      ['check'],
    ]) {
      const result = cli(...args);
      expect(result.status, args.join(' ')).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toContain('usage: blackbox-capture doctor');
    }
  });
});
