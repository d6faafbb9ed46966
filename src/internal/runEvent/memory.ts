/**
 * The memory events (re-exported by RunEvent.ts), channel `memory`: what a
 * run recalled (conversations and scores, never their text), what
 * `update_memory` changed, what memory could not do. See docs/memory.md.
 *
 * @internal
 */
import * as Schema from "effect/Schema"
import { agent } from "./fields.js"

/**
 * What the run recalled of the user's other conversations (which, and how
 * close; never their text), put into its first model request.
 *
 * @since 0.1.0
 * @category models
 */
export const MemoryRecalled = Schema.TaggedStruct("MemoryRecalled", {
  items: Schema.Array(Schema.Struct({ conversation_id: Schema.String, score: Schema.Number })),
  agent
})

/**
 * `update_memory` changed the user's working memory (the keys it set or removed).
 *
 * @since 0.1.0
 * @category models
 */
export const MemoryUpdated = Schema.TaggedStruct("MemoryUpdated", { keys: Schema.Array(Schema.String), agent })

/**
 * Recall or indexing could not be done (the embeddings endpoint failed, the
 * budget had no room); the run goes on without it.
 *
 * @since 0.1.0
 * @category models
 */
export const MemoryUnavailable = Schema.TaggedStruct("MemoryUnavailable", { reason: Schema.String, agent })

/** The family's members, in the order of the `RunEvent` union. */
export const memoryEvents = [MemoryRecalled, MemoryUpdated, MemoryUnavailable] as const
