// A fetch for the delivery code's tests: it answers from a script and records every call.

export interface Seen {
  url: string;
  init: RequestInit & { headers: Record<string, string> };
}

/** A fetch that answers from a script of responses ('network' = connection failure). */
export function scriptedFetch(answers: Array<number | 'network' | Response>) {
  const seen: Seen[] = [];
  const fetch = async (url: string | URL | Request, init?: RequestInit) => {
    seen.push({ url: url instanceof Request ? url.url : String(url), init: init as Seen['init'] });
    const next = answers.length > 1 ? answers.shift()! : answers[0]!;
    if (next === 'network') throw new TypeError('Failed to fetch');
    return typeof next === 'number' ? new Response('{}', { status: next }) : next;
  };
  return { fetch: fetch, seen };
}

/** scriptedFetch as the page's fetch (globalThis.fetch) until `restore()`. */
export function scriptedGlobalFetch(answers: Array<number | 'network' | Response>) {
  const { fetch, seen } = scriptedFetch(answers);
  const original = globalThis.fetch;
  globalThis.fetch = fetch as typeof globalThis.fetch;
  return { seen, restore: () => void (globalThis.fetch = original) };
}
