/** The endpoint the page posts to, asked once with an empty body. */
import type { Add } from '../doctor.js';
import { readText, type Get } from '../fetching.js';
import { MAX_SCRIPT_BYTES } from './scripts.js';

/**
 * The endpoint the page posts the blackbox to (`data-post-url`, `post-url`): sent an empty
 * JSON object from the page's origin, the kit's endpoint answers 400 before anything else
 * runs (no customer look-up, no call to the service). Only an endpoint on the page's own
 * origin is tried, once: the doctor sends nothing to a host a page names elsewhere.
 */
export async function checkPostEndpoint(postUrls: string[], page: URL, get: Get, add: Add): Promise<void> {
  const endpoint = postUrls[0];
  if (endpoint === undefined) return;
  if (new URL(endpoint).origin !== page.origin) {
    add(
      'post_endpoint',
      'warn',
      `the page posts to ${endpoint}, on another origin: not checked`,
      'post to your own origin',
    );
    return;
  }
  try {
    const response = await get(endpoint, {
      headers: { origin: page.origin, 'content-type': 'application/json' },
      body: '{}',
    });
    const type = response.headers.get('content-type') ?? '';
    const { text } = await readText(response, MAX_SCRIPT_BYTES);
    const code = /json/i.test(type) ? /"code"\s*:\s*"([\w-]+)"/.exec(text)?.[1] : undefined;
    if (response.status === 404 || response.status === 405)
      add(
        'post_endpoint',
        'fail',
        `${endpoint} answered ${response.status} to a POST: no endpoint there`,
        'mount the endpoint at the URL the page posts to (Express: app.post(path, toNodeHandler(deviceRisk))), or fix data-post-url / post-url',
      );
    else if (/html/i.test(type))
      add(
        'post_endpoint',
        'fail',
        `${endpoint} answered HTML (${response.status}) to a POST: the site's fallback page, not the endpoint`,
        'route the POST to createDeviceRiskHandler before the fallback page',
      );
    else if (response.status === 403 && code === 'origin_not_allowed')
      add(
        'post_endpoint',
        'fail',
        `${endpoint} refuses this page's origin ${page.origin} (403 origin_not_allowed)`,
        `add ${page.origin} to allowedOrigins`,
      );
    else if (response.status >= 400 && response.status < 500 && code)
      add('post_endpoint', 'pass', `${endpoint} answers POST (${response.status} ${code} to an empty body)`);
    else
      add(
        'post_endpoint',
        'warn',
        `${endpoint} answered ${response.status} ${type || 'without a content type'} to an empty body`,
        'check that createDeviceRiskHandler answers at this URL',
      );
  } catch (error) {
    add(
      'post_endpoint',
      'fail',
      `${endpoint} could not be reached (${(error as Error).message})`,
      'check the endpoint URL',
    );
  }
}
