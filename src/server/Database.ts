/**
 * The server's database: one `SqlClient` for the conversations, the run log and
 * the workflow engine's storage. The embedded default is a SQLite file
 * (`DATABASE_PATH`); `DATABASE_URL=postgres://…` moves everything to PostgreSQL,
 * which several server instances share.
 *
 * @since 0.1.0
 */
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { mkdirSync } from "node:fs"
import { dirname } from "node:path"

/**
 * @since 0.1.0
 * @category errors
 */
export class DatabaseError extends Schema.TaggedError<DatabaseError>()("DatabaseError", { message: Schema.String }) {}

/**
 * Where the data lives.
 *
 * @since 0.1.0
 * @category models
 */
export type Location =
  | {
    readonly _tag: "Sqlite"
    readonly filename: string
    /** `PRAGMA synchronous` in WAL mode (default `NORMAL`; see `Synchronous`). */
    readonly synchronous?: Synchronous | undefined
  }
  | { readonly _tag: "Postgres"; readonly url: Redacted.Redacted<string> }

/**
 * How a SQLite commit reaches the disk (the file is in WAL mode):
 *
 * - `NORMAL` (default): a commit is appended to the WAL and handed to the
 *   operating system, which is fsync'd at checkpoints. A process crash
 *   (`kill -9`, out of memory) loses nothing that was committed; a power cut
 *   or an operating-system crash may lose the last commits (the file stays
 *   consistent): the steps they stored run again after the reboot.
 * - `FULL`: every commit is fsync'd before it returns — also a power cut loses
 *   nothing committed — at the cost of one fsync per commit (a stored loop
 *   iteration commits about fifteen times).
 *
 * Without the pragma, better-sqlite3's build gives `FULL` to the connection
 * that turns a new file to WAL and `NORMAL` to every later one (its
 * `SQLITE_DEFAULT_WAL_SYNCHRONOUS=1`): a server ran `FULL` until its first
 * restart, then `NORMAL`. The setting is now explicit.
 *
 * @since 0.1.0
 * @category models
 */
export type Synchronous = "NORMAL" | "FULL"

/**
 * `SQLITE_SYNCHRONOUS`: `NORMAL` (default) or `FULL` (see `Synchronous`).
 *
 * @since 0.1.0
 * @category config
 */
export const synchronous: Config.Config<Synchronous> = Config.literal("NORMAL", "FULL")("SQLITE_SYNCHRONOUS").pipe(
  Config.withDefault<Synchronous>("NORMAL")
)

/**
 * `DATABASE_URL` (a `postgres://` or `postgresql://` URL) when set, else the
 * SQLite file `DATABASE_PATH` (default `./data/react-engine.sqlite`).
 *
 * @since 0.1.0
 * @category config
 */
export const location: Config.Config<Location> = Config.all({
  url: Config.option(Config.redacted("DATABASE_URL")),
  path: Config.string("DATABASE_PATH").pipe(Config.withDefault("./data/react-engine.sqlite")),
  synchronous
}).pipe(
  Config.validate({
    message: "DATABASE_URL must be a postgres:// or postgresql:// URL",
    validation: ({ url }) =>
      Option.isNone(url) || Redacted.value(url.value).trim() === "" ||
      /^postgres(ql)?:\/\//i.test(Redacted.value(url.value).trim())
  }),
  Config.map(({ path, synchronous, url }): Location =>
    Option.isSome(url) && Redacted.value(url.value).trim() !== ""
      ? { _tag: "Postgres", url: url.value }
      : { _tag: "Sqlite", filename: path, synchronous }
  )
)

/**
 * A printable name of a location (no credentials).
 *
 * @since 0.1.0
 * @category utils
 */
export const describe = (where: Location): string => {
  if (where._tag === "Sqlite") return where.filename
  try {
    const url = new URL(Redacted.value(where.url))
    return `postgres://${url.hostname}${url.port ? `:${url.port}` : ""}${url.pathname}`
  } catch {
    return "postgres"
  }
}

/** What the driver said (refused, timed out, authentication failed), after the client's own message. */
const causeOf = (error: { readonly cause?: unknown }): string =>
  error.cause instanceof Error && error.cause.message !== "" ? ` (${error.cause.message})` : ""

/**
 * The `SqlClient` of a location (a SQLite file's directory is created; `:memory:` works too).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (where: Location): Layer.Layer<SqlClient.SqlClient, DatabaseError> => {
  if (where._tag === "Postgres") {
    // loaded only for PostgreSQL: the embedded default needs no `@effect/sql-pg` installed; `@effect/sql-pg`
    // over a pool whose connections are not cancelled by process id (internal/database.ts says why)
    return Layer.unwrapEffect(
      Effect.tryPromise({
        try: () => import("./internal/database.js"),
        catch: () =>
          new DatabaseError({
            message: "DATABASE_URL is a PostgreSQL URL but @effect/sql-pg is not installed: npm install @effect/sql-pg"
          })
      }).pipe(Effect.map((internal) => internal.pgLayer(where.url, "effect-react-engine")))
    ).pipe(
      Layer.mapError((e) =>
        e instanceof DatabaseError
          ? e
          : new DatabaseError({ message: `cannot connect to ${describe(where)}: ${e.message}${causeOf(e)}` })
      )
    )
  }
  const filename = where.filename
  // one connection (the client's): the pragma holds for everything this process writes
  const pragma = Layer.effectDiscard(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`PRAGMA synchronous = ${where.synchronous ?? "NORMAL"}`))
  )
  return Layer.unwrapEffect(Effect.try({
    try: () => {
      if (filename !== ":memory:") mkdirSync(dirname(filename), { recursive: true })
      return Layer.provideMerge(pragma, SqliteClient.layer({ filename }))
    },
    catch: (e) => new DatabaseError({ message: `cannot create the directory of ${filename}: ${String(e)}` })
  })).pipe(
    Layer.mapError((
      e
    ) => (e instanceof DatabaseError ? e : new DatabaseError({ message: `cannot open ${filename}: ${String(e)}` })))
  )
}

/**
 * The database from the environment (see `location`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<SqlClient.SqlClient, DatabaseError | ConfigError.ConfigError> = Layer
  .unwrapEffect(
    Effect.map(location, layer)
  )
