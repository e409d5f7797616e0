// The regions' table and what is derived from it: a new region is one row of REGIONS.
import { describe, expect, it } from 'vitest';
import {
  byRegion,
  REGION_NAMES,
  REGIONS_IN_WORDS,
  isRegion,
  regionOfOrigin,
  regionOrigin,
} from '../../../src/server/api/regions.js';

describe('the regions', () => {
  it('are named in words from the table, in its order', () => {
    expect(REGION_NAMES).toEqual(['US', 'EU', 'SG']);
    expect(REGIONS_IN_WORDS).toBe('US, EU or SG');
  });

  it('give each role its own host, and find the region back from it', () => {
    expect(regionOrigin('EU', 'api')).toBe('https://api.emea-1.jumio.ai');
    expect(regionOfOrigin('https://retrieval.apac-1.jumio.ai', 'retrieval')).toBe('SG');
    expect(regionOfOrigin('https://retrieval.apac-1.jumio.ai', 'api')).toBeUndefined();
    expect([isRegion('US'), isRegion('us'), isRegion('toString'), isRegion(undefined)]).toEqual([
      true,
      false,
      false,
      false,
    ]);
    // Only a string names a region, not whatever turns into one.
    expect(isRegion({ toString: () => 'US' })).toBe(false);
    expect(byRegion('auth')).toEqual({
      US: 'https://auth.amer-1.jumio.ai',
      EU: 'https://auth.emea-1.jumio.ai',
      SG: 'https://auth.apac-1.jumio.ai',
    });
    expect(byRegion('auth', '/oauth2/token').EU).toBe('https://auth.emea-1.jumio.ai/oauth2/token');
  });
});
