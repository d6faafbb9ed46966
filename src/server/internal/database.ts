/**
 * The PostgreSQL client of `Database.layer`: `@effect/sql-pg` over a `pg` pool whose
 * connections are never cancelled by process id.
 *
 * Why. `@effect/sql-pg` 0.53 (the last of the Effect 3 line) cancels the statement of an
 * interrupted fiber with `SELECT pg_cancel_backend(<backend pid>)`, sent through the same
 * pool. That statement may wait for a free connection; meanwhile the interrupted statement
 * finishes, its connection goes back to the pool and serves another fiber's statement —
 * which the cancel then hits: "canceling statement due to user request", a failed
 * statement in a fiber nobody interrupted. Seen on two instances under load, when fifty
 * SSE clients hung up at once (their followers interrupted while reading): the workflow
 * engine's storage failed two runs (`PersistenceError`, the runs ended with an internal
 * error), and a run's start was answered 500.
 *
 * The pool's connections here do not expose their backend's process id, which is what
 * `@effect/sql-pg` cancels by: an interrupted statement is left to finish (ours take
 * milliseconds); its connection returns to the pool at once and serves the next statement
 * after it (a `pg` connection runs its statements one after another), and an interrupted
 * statement inside a transaction is followed by the transaction's `ROLLBACK` on the same
 * connection. test/server/pgCancel.test.ts reproduces the stray cancel.
 *
 * @internal
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import type * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { createRequire } from "node:module"

/** What is used of `pg` (it ships no types of its own; `@types/pg` is not a dependency). */
interface Pg {
  readonly Pool: new(options: Record<string, unknown>) => PgPool
  readonly Client: new(options: unknown) => object
}
interface PgPool {
  query(text: string): Promise<unknown>
  end(): Promise<void>
  on(event: "error", listener: (error: Error) => void): unknown
}

/**
 * `pg` as `@effect/sql-pg` resolves it (its dependency, not ours: a project that installs
 * `@effect/sql-pg` has it there, hoisted or not).
 */
const loadPg = (): Pg => {
  const here = createRequire(import.meta.url)
  return createRequire(here.resolve("@effect/sql-pg/PgClient"))("pg") as Pg
}

/** `pg`'s client with its backend process id kept to itself (see above). */
const withoutCancel = (Client: Pg["Client"]): Pg["Client"] =>
  class extends Client {
    constructor(options: unknown) {
      super(options)
      // `pg` sets it when the server sends its key data; `@effect/sql-pg` cancels by it
      Object.defineProperty(this, "processID", {
        configurable: true,
        enumerable: false,
        get: () => undefined,
        set: () => undefined
      })
    }
  }

const CONNECT_TIMEOUT_MS = 5000

/**
 * A `SqlClient` (and `PgClient`) on PostgreSQL at `url`: checked with `SELECT 1` when built,
 * ended when its scope closes.
 */
export const pgLayer = (
  url: Redacted.Redacted<string>,
  applicationName: string
): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, SqlError> =>
  PgClient.layerFromPool({
    applicationName,
    acquire: Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          const pg = loadPg()
          const pool = new pg.Pool({
            connectionString: Redacted.value(url),
            application_name: applicationName,
            Client: withoutCancel(pg.Client)
          })
          // a connection that breaks while idle is dropped by the pool; without a listener it would crash the process
          pool.on("error", () => undefined)
          try {
            // within 5 s, as `PgClient.make` checks it (a server that never answers)
            let timer: NodeJS.Timeout | undefined
            await Promise.race([
              pool.query("SELECT 1"),
              new Promise((_, reject) => {
                timer = setTimeout(() => reject(new Error("Connection timed out")), CONNECT_TIMEOUT_MS)
              })
            ]).finally(() => clearTimeout(timer))
          } catch (cause) {
            // not awaited: a connection still waiting for a server that never answers would hold it
            pool.end().catch(() => undefined)
            throw cause
          }
          return pool
        },
        catch: (cause) => new SqlError({ cause, message: "PgClient: Failed to connect" })
      }),
      (pool) => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
    )
  })
