// The house rules that a tool can check: commit subjects of at most 72 characters (from the
// commit that set the rule on), and a changeset folder that changesets can read.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('..', import.meta.url);
/** The first commit made under the rule; the history before it stays as it was written. */
const RULE_FROM = '493b524';

describe('the house rules', () => {
  it('every commit subject since the rule is at most 72 characters', () => {
    const log = spawnSync('git', ['log', '--format=%s', `${RULE_FROM}^..HEAD`], { cwd: ROOT, encoding: 'utf8' });
    expect(log.status, log.stderr).toBe(0);
    const subjects = log.stdout.split('\n').filter(Boolean);
    expect(subjects.length).toBeGreaterThan(0);
    expect(subjects.filter((subject) => subject.length > 72)).toEqual([]);
  });

  it('changesets publish the package publicly from main', () => {
    const config = JSON.parse(readFileSync(new URL('.changeset/config.json', ROOT), 'utf8')) as Record<string, unknown>;
    expect(config).toMatchObject({ access: 'public', baseBranch: 'main' });
  });
});
