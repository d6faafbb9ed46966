/**
 * The server's attachments, in the run database (SQLite or PostgreSQL):
 * content-addressed by the SHA-256 of their bytes, one row per distinct
 * content however often it is uploaded or sent (`react_attachments`), and the
 * attachments each run was given (`react_run_attachments`: what
 * `GET /api/conversations/:id`, the next turn's history and a fork read back).
 * Its own migrations (`react_engine_attachments_migrations`). The bytes are
 * written before the upload is answered or the run starts, so a process killed
 * right after loses nothing: the run reads them when it builds a model request.
 *
 * Provides the library's `Attachments` (what the models read the bytes from)
 * and `RunAttachments`.
 *
 * @since 0.1.0
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Attachments from "../Attachments.js"
import type { FileRef } from "../Message.js"
import * as RunAttachmentRows from "./internal/runAttachments.js"
import * as ServerConfig from "./ServerConfig.js"

/**
 * The migrations (table `react_engine_attachments_migrations`).
 *
 * @since 0.1.0
 * @category migrations
 */
export const migrations = {
  "1_create_attachments": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const bytes = sql.onDialectOrElse({ pg: () => sql.literal("BYTEA"), orElse: () => sql.literal("BLOB") })
    yield* sql`CREATE TABLE IF NOT EXISTS react_attachments (
      sha256 TEXT PRIMARY KEY,
      media_type TEXT NOT NULL,
      size INTEGER NOT NULL,
      name TEXT NOT NULL,
      width INTEGER,
      height INTEGER,
      pages INTEGER,
      data ${bytes} NOT NULL,
      created_at TEXT NOT NULL
    )`
    yield* sql`CREATE TABLE IF NOT EXISTS react_run_attachments (
      run_id TEXT NOT NULL,
      position INTEGER NOT NULL,
      ref TEXT NOT NULL,
      PRIMARY KEY (run_id, position)
    )`
  })
}

/**
 * The attachments each run was given.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunAttachmentsService {
  /** Records a run's attachments (once: recording them again changes nothing). */
  readonly link: (runId: string, refs: ReadonlyArray<FileRef>) => Effect.Effect<void, Attachments.AttachmentError>
  /** The attachments of each of these runs (runs without any are absent). */
  readonly ofRuns: (
    runIds: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyMap<string, ReadonlyArray<FileRef>>, Attachments.AttachmentError>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class RunAttachments
  extends Context.Tag("effect-react-engine/RunAttachments")<RunAttachments, RunAttachmentsService>()
{}

interface Row {
  readonly sha256: string
  readonly media_type: string
  readonly size: number | string
  readonly name: string
  readonly width: number | string | null
  readonly height: number | string | null
  readonly pages: number | string | null
}

const refOf = (row: Row): FileRef => ({
  name: row.name,
  media_type: row.media_type,
  size: Number(row.size),
  sha256: row.sha256,
  ...(row.width !== null && row.height !== null ? { width: Number(row.width), height: Number(row.height) } : {}),
  ...(row.pages !== null ? { pages: Number(row.pages) } : {})
})

const failed = (what: string) => (e: { readonly message: string }) =>
  new Attachments.AttachmentError({ code: "storage_failed", message: `${what}: ${e.message}` })

/** Runs the migrations over the `SqlClient` in context. */
const migrate = Migrator.make({})({
  loader: Migrator.fromRecord(migrations),
  table: "react_engine_attachments_migrations"
})

/**
 * Both services over the `SqlClient` in context (runs the migrations first).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (maxBytes: number): Effect.Effect<
  { readonly attachments: Attachments.AttachmentsService; readonly runs: RunAttachmentsService },
  Attachments.AttachmentError,
  SqlClient.SqlClient
> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* Effect.mapError(migrate, failed("attachment migrations failed"))
    const stat = (sha256: string) =>
      sql<
        Row
      >`SELECT sha256, media_type, size, name, width, height, pages FROM react_attachments WHERE sha256 = ${sha256}`
        .pipe(
          Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), refOf)),
          Effect.mapError(failed("reading an attachment failed"))
        )
    const attachments: Attachments.AttachmentsService = {
      maxBytes,
      stat,
      put: (bytes, options) =>
        Effect.gen(function*() {
          const checked = Attachments.inspect(bytes, { ...options, maxBytes })
          if (Either.isLeft(checked)) return yield* checked.left
          const ref = checked.right
          // the same bytes are one row: the first upload's name stays the stored one
          yield* sql`INSERT INTO react_attachments (sha256, media_type, size, name, width, height, pages, data, created_at)
            VALUES (${ref.sha256 as string}, ${ref.media_type}, ${bytes.length}, ${ref.name}, ${ref.width ?? null},
              ${ref.height ?? null}, ${ref.pages ?? null}, ${
            Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
          },
              ${new Date().toISOString()})
            ON CONFLICT (sha256) DO NOTHING`.pipe(Effect.mapError(failed("storing an attachment failed")))
          if (Attachments.cleanName(options?.name) !== undefined) return ref
          return Option.getOrElse(yield* stat(ref.sha256 as string), () => ref)
        }),
      get: (sha256) =>
        sql<Row & { readonly data: Uint8Array }>`SELECT sha256, media_type, size, name, width, height, pages, data
          FROM react_attachments WHERE sha256 = ${sha256}`.pipe(
          Effect.mapError(failed("reading an attachment failed")),
          Effect.flatMap((rows) => {
            const row = rows[0]
            return row === undefined
              ? Effect.fail(Attachments.notFound(sha256))
              : Effect.succeed({ ref: refOf(row), bytes: new Uint8Array(row.data) })
          })
        )
    }
    const runs: RunAttachmentsService = {
      link: (runId, refs) =>
        Effect.forEach(refs, (ref, position) =>
          sql`INSERT INTO react_run_attachments (run_id, position, ref) VALUES (${runId}, ${position}, ${
            JSON.stringify(ref)
          })
            ON CONFLICT (run_id, position) DO NOTHING`, { discard: true }).pipe(
            Effect.mapError(failed("recording a run's attachments failed"))
          ),
      ofRuns: (runIds) =>
        RunAttachmentRows.ofRuns(sql, runIds)
    }
    return { attachments, runs }
  })

/**
 * `Attachments` and `RunAttachments` over the `SqlClient` in context, limited to
 * `REACT_MAX_ATTACHMENT_BYTES` (`ServerConfig.maxAttachmentBytes`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<
  Attachments.Attachments | RunAttachments,
  Attachments.AttachmentError,
  SqlClient.SqlClient | ServerConfig.ServerConfig
> = Layer.effectContext(
  Effect.gen(function*() {
    const settings = yield* ServerConfig.ServerConfig
    const { attachments, runs } = yield* make(settings.maxAttachmentBytes)
    return Context.make(Attachments.Attachments, attachments).pipe(Context.add(RunAttachments, runs))
  })
)

/**
 * Records a run's attachments (idempotent: a run replayed after a crash records
 * them again to no effect). A failure is logged: the run goes on, only the
 * conversation's record of its files is missing.
 *
 * @since 0.1.0
 * @category utils
 */
export const record = (runId: string, refs: ReadonlyArray<FileRef>): Effect.Effect<void, never, RunAttachments> =>
  Effect.flatMap(RunAttachments, (runs) => runs.link(runId, refs)).pipe(
    Effect.catchAll((error) => Effect.logWarning(`run ${runId}: ${error.message}`))
  )
