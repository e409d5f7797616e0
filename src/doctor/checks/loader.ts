/**
 * The loader on the page: the tags that run it (the page's own, this package's script tag and
 * element, each injecting one unless told not to) must come to one, and the loader URL must
 * answer JavaScript. One loader is fetched, the one given or the page's first: the doctor is no
 * way to send a page's URLs anywhere.
 */
import type { Add } from '../doctor.js';
import type { Get } from '../fetching.js';
import { readMarkup, type PageMarkup } from '../html.js';
import { JAVASCRIPT } from './scripts.js';

/** What the page's markup says of the loader. */
export interface LoaderTags {
  markup: PageMarkup;
  /** The loader tags of the page's own (a src naming a loader). */
  ownTags: Array<Record<string, string>>;
  /** This package's script tags (data-loader-url) and elements (loader-url). */
  declarative: Array<{ loaderUrl?: string | undefined; inject?: string | undefined; postUrl?: string | undefined }>;
  loaderUrls: Set<string>;
  /** An http(s) URL on the page, resolved against it; undefined for anything else. */
  resolve: (src: string) => string | undefined;
  /** The values that resolve, resolved. */
  named: (values: Array<string | undefined>) => string[];
}

/** The loader tags and URLs of the page's HTML, with `loaderUrl` (--loader-url) among them. */
export function findLoaders(html: string, page: URL, loaderUrl: string | undefined): LoaderTags {
  // The page's own (a src naming a loader) and this package's script tag, which injects one unless data-inject="false".
  const markup = readMarkup(html);
  const tags = markup.scripts;
  // A script tag with data-loader-url, or the <blackbox-capture> element with loader-url:
  // each injects the loader unless told not to (data-inject="false", inject="false").
  const declarative = [
    ...tags
      .filter((t) => t['data-loader-url'] !== undefined)
      .map((t) => ({ loaderUrl: t['data-loader-url'], inject: t['data-inject'], postUrl: t['data-post-url'] })),
    ...markup.elements.map((e) => ({ loaderUrl: e['loader-url'], inject: e.inject, postUrl: e['post-url'] })),
  ];
  const resolve = (src: string) => {
    const url = URL.parse(src, page);
    return url && /^https?:$/.test(url.protocol) ? url.href : undefined;
  };
  const named = (values: Array<string | undefined>) =>
    values.map((v) => (v === undefined ? undefined : resolve(v))).filter((v): v is string => v !== undefined);
  const loaderUrls = new Set([...named([loaderUrl]), ...named(declarative.map((t) => t.loaderUrl))]);
  const ownTags = tags.filter(
    (t) =>
      t.src &&
      // Stryker disable next-line StringLiteral: a src that does not resolve is in the set under no text a URL gives
      (loaderUrls.has(resolve(t.src) ?? '') || /(^|\/)(loader(_only)?|iovation|snare)[\w.-]*\.js(\?|$)/i.test(t.src)),
  );
  for (const url of named(ownTags.map((t) => t.src))) loaderUrls.add(url);
  return { markup, ownTags, declarative, loaderUrls, resolve, named };
}

/** The loader_tag_once finding: the loader runs once per page. */
export function checkLoaderTags(add: Add, found: LoaderTags, loaderUrl: string | undefined): void {
  const { ownTags, declarative } = found;
  const runs = ownTags.length + declarative.filter((t) => t.inject !== 'false').length;
  if (runs > 1) {
    add(
      'loader_tag_once',
      'fail',
      `the page would run the loader ${runs} times (${ownTags.length} loader tag(s), ${declarative.length} blackbox-capture tag(s) or element(s))`,
      'keep one: the loader runs once per page; with the package, drop your own loader tag, or set data-inject="false" to adopt it',
    );
  } else if (runs === 1) add('loader_tag_once', 'pass', 'one loader tag');
  else
    add(
      'loader_tag_once',
      'warn',
      'no loader tag in the HTML',
      loaderUrl === undefined
        ? 'fine when your bundle calls captureBlackbox; give --loader-url to check the loader'
        : 'fine when your bundle calls captureBlackbox (the loader checked is the one --loader-url gives)',
    );
}

/** The loader_script finding: the loader URL answers JavaScript. */
export async function checkLoaderScript(get: Get, add: Add, found: LoaderTags, loaderUrl: string | undefined) {
  const { loaderUrls, resolve } = found;
  // The loader answers JavaScript. One loader, the one given or the page's first: a page that
  // names more fails loader_tag_once, and the doctor is no way to send a page's URLs anywhere.
  if (loaderUrls.size === 0) add('loader_script', 'warn', 'no loader URL found', 'give --loader-url');
  // Stryker disable next-line ConditionalExpression: the one --loader-url gives, when it resolves, is also the set's first (findLoaders)
  const checked = loaderUrl !== undefined && resolve(loaderUrl) ? resolve(loaderUrl)! : [...loaderUrls][0];
  if (loaderUrls.size > 1)
    add(
      'loader_script',
      'warn',
      `the page names ${loaderUrls.size} loader URLs; only ${checked} was fetched`,
      'keep one loader URL; give --loader-url to choose the one checked',
    );
  for (const loader of checked === undefined ? [] : [checked]) {
    try {
      const response = await get(loader);
      await response.body?.cancel();
      const type = response.headers.get('content-type') ?? '';
      if (response.ok && JAVASCRIPT.test(type)) add('loader_script', 'pass', `${loader} answered JavaScript`);
      else
        add(
          'loader_script',
          'fail',
          `${loader} answered ${response.status} ${type || 'without a content type'}`,
          'point loaderUrl at the vendor loader file your account manager gave you, served as JavaScript',
        );
    } catch (error) {
      add(
        'loader_script',
        'fail',
        `${loader} could not be fetched (${(error as Error).message})`,
        'check the loader URL',
      );
    }
  }
}
