/**
 * The embedded workflow engine's shard layout (`DurableRuns.layerEngineEmbedded`), the
 * cluster's settings (`DurableRuns.clusterConfig`), and the log lines of a run's end and of the shutdown grace.
 *
 * @internal
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { RunEvent } from "../../RunEvent.js"

/** The embedded engine's shards per group (the cluster's default is 300). */
export const shards = 1

/**
 * Moves the stored messages of a file written with another shard count (the
 * cluster's default 300, which this engine used before) to the shard their
 * entity has now: a message is polled by its
 * `shard_id`, so a run left in flight under the old count would never resume.
 * The cluster's shard of an entity is `hash(entity id) % shards + 1`; with
 * one shard every message of the group `default` goes to `default:1`.
 */
export const reshard: Effect.Effect<void, SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    sql.onDialectOrElse({
      sqlite: () =>
        sql<{ n: number }>`SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'cluster_messages'`,
      orElse: () =>
        sql<{ n: number }>`SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_name = 'cluster_messages'`
    }).pipe(
      Effect.flatMap((rows) =>
        Number(rows[0]?.n ?? 0) === 0 ? Effect.void : sql`UPDATE cluster_messages SET shard_id = 'default:1'
        WHERE shard_id LIKE 'default:%' AND shard_id <> 'default:1'`
      ),
      Effect.asVoid
    )
)

export const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`

/** The log line of a run's end: what it cost. */
export const endLine = (
  runId: string,
  conversationId: string,
  status: "done" | "cancelled" | "failed",
  done: Extract<RunEvent, { _tag: "Done" }>,
  retries: number,
  seconds: number
): string =>
  `run ${runId} ${status} (conversation ${conversationId}): ${
    [
      plural(done.iterations, "iteration"),
      `${done.usage.total_tokens} tokens`,
      plural(done.usage.llm_calls, "LLM call"),
      ...(retries === 0 ? [] : [retries === 1 ? "1 LLM retry" : `${retries} LLM retries`]),
      `${seconds.toFixed(2)} s`
    ].join(", ")
  }`

/** The log line of a shutdown's grace: what the tool calls in flight did. */
export const shutdownLine = (inFlight: number, left: number, waitedMs: number, graceMs: number): string =>
  `shutdown: ${plural(inFlight - left, "tool call")} of ${inFlight} in flight finished in ${
    (waitedMs / 1000).toFixed(2)
  } s` +
  (left === 0
    ? ""
    : `; ${
      plural(left, "call")
    } still running at the end of the grace (SHUTDOWN_GRACE_MS=${graceMs}), cut by the shutdown like a crash`)

/** `DurableRuns.clusterConfig`: the cluster's settings for several instances, validated. */
export const clusterConfig = Config.all({
  host: Config.string("CLUSTER_HOST").pipe(Config.withDefault("127.0.0.1")),
  port: Config.integer("CLUSTER_PORT").pipe(
    Config.validate({
      message: "CLUSTER_PORT must be an integer between 1 and 65535",
      validation: (n) => n >= 1 && n <= 65535
    }),
    Config.withDefault(34431)
  ),
  expiration: Config.integer("CLUSTER_SHARD_LOCK_EXPIRATION_MS").pipe(
    Config.validate({ message: "CLUSTER_SHARD_LOCK_EXPIRATION_MS must be >= 1000", validation: (n) => n >= 1000 }),
    Config.withDefault(10_000)
  ),
  refresh: Config.integer("CLUSTER_SHARD_LOCK_REFRESH_MS").pipe(
    Config.validate({ message: "CLUSTER_SHARD_LOCK_REFRESH_MS must be >= 100", validation: (n) => n >= 100 }),
    Config.withDefault(3000)
  )
}).pipe(
  Config.validate({
    message: "CLUSTER_SHARD_LOCK_REFRESH_MS must be below CLUSTER_SHARD_LOCK_EXPIRATION_MS",
    validation: ({ expiration, refresh }) => refresh < expiration
  }),
  Config.map(({ expiration, host, port, refresh }) => ({
    host,
    port,
    shardLockExpiration: Duration.millis(expiration),
    shardLockRefresh: Duration.millis(refresh)
  }))
)
