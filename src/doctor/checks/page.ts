/** The page itself: it must answer HTML; what it says is read up to a cap. */
import type { Add } from '../doctor.js';
import { readText, type Get } from '../fetching.js';

/** The page finding; the page's HTML and headers (empty when it could not be read). */
export async function checkPage(
  get: Get,
  add: Add,
  page: URL,
  maxPageBytes: number,
): Promise<{ html: string; pageHeaders: Headers }> {
  let html = '';
  let pageHeaders = new Headers();
  try {
    const response = await get(page);
    const read = await readText(response, maxPageBytes);
    html = read.text;
    pageHeaders = response.headers;
    // Stryker disable next-line StringLiteral: a missing header matches no more as any other text than as ''
    if (response.ok && /html/i.test(response.headers.get('content-type') ?? '')) {
      if (read.cut)
        add(
          'page',
          'warn',
          `the page is larger than ${maxPageBytes} bytes: only its start was read`,
          'check a smaller page of the checkout, or raise maxPageBytes',
        );
      else add('page', 'pass', `the page answered ${response.status} with HTML`);
    } else
      add(
        'page',
        'fail',
        `the page answered ${response.status} ${response.headers.get('content-type') ?? 'without a content type'}`,
        'give the URL of the checkout page itself',
      );
  } catch (error) {
    add(
      'page',
      'fail',
      `the page could not be fetched (${(error as Error).message})`,
      'check the URL and that this machine can reach it',
    );
  }
  return { html, pageHeaders };
}
