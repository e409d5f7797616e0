// Nothing outlives its owner: a process whose onResult hangs still exits once the callback
// handler is closed (the lease's renewal timer neither keeps it alive nor runs on).
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SERVER = fileURLToPath(new URL('../../dist/server.js', import.meta.url));

/** A script: a callback handler whose onResult never settles; after it is called, close(). */
const script = (closeIt: boolean) => `
import { createCallbackHandler } from ${JSON.stringify(SERVER)};
const ACCOUNT = '11111111-2222-4333-8444-555555555555';
const EXECUTION = '66666666-7777-4888-9999-aaaaaaaaaaaa';
const RETRIEVAL = 'https://retrieval.test';
const handler = createCallbackHandler({
  client: { retrievalOrigin: RETRIEVAL, clientId: 'c', details: async () => ({ status: 'PROCESSED' }) },
  allowedSources: 'any',
  onError: () => {},
  onResult: () => {
    console.log('onResult called');
    ${closeIt ? "void handler.close().then(() => console.log('closed'));" : ''}
    return new Promise(() => {});
  },
});
await handler(new Request('https://shop.test/cb', {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({
    callbackSentAt: new Date().toISOString(),
    workflowExecution: { id: EXECUTION, href: RETRIEVAL + '/api/v1/accounts/' + ACCOUNT + '/workflow-executions/' + EXECUTION, definitionKey: 1, status: 'PROCESSED' },
    account: { id: ACCOUNT, href: RETRIEVAL + '/api/v1/accounts/' + ACCOUNT },
  }),
}));
`;

/** Runs the script; resolves with its output once it exits, or 'still running' after `ms`. */
function run(source: string, ms: number): Promise<string> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', source], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve(`${out}still running`);
    }, ms);
    child.on('exit', () => {
      clearTimeout(timer);
      resolve(out);
    });
  });
}

describe('a hung onResult and close()', () => {
  it('the process exits once the handler is closed, its lease released', async () => {
    const output = await run(script(true), 8_000);
    expect(output).toBe('onResult called\nclosed\n');
  });

  it('without close(), nothing the handler holds keeps the process alive (neither the lease renewal nor the time limit)', async () => {
    const output = await run(script(false), 8_000);
    expect(output).toBe('onResult called\n');
  });
});
