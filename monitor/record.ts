/** One update's metrics, as metrics.jsonl, the Redis stream and TensorBoard hold it (TRL names). */
export type MetricsRecord = Record<string, number | string>;
