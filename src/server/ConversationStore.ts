/**
 * Conversations persisted in SQLite (`@effect/sql` + `@effect/sql-sqlite-node`):
 * one row per conversation and one per turn (the user's query, the loop's
 * messages — every tool call with its tool message — and the synthesized answer).
 * The schema is created by `@effect/sql`'s Migrator at start-up.
 *
 * @since 0.1.0
 */
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { mkdirSync } from "node:fs"
import { dirname } from "node:path"
import type { ChatMessage } from "../Message.js"
import * as Message from "../Message.js"
import * as Migrations from "./internal/conversationMigrations.js"
import * as Users from "./internal/conversationUsers.js"
import * as RunAttachments from "./internal/runAttachments.js"
import { decodeColumn, encodeColumn } from "./internal/storableText.js"
import * as ServerConfig from "./ServerConfig.js"

/**
 * Storage failure (the database could not be read or written).
 *
 * @since 0.1.0
 * @category errors
 */
export class StoreError extends Schema.TaggedError<StoreError>()("StoreError", { message: Schema.String }) {}

/**
 * A finished turn to store.
 *
 * @since 0.1.0
 * @category models
 */
export interface TurnRecord {
  readonly conversationId: string
  readonly query: string
  readonly answer: string
  /** The loop's messages of this turn (assistant tool calls and tool results), without the query. */
  readonly messages: ReadonlyArray<ChatMessage>
  readonly usage?: unknown
  /** `completed`, `failed` or `cancelled`. */
  readonly status: "completed" | "failed" | "cancelled"
  /** The run that made it. */
  readonly runId?: string
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ConversationSummary {
  readonly id: string
  readonly title: string
  readonly created_at: string
  readonly updated_at: string
  readonly turns: number
}

/**
 * @since 0.1.0
 * @category models
 */
export interface StoredTurn {
  readonly turn: number
  readonly query: string
  readonly answer: string
  readonly status: string
  readonly usage: unknown
  readonly created_at: string
  /** The run that made it (null for a turn stored before runs had ids). A fork's copied turns keep their run's id. */
  readonly run_id: string | null
  /** The query's attachments, by hash (`{name, media_type, size, sha256}`; `url` for a caller's image URL). */
  readonly attachments?: ReadonlyArray<ReturnType<typeof RunAttachments.summary>>
}

/**
 * Where a fork comes from (`POST /api/conversations/:id/fork`).
 *
 * @since 0.1.0
 * @category models
 */
export interface ForkOrigin {
  readonly conversation_id: string
  readonly run_id: string
  /** The event id of that run the fork was made at. */
  readonly at: number
  /** The original conversation's title when the fork was made. */
  readonly title: string
  /** The step of event `at`, for people ("step 2 · calculator", "the answer"). */
  readonly step: string
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ConversationDetail extends ConversationSummary {
  /** Every stored message, oldest first: per turn the query, the loop's messages, the answer. */
  readonly messages: ReadonlyArray<ChatMessage>
  readonly turn_details: ReadonlyArray<StoredTurn>
  /** Set on a fork: the conversation, run and event it was made from. */
  readonly forked_from: ForkOrigin | null
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ConversationStoreService {
  readonly exists: (id: string) => Effect.Effect<boolean, StoreError>
  /**
   * Stores the conversation (no turns yet, titled by `query`) when it is not stored: a
   * conversation exists from its first run's first event (GET answers, a fork answers
   * 409 `run_in_progress` while that run goes on).
   */
  readonly open: (id: string, query: string) => Effect.Effect<void, StoreError>
  /** Earlier turns as `history` for the next run: the query and the answer of each turn. */
  readonly history: (id: string) => Effect.Effect<ReadonlyArray<ChatMessage>, StoreError>
  /**
   * Stores a turn as the conversation's next one. A turn with a run id is
   * stored once: appending it again (the run's last step re-run after a crash)
   * changes nothing.
   */
  readonly appendTurn: (turn: TurnRecord) => Effect.Effect<void, StoreError>
  /** Most recently updated first. */
  readonly list: (
    options?: { readonly limit?: number }
  ) => Effect.Effect<ReadonlyArray<ConversationSummary>, StoreError>
  readonly get: (id: string) => Effect.Effect<Option.Option<ConversationDetail>, StoreError>
  /**
   * Creates conversation `id` as a fork of `origin.conversation_id`: its first
   * `turns` turns copied (with their run ids), its origin recorded. The
   * original is only read.
   */
  readonly fork: (
    options: { readonly id: string; readonly origin: ForkOrigin; readonly turns: number }
  ) => Effect.Effect<void, StoreError>
  /** The conversation's user (docs/memory.md): none without such a conversation, `null` when it belongs to nobody. */
  readonly owner: (id: string) => Effect.Effect<Option.Option<string | null>, StoreError>
  /**
   * True when a run of `userId` (undefined: of nobody) may continue conversation
   * `id`; a new conversation with a user id is created as that user's (titled by `query`).
   */
  readonly claim: (id: string, userId: string | undefined, query: string) => Effect.Effect<boolean, StoreError>
  /** The user's conversations. */
  readonly ofUser: (userId: string) => Effect.Effect<ReadonlyArray<string>, StoreError>
  /** Deletes conversations and their turns. */
  readonly remove: (ids: ReadonlyArray<string>) => Effect.Effect<void, StoreError>
}

/**
 * Length of a conversation title (the first query, cut).
 *
 * @since 0.1.0
 * @category constants
 */
export const TITLE_CHARS = 80

const title = (query: string): string => {
  const line = query.replace(/\s+/g, " ").trim()
  return line.length <= TITLE_CHARS ? line : `${line.slice(0, TITLE_CHARS - 1)}…`
}

// The schema migrations, defined beside this module (their docs are there)
export { migrations } from "./internal/conversationMigrations.js"

const decodeMessages = Schema.decodeUnknownEither(Schema.parseJson(Schema.Array(Message.ChatMessage)))

interface TurnRow {
  readonly turn: number
  readonly query: string
  readonly answer: string
  readonly answer_json: string | null
  readonly messages: string
  readonly usage: string | null
  readonly status: string
  readonly created_at: string
  readonly run_id: string | null
}

interface ConversationRow {
  readonly id: string
  readonly title: string
  readonly created_at: string
  readonly updated_at: string
  readonly turns: number
  readonly forked_from?: string | null
}

const runIdsOf = (rows: ReadonlyArray<{ readonly run_id: string | null }>): ReadonlyArray<string> =>
  rows.flatMap((row) => (row.run_id === null ? [] : [row.run_id]))

const storeError = (what: string) => (cause: unknown) =>
  new StoreError({ message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}` })

/**
 * The store over the `SqlClient` in context (runs the migrations first).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<ConversationStoreService, StoreError, SqlClient.SqlClient> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* Migrations.run.pipe(Effect.mapError(storeError("database migration failed")))

  const turnsOf = (id: string) =>
    sql<TurnRow>`SELECT turn, query, answer, answer_json, messages, usage, status, created_at, run_id FROM turns
      WHERE conversation_id = ${id} ORDER BY turn`

  const service: ConversationStoreService = {
    exists: (id) =>
      sql<{ n: number }>`SELECT COUNT(*) AS n FROM conversations WHERE id = ${id}`.pipe(
        Effect.map((rows) => (rows[0]?.n ?? 0) > 0),
        Effect.mapError(storeError("reading the conversation failed"))
      ),
    open: (id, query) =>
      Effect.suspend(() => {
        const now = new Date().toISOString()
        return sql`INSERT INTO conversations (id, title, created_at, updated_at, turns)
          VALUES (${id}, ${title(query)}, ${now}, ${now}, 0) ON CONFLICT (id) DO NOTHING`
      }).pipe(Effect.asVoid, Effect.mapError(storeError("storing the conversation failed"))),
    history: (id) =>
      sql<{ query: string; answer: string; answer_json: string | null; run_id: string | null }>`SELECT query, answer,
        answer_json, run_id FROM turns WHERE conversation_id = ${id} ORDER BY turn`.pipe(
        // each turn's query with the attachments its run was given (by reference)
        Effect.flatMap((rows) =>
          Effect.map(RunAttachments.ofRuns(sql, runIdsOf(rows)), (files) =>
            rows.flatMap((row) => [
              RunAttachments.userMessage(row.query, files.get(row.run_id ?? "")),
              Message.assistant(decodeColumn(row.answer, row.answer_json))
            ]))
        ),
        Effect.mapError(storeError("reading the conversation history failed"))
      ),
    appendTurn: (turn) =>
      sql.withTransaction(Effect.gen(function*() {
        const now = new Date().toISOString()
        yield* sql`INSERT INTO conversations (id, title, created_at, updated_at, turns)
          VALUES (${turn.conversationId}, ${title(turn.query)}, ${now}, ${now}, 0)
          ON CONFLICT (id) DO NOTHING`
        // the same statement tells whether this run's turn is stored already
        const rows = yield* sql<{ n: number; stored: number | string }>`SELECT COALESCE(MAX(turn), 0) AS n,
          COUNT(CASE WHEN run_id = ${turn.runId ?? null} THEN 1 END) AS stored
          FROM turns WHERE conversation_id = ${turn.conversationId}`
        if (Number(rows[0]?.stored ?? 0) > 0) return
        const next = (rows[0]?.n ?? 0) + 1
        const answer = encodeColumn(turn.answer)
        yield* sql`INSERT INTO turns (conversation_id, turn, query, answer, answer_json, messages, usage, status, created_at,
            run_id)
          VALUES (${turn.conversationId}, ${next}, ${turn.query}, ${answer.text}, ${answer.json}, ${
          JSON.stringify(turn.messages)
        },
            ${turn.usage === undefined ? null : JSON.stringify(turn.usage)}, ${turn.status}, ${now}, ${
          turn.runId ?? null
        })`
        yield* sql`UPDATE conversations SET updated_at = ${now}, turns = ${next} WHERE id = ${turn.conversationId}`
      })).pipe(Effect.mapError(storeError("saving the turn failed"))),
    list: (options) =>
      sql<ConversationRow>`SELECT id, title, created_at, updated_at, turns FROM conversations
        ORDER BY updated_at DESC LIMIT ${options?.limit ?? 200}`.pipe(
        Effect.map((rows) => rows.map((row) => ({ ...row }))),
        Effect.mapError(storeError("listing conversations failed"))
      ),
    get: (id) =>
      Effect.gen(function*() {
        const rows = yield* sql<
          ConversationRow
        >`SELECT id, title, created_at, updated_at, turns, forked_from FROM conversations
          WHERE id = ${id}`
        const found = rows[0]
        if (found === undefined) return Option.none()
        const { forked_from, ...row } = found
        const turns = yield* turnsOf(id)
        const files = yield* RunAttachments.ofRuns(sql, runIdsOf(turns))
        const messages: Array<ChatMessage> = []
        const details: Array<StoredTurn> = []
        for (const t of turns) {
          const answer = decodeColumn(t.answer, t.answer_json)
          const attached = files.get(t.run_id ?? "")
          messages.push(RunAttachments.userMessage(t.query, attached))
          const loop = decodeMessages(t.messages)
          if (loop._tag === "Right") { for (const m of loop.right) messages.push(m) }
          messages.push(Message.assistant(answer))
          details.push({
            turn: t.turn,
            query: t.query,
            answer,
            status: t.status,
            usage: t.usage === null ? null : JSON.parse(t.usage),
            created_at: t.created_at,
            run_id: t.run_id ?? null,
            ...(attached !== undefined ? { attachments: attached.map(RunAttachments.summary) } : {})
          })
        }
        const origin = forked_from === null || forked_from === undefined ? null : JSON.parse(forked_from) as ForkOrigin
        return Option.some({ ...row, messages, turn_details: details, forked_from: origin })
      }).pipe(Effect.mapError(storeError("reading the conversation failed"))),
    fork: ({ id, origin, turns }) =>
      sql.withTransaction(Effect.gen(function*() {
        const now = new Date().toISOString()
        // a fork belongs to the original's user
        yield* sql`INSERT INTO conversations (id, title, created_at, updated_at, turns, forked_from, user_id)
          VALUES (${id}, ${title(`${origin.title} (fork)`)}, ${now}, ${now}, ${turns}, ${JSON.stringify(origin)},
            (SELECT user_id FROM conversations WHERE id = ${origin.conversation_id}))`
        yield* sql`INSERT INTO turns (conversation_id, turn, query, answer, answer_json, messages, usage, status, created_at, run_id)
          SELECT ${id}, turn, query, answer, answer_json, messages, usage, status, created_at, run_id FROM turns
          WHERE conversation_id = ${origin.conversation_id} AND turn <= ${turns}`
      })).pipe(Effect.mapError(storeError("creating the fork failed"))),
    owner: (id) => Users.owner(sql, id).pipe(Effect.mapError(storeError("reading the conversation failed"))),
    claim: (id, userId, query) =>
      Users.claim(sql, id, userId, title(query)).pipe(Effect.mapError(storeError("reading the conversation failed"))),
    ofUser: (userId) =>
      Users.ofUser(sql, userId).pipe(Effect.mapError(storeError("listing the user's conversations failed"))),
    remove: (ids) => Users.remove(sql, ids).pipe(Effect.mapError(storeError("deleting conversations failed")))
  }
  return service
})

/**
 * @since 0.1.0
 * @category Context
 */
export class ConversationStore extends Context.Tag("effect-react-engine/ConversationStore")<
  ConversationStore,
  ConversationStoreService
>() {}

/**
 * Over the `SqlClient` in context.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<ConversationStore, StoreError, SqlClient.SqlClient> = Layer.effect(
  ConversationStore,
  make
)

/**
 * A SQLite file (its directory is created; `:memory:` works too).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerSqlite = (filename: string): Layer.Layer<ConversationStore, StoreError> =>
  layer.pipe(
    Layer.provide(Layer.unwrapEffect(Effect.try({
      try: () => {
        if (filename !== ":memory:") mkdirSync(dirname(filename), { recursive: true })
        return SqliteClient.layer({ filename })
      },
      catch: storeError(`cannot create the directory of ${filename}`)
    }))),
    Layer.mapError((
      e
    ) => (e instanceof StoreError ? e : new StoreError({ message: `cannot open ${filename}: ${String(e)}` })))
  )

/**
 * The SQLite file named by `DATABASE_PATH` (default `./data/react-engine.sqlite`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<ConversationStore, StoreError, ServerConfig.ServerConfig> = Layer.unwrapEffect(
  Effect.map(ServerConfig.ServerConfig, (settings) => layerSqlite(settings.databasePath))
)
