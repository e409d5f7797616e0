/**
 * The service's regions and the host of each role in them: the one table every address of
 * the kit is derived from (docs/vendor-contract.md#hosts-by-role). The service puts each role
 * on a host of its own: the token on `auth.`, account create and update on `account.`, the
 * upload and finalize addresses its create answer gives on `api.`, the reads on `retrieval.`,
 * and callbacks come from `callback.`, from the addresses it publishes for the region. A new
 * region is one row here.
 */

export interface RegionEntry {
  /** The region's name in the service's host names (`amer-1` in `api.amer-1.jumio.ai`). */
  readonly name: string;
  /**
   * The addresses the service publishes as the sources of its callbacks for the region
   * (docs/vendor-contract.md#the-answer). The list has changed over time: keep the
   * kit current, or give your own `allowedSources`.
   */
  readonly callbackSources: readonly string[];
}

export const REGIONS = {
  US: {
    name: 'amer-1',
    callbackSources: [
      '34.202.241.227',
      '34.226.103.119',
      '34.226.254.127',
      '52.8.136.236',
      '54.177.61.57',
      '54.183.15.212',
    ],
  },
  EU: {
    name: 'emea-1',
    callbackSources: ['34.253.41.236', '35.157.27.193', '52.48.0.25', '52.57.194.92', '52.58.113.86', '52.209.180.134'],
  },
  SG: {
    name: 'apac-1',
    callbackSources: ['3.0.109.121', '52.76.184.73', '52.77.102.92', '13.238.100.17', '13.238.203.238', '52.64.132.26'],
  },
} as const satisfies Record<string, RegionEntry>;

/** A region of the service: US, EU or SG (the keys of REGIONS). */
export type Region = keyof typeof REGIONS;

/** Every region, in the table's order. */
export const REGION_NAMES = Object.keys(REGIONS) as readonly Region[];

/** The regions in words, for settings' help and refusals: `US, EU or SG`. */
export const REGIONS_IN_WORDS = `${REGION_NAMES.slice(0, -1).join(', ')} or ${REGION_NAMES.at(-1)!}`;

/** The roles the service gives a host of their own in each region. */
export type HostRole = 'auth' | 'account' | 'api' | 'retrieval' | 'callback';

/** The origin of `role` in `region`, e.g. `https://api.amer-1.jumio.ai`. */
export const regionOrigin = (region: Region, role: HostRole): string =>
  `https://${role}.${REGIONS[region].name}.jumio.ai`;

/** Whether `value` names a region of the table (an own key, not `toString` or `__proto__`). */
export const isRegion = (value: unknown): value is Region =>
  typeof value === 'string' && Object.prototype.hasOwnProperty.call(REGIONS, value);

/** The region whose `role` host is `origin`, if any: a base address given by hand still finds its region. */
export function regionOfOrigin(origin: string, role: HostRole): Region | undefined {
  return REGION_NAMES.find((region) => regionOrigin(region, role) === origin);
}

/** Per region, the address of `role` + `path`: the derived tables the kit exports. */
export const byRegion = (role: HostRole, path = ''): Record<Region, string> =>
  Object.fromEntries(REGION_NAMES.map((region) => [region, `${regionOrigin(region, role)}${path}`])) as Record<
    Region,
    string
  >;

/**
 * Per region, the addresses the service publishes as its callbacks' sources: give one as
 * `allowedSources` of createCallbackHandler (docs/answer.md#callback-sources).
 */
export const CALLBACK_SOURCES: { readonly [R in Region]: readonly string[] } = Object.fromEntries(
  REGION_NAMES.map((region) => [region, REGIONS[region].callbackSources as readonly string[]]),
) as Record<Region, readonly string[]>;
