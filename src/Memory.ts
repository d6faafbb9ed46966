/**
 * Memory across conversations (docs/memory.md). Per user:
 *
 * - a **working memory**, one JSON object (optionally typed by a Schema), shown
 *   in the system prompt of every run of that user and changed by the model
 *   through the built-in tool `update_memory` (`{set?, remove?}`), exactly once
 *   per call (its idempotency key);
 * - **recall**: each finished turn (query + answer) is embedded and indexed; a
 *   run embeds its query and gets the most similar turns of the user's *other*
 *   conversations (top `topK` with cosine ≥ `minScore`), verbatim and dated, in
 *   its first model request;
 * - **forget**: everything of the user goes (working memory, indexed turns,
 *   vectors), and no later run recalls any of it.
 *
 * A run reads and writes memory only when it has a user id
 * (`RunInput.userId`) and the agent was built with a `Memory` in context. Its
 * recall is one stored step of the run (a durable replay or a fork reads it
 * back: nothing is embedded again); an embedding failure never fails the run
 * (a `MemoryUnavailable` event says so and it goes on without recall).
 *
 * Layers: `layerMemory(options?)` keeps everything in the process (tests, the
 * library, the CLI); the server's `SqlMemory.layer` stores it in the run
 * database (SQLite with `sqlite-vec`, PostgreSQL with `pgvector` or an exact
 * scan). Both need an `Embedder`.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Embedder from "./Embedder.js"
import * as InMemory from "./internal/memory/inMemory.js"
import type { Indexed, Item, MemoryError, Patch, Recalled, Steps, WorkingMemory } from "./internal/memory/models.js"
import { currentRecorded, UPDATE_TOOL } from "./internal/memory/models.js"
import * as Prompt from "./internal/memory/prompt.js"
import * as Service from "./internal/memory/service.js"
import type { Tool } from "./Tool.js"

/**
 * A user id: 1–128 characters of letters, digits and `. _ : @ -`.
 *
 * @since 0.1.0
 * @category models
 */
export const UserId = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9._:@-]{1,128}$/, {
    message: () => "Expected 1-128 characters of letters, digits, '.', '_', ':', '@', '-'"
  })
)

export {
  /**
   * @since 0.1.0
   * @category references
   */
  currentRecorded,
  /**
   * @since 0.1.0
   * @category references
   */
  currentUser,
  /**
   * @since 0.1.0
   * @category constants
   */
  MAX_WORKING_CHARS,
  /**
   * @since 0.1.0
   * @category errors
   */
  MemoryError,
  /**
   * @since 0.1.0
   * @category constants
   */
  UPDATE_TOOL
} from "./internal/memory/models.js"

export {
  /**
   * @since 0.1.0
   * @category models
   */
  Indexed,
  /**
   * @since 0.1.0
   * @category models
   */
  Item,
  /**
   * @since 0.1.0
   * @category models
   */
  Patch,
  /**
   * @since 0.1.0
   * @category models
   */
  Recalled,
  /**
   * @since 0.1.0
   * @category models
   */
  RecalledItem,
  /**
   * @since 0.1.0
   * @category models
   */
  Steps,
  /**
   * @since 0.1.0
   * @category models
   */
  WorkingMemory
} from "./internal/memory/models.js"

/**
 * What `update_memory` did: the keys it set or removed and the working memory after.
 *
 * @since 0.1.0
 * @category models
 */
export interface Updated {
  readonly keys: ReadonlyArray<string>
  readonly working: WorkingMemory
}

/**
 * Everything memory holds of a user (`GET /api/users/:user_id/memory`).
 *
 * @since 0.1.0
 * @category models
 */
export interface UserMemory {
  readonly working_memory: WorkingMemory
  readonly items: ReadonlyArray<Item>
}

/**
 * How memory is used: recall on or off (`REACT_MEMORY`: off = nothing is
 * embedded, neither queries nor turns; the working memory stays), how many
 * turns a run gets (`REACT_MEMORY_TOP_K`, 4) and from which cosine similarity
 * (`REACT_MEMORY_MIN_SCORE`, 0.35).
 *
 * @since 0.1.0
 * @category models
 */
