export declare const PROMETHEUS: string;
export declare const PROMTOOL: string;
/** Both binaries are present; with CI set a missing one throws. */
export declare function prometheusAvailable(): boolean;
export declare function promtool(
  args: string[],
  cwd?: string,
  input?: string,
): Promise<{ code: number | null; output: string }>;

export interface PrometheusResult {
  metric: Record<string, string>;
  value?: [number, string];
  values?: [number, string][];
}

export interface RunningPrometheus {
  url: string;
  query(expr: string, time?: number): Promise<PrometheusResult[]>;
  queryRange(expr: string, start: number, end: number, step?: number): Promise<PrometheusResult[]>;
  alerts(): Promise<{ labels: Record<string, string>; state: string; activeAt: string }[]>;
  stop(): void;
}

export declare function startPrometheus(options: {
  targets: string[];
  ruleFiles: string[];
}): Promise<RunningPrometheus>;
