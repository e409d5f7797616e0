import type { Emulator } from '../../src/emulator/index.js';
import type {
  DeviceRiskClient,
  DeviceRiskClientOptions,
  DeviceRiskHandler,
  DeviceRiskHandlerOptions,
  TokenSource,
  TokenSourceOptions,
} from '../../src/server/index.js';
import type * as Kit from '../../src/server/index.js';

/** The kit's factories the assembly calls: the sources, or the packed tarball's module. */
export type KitModule = Pick<typeof Kit, 'createTokenSource' | 'createDeviceRiskClient' | 'createDeviceRiskHandler'>;
export type EmulatedClientOptions = Partial<Omit<DeviceRiskClientOptions, 'tokenSource'>> & {
  tokenSource?: Partial<TokenSourceOptions>;
};
export type EmulatedHandlerOptions = Partial<Omit<DeviceRiskHandlerOptions, 'client'>> &
  Pick<DeviceRiskHandlerOptions, 'resolveCustomer'> & { client?: EmulatedClientOptions | DeviceRiskClient };

export declare const SHOP: string;
export declare const UA: string;
export declare const BLACKBOX: string;
export declare function emulatedTokenSource(
  kit: Pick<typeof Kit, 'createTokenSource'>,
  emulator: Emulator,
  options?: Partial<TokenSourceOptions>,
): TokenSource;
export declare function emulatedClient(
  kit: KitModule,
  emulator: Emulator,
  options?: EmulatedClientOptions,
): DeviceRiskClient;
export declare function checkoutHandler(
  kit: KitModule,
  options: Partial<DeviceRiskHandlerOptions> & Pick<DeviceRiskHandlerOptions, 'client' | 'resolveCustomer'>,
): DeviceRiskHandler;
export declare function emulatedHandler(
  kit: KitModule,
  emulator: Emulator,
  options: EmulatedHandlerOptions,
): DeviceRiskHandler;