export interface Settings {
  readonly recall: boolean
  readonly topK: number
  readonly minScore: number
}

/**
 * @since 0.1.0
 * @category constants
 */
export const defaults: Settings = { recall: true, topK: 4, minScore: 0.35 }

/**
 * @since 0.1.0
 * @category models
 */
export interface MemoryService {
  /** Where memory lives and what embeds (the server's start-up line). */
  readonly description: string
  readonly settings: Settings
  /**
   * What a run of `userId` remembers at its start: the working memory and —
   * recall on — the turns of the user's other conversations most similar to
   * `query`. Never fails: what could not be done is in `unavailable`.
   */
  readonly recall: (request: {
    readonly userId: string
    readonly conversationId: string
    readonly query: string
  }) => Effect.Effect<Recalled>
  /**
   * Indexes a finished turn (once per run id; a turn whose text is indexed
   * already reuses its vector). Refused when the user forgot since `epoch`.
   * Never fails: what could not be done is in `unavailable`.
   */
  readonly index: (turn: {
    readonly userId: string
    readonly conversationId: string
    readonly runId: string
    readonly query: string
    readonly answer: string
    readonly epoch: number
  }) => Effect.Effect<Indexed>
  /**
   * Applies `patch` to the working memory once per `idempotencyKey` (a
   * second call with the key returns the first one's result). Refused when
   * the user forgot since `epoch`, when the result does not match the
   * schema or is too long.
   */
  readonly update: (request: {
    readonly userId: string
    readonly patch: Patch
    readonly idempotencyKey: string
    readonly epoch: number
  }) => Effect.Effect<Updated, MemoryError>
  readonly inspect: (userId: string) => Effect.Effect<UserMemory, MemoryError>
  /** Deletes everything of the user; runs started before it write nothing more. */
  readonly forget: (userId: string) => Effect.Effect<void, MemoryError>
  /** `update_memory` over this memory (the run adds it when it has a user). */
  readonly tool: Tool
}

/**
 * @since 0.1.0
 * @category Context
 */
export class Memory extends Context.Tag("effect-react-engine/Memory")<Memory, MemoryService>() {}

/**
 * Runs `self` with its recall taken from `record` (when it holds one): a fork
 * or a replay of a run embeds nothing for it.
 *
 * @since 0.1.0
 * @category combinators
 */
export const withRecorded =
  (record: Steps | undefined) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    record === undefined ? self : Effect.locally(self, currentRecorded, Option.some(record))

/**
 * A turn as a store keeps it.
 *
 * @since 0.1.0
 * @category models
 */
export interface StoredItem extends Item {
  readonly user_id: string
  /** The embedding model of its vector. */
  readonly model: string
  /** SHA-256 of the embedded text: the same turn indexed again reuses its vector. */
  readonly sha: string
}

/**
 * What `Store.update` did.
 *
 * @since 0.1.0
 * @category models
 */
export type UpdateOutcome =
  | { readonly _tag: "Applied"; readonly updated: Updated }
  | { readonly _tag: "Refused"; readonly message: string }

