export declare const REDIS_SERVER: string;
export declare const REDIS_CLI: string;
export declare function redisAvailable(): boolean;
export interface RedisServerProcess {
  port: number;
  url: string;
  stop(): Promise<void>;
  pause(): void;
  resume(): void;
  restart(downMs?: number, options?: { kill?: boolean }): Promise<void>;
}
export declare function startRedis(options?: { args?: string[] }): Promise<RedisServerProcess>;
export declare function startRedisCluster(masters?: number): Promise<{
  nodes: RedisServerProcess[];
  rootNodes: Array<{ url: string }>;
  stop(): Promise<unknown>;
}>;
export declare function startRedisSentinel(): Promise<{
  master: RedisServerProcess;
  replica: RedisServerProcess;
  sentinels: Array<{ host: string; port: number }>;
  name: string;
  /** The port of the master the Sentinel names now. */
  masterPort(): Promise<number>;
  /** SENTINEL FAILOVER; resolves once the Sentinel names the replica as master. */
  failover(): Promise<void>;
  stop(): Promise<unknown>;
}>;
