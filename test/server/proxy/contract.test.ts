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

/** The names of a recipe's list, lower-cased, in its order. */
const names = (text: string) => [...text.matchAll(/[A-Za-z][A-Za-z-]*/g)].map(([name]) => name.toLowerCase());
/** The quoted names of `local NAME = { … }` (Lua) or `var NAME = [ … ]` (njs) in a recipe. */
const listed = (text: string, name: string) => {
  const list = new RegExp(`(?:local|var) ${name} = [[{]([^\\]}]*)[\\]}]`).exec(text);
  return list ? [...list[1]!.matchAll(/'([^']+)'/g)].map(([, quoted]) => quoted) : [];
};
/** The alternatives of HAProxy's `del-header '^(?!(a|b|…)$)' -m reg` in `direction`. */
const haproxyKept = (direction: 'request' | 'response') =>
  (
    new RegExp(`http-${direction} del-header '\\^\\(\\?!\\(([^)]*)\\)\\$\\)' -m reg`).exec(
      read('proxy/haproxy/iojs.cfg'),
    )?.[1] ?? ''
  ).split('|');
// The transport's own headers of the answer, which a server may keep beside the contract's.
const FRAMING = ['content-length', 'content-encoding', 'transfer-encoding', 'date'];

// Issue 57: every recipe keeps the contract's lists, by allow-list, both ways. Where a recipe
// cannot import contract.ts (a server's own configuration language), this holds it equal.
describe("each recipe's header allow-lists are the contract's", () => {
  it("nginx: out, proxy_pass_request_headers off and the browser's headers set one by one; back, iojs.js", () => {
    const location = read('proxy/nginx/iojs-location.conf');
    expect(location).toMatch(/^\s*proxy_pass_request_headers off;/m);
    const set = [...location.matchAll(/^\s*proxy_set_header (\S+) (\S+);/gm)];
    const asSent = set.filter(([, name, value]) => value === `$http_${name!.toLowerCase().replaceAll('-', '_')}`);
    expect(asSent.map(([, name]) => name!.toLowerCase())).toEqual([...FORWARDED_REQUEST_HEADERS]);
    const written = set.filter((line) => !asSent.includes(line)).map(([, name]) => name!.toLowerCase());
    expect(written.filter((name) => name !== 'connection' && !FRONT_REQUEST_HEADERS.includes(name as never))).toEqual(
      [],
    );
    expect(location).toMatch(/^\s*js_header_filter bbc_iojs\.answerHeaders;/m);
    expect(read('proxy/nginx/iojs-http.conf')).toMatch(/^js_import bbc_iojs from blackbox-capture\/iojs\.js;/m);
    expect(listed(read('proxy/nginx/iojs.js'), 'RETURNED_RESPONSE_HEADERS')).toEqual([...RETURNED_RESPONSE_HEADERS]);
  });

  it('Caddy: out, every header dropped and the kept ones set back; back, every one dropped but those copied', () => {
    const caddy = read('proxy/caddy/iojs.caddy');
    expect(caddy).toMatch(/^\trequest_header -\*\*$/m);
    const kept = [...caddy.matchAll(/^\t\t(bbc_\w+) \{http\.request\.header\.([\w-]+)\}$/gm)];
    expect(kept.map(([, , name]) => name!.toLowerCase())).toEqual([...FORWARDED_REQUEST_HEADERS]);
    const setBack = [...caddy.matchAll(/^\t\theader_up ([\w-]+) \{vars\.(bbc_\w+)\}$/gm)];
    expect(setBack.map(([, name, variable]) => [name!.toLowerCase(), variable])).toEqual(
      kept.map(([, variable, name]) => [name!.toLowerCase(), variable]),
    );
    expect(caddy).toMatch(/^\t\theader_down -\*\*$/m);
    expect(names(/^\t{4}include (.*)$/m.exec(caddy)?.[1] ?? '')).toEqual([...RETURNED_RESPONSE_HEADERS]);
  });

  it("Apache: iojs.lua keeps the contract's lists both ways, and iojs.conf runs it both ways", () => {
    const lua = read('proxy/apache/iojs.lua');
    expect(listed(lua, 'FORWARDED_REQUEST_HEADERS')).toEqual([...FORWARDED_REQUEST_HEADERS]);
    expect(listed(lua, 'FRONT_REQUEST_HEADERS')).toEqual([...FRONT_REQUEST_HEADERS]);
    expect(listed(lua, 'RETURNED_RESPONSE_HEADERS')).toEqual([...RETURNED_RESPONSE_HEADERS]);
    // Set-Cookie only, which mod_headers renames into the vendor's namespace after the filter.
    expect(listed(lua, 'REWRITTEN_RESPONSE_HEADERS')).toEqual(['set-cookie']);
    const conf = read('proxy/apache/iojs.conf');
    expect(conf).toMatch(/^LuaOutputFilter BBC_ANSWER_HEADERS "\$\{BBC_LUA\}" answer_headers$/m);
    expect(conf).toMatch(/^\s+LuaHookFixups "\$\{BBC_LUA\}" request_headers$/m);
    expect(conf).toMatch(/^\s+SetOutputFilter BBC_ANSWER_HEADERS$/m);
  });

  it("HAProxy: del-header by a regular expression of every name but the contract's, both ways", () => {
    const out = haproxyKept('request');
    expect(out.slice(0, FORWARDED_REQUEST_HEADERS.length)).toEqual([...FORWARDED_REQUEST_HEADERS]);
    expect(
      out.slice(FORWARDED_REQUEST_HEADERS.length).filter((name) => !FRONT_REQUEST_HEADERS.includes(name as never)),
    ).toEqual([]);
    const back = haproxyKept('response');
    expect(back.slice(0, RETURNED_RESPONSE_HEADERS.length)).toEqual([...RETURNED_RESPONSE_HEADERS]);
    const extra = back.slice(RETURNED_RESPONSE_HEADERS.length);
    expect(extra.filter((name) => !FRONT_RESPONSE_HEADERS.includes(name as never) && !FRAMING.includes(name))).toEqual(
      [],
    );
  });
});