/**
 * Where memory lives (`layerMemory`'s maps; the server's SQL tables). Vectors
 * come unit length: cosine similarity is their dot product. Every user's
 * data is reached only through its `userId`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Store {
  /** The index, for people: `sqlite-vec`, `pgvector`, `exact scan`… */
  readonly description: string
  /** The working memory (empty when none) and the forget epoch (0 before any forget). */
  readonly read: (
    userId: string
  ) => Effect.Effect<{ readonly working: WorkingMemory; readonly epoch: number }, MemoryError>
  /**
   * In one transaction: the stored result when `key` was applied before; else
   * `Refused` when the epoch is not `epoch` or `change` refuses; else the
   * change written and `key` recorded with its result.
   */
  readonly update: (
    userId: string,
    key: string,
    epoch: number,
    change: (current: WorkingMemory) => Either.Either<Updated, string>
  ) => Effect.Effect<UpdateOutcome, MemoryError>
  /** The vector of the user's item with this text and model, if one is indexed. */
  readonly vectorOf: (
    userId: string,
    sha: string,
    model: string
  ) => Effect.Effect<Option.Option<Float32Array>, MemoryError>
  /** Adds an item (false when its run is indexed already, or the epoch moved: nothing added). */
  readonly insert: (item: StoredItem, vector: Float32Array, epoch: number) => Effect.Effect<boolean, MemoryError>
  /**
   * The user's items of `model` outside `excludeConversationId`, most similar first: at most `k`, score ≥
   * `minScore`, one per text (items of the same `sha`, a turn said again word for word, are one: the latest).
   */
  readonly search: (query: {
    readonly userId: string
    readonly excludeConversationId: string
    readonly model: string
    readonly vector: Float32Array
    readonly k: number
    readonly minScore: number
  }) => Effect.Effect<ReadonlyArray<{ readonly item: StoredItem; readonly score: number }>, MemoryError>
  /** Every item of the user, oldest first. */
  readonly items: (userId: string) => Effect.Effect<ReadonlyArray<StoredItem>, MemoryError>
  /** Deletes the user's working memory, items and vectors, and moves the epoch. */
  readonly forget: (userId: string) => Effect.Effect<void, MemoryError>
}

/**
 * Options of `makeUnsafe` / `layerMemory`: the settings and a Schema the working
 * memory must match after every update (its encoded side is the JSON stored).
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  readonly settings?: Partial<Settings> | undefined
  readonly schema?: Schema.Schema<any, any> | undefined
}

/**
 * The memory over a store and an embedder.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeUnsafe = (store: Store, embedder: Embedder.EmbedderService, options: Options = {}): MemoryService =>
  Service.make(store, embedder, { ...defaults, ...options.settings }, options.schema)

/**
 * An in-memory store (one process; exact cosine scan of the user's items).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeStoreUnsafe = (): Store => InMemory.make()

/**
 * Memory kept in the process, over the `Embedder` in context.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory = (options: Options = {}): Layer.Layer<Memory, never, Embedder.Embedder> =>
  Layer.effect(Memory, Effect.map(Embedder.Embedder, (embedder) => makeUnsafe(InMemory.make(), embedder, options)))

/**
 * The settings from the environment: `REACT_MEMORY` (`on` | `off`, default
 * `on`), `REACT_MEMORY_TOP_K` (1–50, default 4), `REACT_MEMORY_MIN_SCORE`
 * (−1–1, default 0.35).
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<Settings> = Config.all({
  recall: Config.literal("on", "off")("REACT_MEMORY").pipe(
    Config.withDefault("on" as const),
    Config.map((v) => v === "on")
  ),
  topK: Config.integer("REACT_MEMORY_TOP_K").pipe(
    Config.validate({ message: "Expected an integer between 1 and 50", validation: (n) => n >= 1 && n <= 50 }),
    Config.withDefault(defaults.topK)
  ),
  minScore: Config.number("REACT_MEMORY_MIN_SCORE").pipe(
    Config.validate({ message: "Expected a number between -1 and 1", validation: (n) => n >= -1 && n <= 1 }),
    Config.withDefault(defaults.minScore)
  )
})

/**
 * The settings of `config` (the `REACT_MEMORY*` variables; `options.settings` win).
 *
 * @since 0.1.0
 * @category config
 */
export const loadSettings = (options: Options = {}): Effect.Effect<Settings, ConfigError.ConfigError> =>
  Effect.map(config, (read) => ({ ...read, ...options.settings }))

/**
 * What the model reads of `recalled`: a block for the system prompt with the
 * working memory and the recalled turns, quoted (each side cut at 4000
 * characters) and dated.
 *
 * @since 0.1.0
 * @category utils
 */
export const promptOf = (recalled: Recalled): string => Prompt.render(recalled, UPDATE_TOOL)
