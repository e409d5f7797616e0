// The contract as data (src/server/proxy/contract.ts): its path rule on the cases that matter,
// the table of docs/proxy.md equal to its lists, and the same rule in each recipe of proxy/.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  bytesDecoded,
  DYNAMIC_SCRIPT,
  FORWARDED_REQUEST_HEADERS,
  FRONT_REQUEST_HEADERS,
  FRONT_RESPONSE_HEADERS,
  REFUSED_PATH_SOURCE,
  RETURNED_RESPONSE_HEADERS,
} from '../../../src/server/proxy/contract.js';
import { DOT_SEGMENT_PATHS, DYNAMIC_SCRIPT_VARIANTS, REFUSED_PATHS } from '../../support/front-contract.js';

const read = (path: string) => readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8');
const refused = new RegExp(REFUSED_PATH_SOURCE, 'i');

describe('the path rule', () => {
  it.each([
    '/iojs/general5/SUB/static_wdp.js?loaderVer=5.2.2&tp_host=https%3A%2F%2Fx',
    '/iojs/general5/ab%2Bc%3D/dyn_wdp.js',
    '/iojs/latest/logo.js',
    '/iojs/resources/static/a%20b.png',
    '/iojs/general5/caf%C3%A9/x.js',
  ])('forwards the vendor path %s', (path) => {
    expect(refused.test(path)).toBe(false);
  });

  it.each(
    [...REFUSED_PATHS, ...DOT_SEGMENT_PATHS]
      .filter((path) => path.startsWith('/iojs/'))
      .concat(['/iojs//evil.example/x', '/iojs/a\\b', '/iojs/a b', '/iojs/..', '/iojs/a/.', '/iojs/%c0%ae%c0%ae/x']),
  )('refuses %s', (path) => {
    expect(refused.test(path)).toBe(true);
  });

  it('reads the path only: a query may hold what a path may not', () => {
    expect(refused.test('/iojs/a.js?u=http://x/..;/%0a')).toBe(false);
  });
});

describe('the dynamic script', () => {
  it.each(DYNAMIC_SCRIPT_VARIANTS)('%s names it', (path) => {
    expect(DYNAMIC_SCRIPT.test(bytesDecoded(path))).toBe(true);
  });
  it('decodes each escape to its byte, and leaves a broken one', () => {
    expect(bytesDecoded('dyn%5Fwdp%zz%4')).toBe('dyn_wdp%zz%4');
    expect(DYNAMIC_SCRIPT.test(bytesDecoded('/iojs/general5/static_wdp.js'))).toBe(false);
  });
});

describe('docs/proxy.md, the contract in one table', () => {
  const row = (start: string) => {
    const line = read('docs/proxy.md')
      .split('\n')
      .find((l) => l.startsWith(start))!;
    return line.split('|').map((cell) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]));
  };
  it('names, each way, exactly the headers of the module', () => {
    const out = row('| browser → collector |');
    const back = row('| collector → browser |');
    expect([out[2], out[3]]).toEqual([[...FORWARDED_REQUEST_HEADERS], [...FRONT_REQUEST_HEADERS]]);
    expect([back[2], back[3]]).toEqual([[...RETURNED_RESPONSE_HEADERS], [...FRONT_RESPONSE_HEADERS]]);
  });
});

describe('the recipes run the same rule', () => {
  it('nginx and HAProxy carry the expression as it is, Caddy inside a CEL string', () => {
    expect(read('proxy/nginx/iojs-location.conf')).toContain(`"${REFUSED_PATH_SOURCE}"`);
    expect(read('proxy/haproxy/iojs.cfg')).toContain(`'${REFUSED_PATH_SOURCE}'`);
    expect(read('proxy/caddy/iojs.caddy')).toContain(`"(?i)${REFUSED_PATH_SOURCE.replaceAll('\\', '\\\\')}"`);
    expect(read('docs/proxy.md')).toContain(`"${REFUSED_PATH_SOURCE}"`);
  });

  it('Apache carries it on the request line: after the method, the path ending at a space', () => {
    const onRequestLine = REFUSED_PATH_SOURCE.replace('^/iojs/', '^\\S+ (\\S*://[^/]*)?/iojs/')
      .replaceAll('[^?]', '[^?\\s]')
      .replace('%?-]', '%?\\s-]')
      .replace('(\\?|$)))', '[?\\s]))')
      .replace('([/?]|$))', '[/?\\s])');
    expect(read('proxy/apache/iojs.conf')).toContain(`<If "%{THE_REQUEST} =~ m#${onRequestLine}#i">`);
  });
});
