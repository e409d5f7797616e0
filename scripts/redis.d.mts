export declare const REDIS_SERVER: string;
export declare function redisAvailable(): boolean;
export declare function startRedis(): Promise<{
  port: number;
  url: string;
  stop(): Promise<void>;
  pause(): void;
  resume(): void;
  restart(downMs?: number): Promise<void>;
}>;
