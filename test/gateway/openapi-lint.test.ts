/**
 * The gateway's OpenAPI document held to the two linters shops and API catalogues run on such
 * documents: Redocly's `recommended` rules and Spectral's `spectral:oas` ruleset, each in
 * process (no network, no telemetry). Clean means no problem of any severity; a rule is never
 * turned off here to reach it.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createConfig, lint } from '@redocly/openapi-core';
import spectralCore, { type RulesetDefinition } from '@stoplight/spectral-core';
import parsers from '@stoplight/spectral-parsers';
import rulesets from '@stoplight/spectral-rulesets';
import { describe, expect, it } from 'vitest';

const PATH = fileURLToPath(new URL('../../src/gateway/openapi.json', import.meta.url));

/** Redocly's problems with the document at `path`, one line each: severity, rule, where. */
async function redoclyProblems(path: string): Promise<string[]> {
  const config = await createConfig({ extends: ['recommended'] });
  const problems = await lint({ ref: path, config });
  return problems.map((p) => `${p.severity} ${p.ruleId} ${p.location[0]?.pointer ?? ''}: ${p.message}`);
}

/** Spectral's (spectral:oas, its recommended rules) problems with `text`, one line each. */
async function spectralProblems(text: string): Promise<string[]> {
  const spectral = new spectralCore.Spectral();
  // The rulesets package is typed against another copy of spectral-core's types: the same shape.
  spectral.setRuleset({ extends: [[rulesets.oas as RulesetDefinition, 'recommended']] });
  const results = await spectral.run(new spectralCore.Document(text, parsers.Json, PATH));
  return results.map((r) => `${r.severity} ${String(r.code)} ${r.path.join('.')}: ${r.message}`);
}

describe('the OpenAPI document under the linters', () => {
  it("is clean under Redocly's recommended rules", async () => {
    expect(await redoclyProblems(PATH)).toEqual([]);
  });

  it("is clean under Spectral's spectral:oas", async () => {
    expect(await spectralProblems(readFileSync(PATH, 'utf8'))).toEqual([]);
  });

  it('finds an operation without security, tags or a description: the linters are not vacuous', async () => {
    const broken = JSON.parse(readFileSync(PATH, 'utf8')) as {
      paths: Record<string, Record<string, Record<string, unknown>>>;
    };
    const operation = broken.paths['/healthz']!.get!;
    delete operation.security;
    delete operation.tags;
    delete operation.description;
    const copy = join(mkdtempSync(join(tmpdir(), 'openapi-lint-')), 'openapi.json');
    writeFileSync(copy, JSON.stringify(broken));
    expect((await redoclyProblems(copy)).join('\n')).toMatch(/security-defined #\/paths\/~1healthz\/get/);
    const spectral = (await spectralProblems(JSON.stringify(broken))).join('\n');
    expect(spectral).toMatch(/operation-tags paths\.\/healthz\.get/);
    expect(spectral).toMatch(/operation-description paths\.\/healthz\.get/);
  });
});
