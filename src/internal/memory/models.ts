/**
 * The data of memory: the working memory, `update_memory`'s arguments, the
 * indexed and recalled turns, a run's stored memory steps, the memory's error
 * and the fiber references a run sets. Re-exported by `Memory`.
 *
 * @internal
 */
import * as FiberRef from "effect/FiberRef"
import { globalValue } from "effect/GlobalValue"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Usage } from "../../Usage.js"

/**
 * A user's working memory.
 *
 * @since 0.1.0
 * @category models
 */
export const WorkingMemory = Schema.Record({ key: Schema.String, value: Schema.Unknown })
/**
 * @since 0.1.0
 * @category models
 */
export type WorkingMemory = typeof WorkingMemory.Type

/**
 * The arguments of `update_memory`: top-level keys to set (their values
 * replaced) and keys to remove.
 *
 * @since 0.1.0
 * @category models
 */
export const Patch = Schema.Struct({
  set: Schema.optional(WorkingMemory.annotations({ description: "Keys to set (a value replaces the key's old one)" })),
  remove: Schema.optional(Schema.Array(Schema.String).annotations({ description: "Keys to remove" }))
})
/**
 * @since 0.1.0
 * @category models
 */
export type Patch = typeof Patch.Type

/**
 * An indexed turn: the query and answer of one finished run of the user.
 *
 * @since 0.1.0
 * @category models
 */
export const Item = Schema.Struct({
  conversation_id: Schema.String,
  run_id: Schema.String,
  query: Schema.String,
  answer: Schema.String,
  /** When the turn was indexed (ISO 8601). */
  at: Schema.String
})
/**
 * @since 0.1.0
 * @category models
 */
export type Item = typeof Item.Type

/**
 * A recalled turn and its cosine similarity to the query.
 *
 * @since 0.1.0
 * @category models
 */
export const RecalledItem = Schema.Struct({ ...Item.fields, score: Schema.Number })
/**
 * @since 0.1.0
 * @category models
 */
export type RecalledItem = typeof RecalledItem.Type

/**
 * What a run remembers at its start (the result of its stored `memory` step):
 * the working memory, the recalled turns, the user's forget epoch when read
 * (a write of the run is refused once a forget moved it: -1 when it could not
 * be read), the embedding usage, and why recall could not be done.
 *
 * @since 0.1.0
 * @category models
 */
export const Recalled = Schema.Struct({
  working: WorkingMemory,
  items: Schema.Array(RecalledItem),
  epoch: Schema.Number,
  usage: Schema.optional(Usage),
  unavailable: Schema.optional(Schema.String)
})
/**
 * @since 0.1.0
 * @category models
 */
export type Recalled = typeof Recalled.Type

/**
 * The result of indexing a run's turn (its stored `memory/index` step).
 *
 * @since 0.1.0
 * @category models
 */
export const Indexed = Schema.Struct({
  indexed: Schema.Boolean,
  usage: Schema.optional(Usage),
  unavailable: Schema.optional(Schema.String)
})
/**
 * @since 0.1.0
 * @category models
 */
export type Indexed = typeof Indexed.Type

/**
 * A run's memory steps as a cassette keeps them: what it recalled and what
 * indexing its turn gave. A run under `withRecorded` takes its recall from
 * here (it embeds nothing).
 *
 * @since 0.1.0
 * @category models
 */
export const Steps = Schema.Struct({ recall: Schema.optional(Recalled), index: Schema.optional(Indexed) })
/**
 * @since 0.1.0
 * @category models
 */
export type Steps = typeof Steps.Type

/**
 * The name of the built-in tool that changes the working memory.
 *
 * @since 0.1.0
 * @category constants
 */
export const UPDATE_TOOL = "update_memory"

/**
 * The longest working memory, in characters of its JSON: an update that would
 * make it longer is refused.
 *
 * @since 0.1.0
 * @category constants
 */
export const MAX_WORKING_CHARS = 16_000

/**
 * The memory store failed (or refused a write: `message` says why).
 *
 * @since 0.1.0
 * @category errors
 */
export class MemoryError extends Schema.TaggedError<MemoryError>()("MemoryError", { message: Schema.String }) {}

/**
 * The user (and forget epoch) of the run on this fiber: `update_memory` writes
 * to this user's memory. Set by the run.
 *
 * @since 0.1.0
 * @category references
 */
export const currentUser: FiberRef.FiberRef<Option.Option<{ readonly userId: string; readonly epoch: number }>> =
  globalValue(
    Symbol.for("effect-react-engine/Memory/currentUser"),
    // a module-level FiberRef, made once as Effect's own are (globalValue keeps one per process)
    () => FiberRef.unsafeMake<Option.Option<{ readonly userId: string; readonly epoch: number }>>(Option.none())
  )

/**
 * The stored memory steps of the run on this fiber (a fork continuing from
 * stored steps): `recall` answers from them instead of embedding the query.
 *
 * @since 0.1.0
 * @category references
 */
export const currentRecorded: FiberRef.FiberRef<Option.Option<Steps>> = globalValue(
  Symbol.for("effect-react-engine/Memory/currentRecorded"),
  // a module-level FiberRef, made once as Effect's own are (globalValue keeps one per process)
  () => FiberRef.unsafeMake<Option.Option<Steps>>(Option.none())
)
