/** Redis Cluster's hash tags: which part of a key places it on a master (docs/fleet.md#redis-cluster). */

/**
 * The hash tag Redis Cluster places a key by: what stands between the key's first "{" and the
 * next "}", when that is not empty; undefined when the key has none (the whole key is hashed).
 */
export function hashTagOf(key: string): string | undefined {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : undefined;
}
