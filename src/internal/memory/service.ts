/**
 * The `Memory` service over a store and an embedder: recall, indexing,
 * `update_memory` and forget (see `Memory.ts`).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { hash } from "node:crypto"
import * as Budget from "../../Budget.js"
import type { EmbedderService, EmbeddingError } from "../../Embedder.js"
import type { LlmError } from "../../Llm.js"
import type {
  Indexed,
  MemoryService,
  Patch,
  Recalled,
  Settings,
  Store,
  StoredItem,
  Updated,
  WorkingMemory
} from "../../Memory.js"
import * as Tool from "../../Tool.js"
import * as Usage from "../../Usage.js"
import * as Models from "./models.js"

/** The embedded text of a turn is cut here (an embedding model reads ~8k tokens). */
const EMBED_CHARS = 6000

/** The text a turn is indexed by. */
export const turnText = (query: string, answer: string): string => `${query}\n\n${answer}`.slice(0, EMBED_CHARS)

const unit = (vector: Float32Array): Float32Array => {
  let norm = 0
  for (const x of vector) norm += x * x
  if (norm === 0) return vector
  const scale = 1 / Math.sqrt(norm)
  return vector.map((x) => x * scale)
}

const reasonOf = (error: EmbeddingError | LlmError): string =>
  error._tag === "LlmError" ? `embedding budget: ${error.message}` : `embeddings failed: ${error.message}`

/** `patch` applied to `current`: the keys it names and the result, or why it is refused. */
export const applyPatch = (
  current: WorkingMemory,
  patch: Patch,
  validate: (next: WorkingMemory) => string | undefined
): Either.Either<Updated, string> => {
  const set = Object.entries(patch.set ?? {})
  const remove = patch.remove ?? []
  if (set.length === 0 && remove.length === 0) return Either.left("nothing to update: give `set` or `remove`")
  const removed = new Set(remove)
  const setKeys = new Set(set.map(([k]) => k))
  // built from entries: a key such as `__proto__` stays a plain key
  const next: WorkingMemory = Object.fromEntries([
    ...Object.entries(current).filter(([k]) => !removed.has(k) && !setKeys.has(k)),
    ...set.filter(([k]) => !removed.has(k))
  ])
  if (JSON.stringify(next).length > Models.MAX_WORKING_CHARS) {
    return Either.left(`the working memory would be longer than ${Models.MAX_WORKING_CHARS} characters: keep it short`)
  }
  const invalid = validate(next)
  if (invalid !== undefined) return Either.left(`the working memory would not match its schema: ${invalid}`)
  return Either.right({ keys: [...new Set([...setKeys, ...remove])], working: next })
}

const toolDescription = "Save facts about the user that are worth remembering in later conversations (their name, " +
  "preferences, ongoing projects) into your working memory, or remove ones that no longer hold. `set` replaces the " +
  "values of the given top-level keys; `remove` deletes keys. The working memory is in your system prompt in every " +
  "conversation with this user."

export const make = (
  store: Store,
  embedder: EmbedderService,
  settings: Settings,
  schema: Schema.Schema<any, any> | undefined
): MemoryService => {
  const decode = schema === undefined ? undefined : Schema.decodeUnknownEither(schema)
  const validate = (next: WorkingMemory): string | undefined => {
    if (decode === undefined) return undefined
    const result = decode(next)
    return Either.isLeft(result) ? result.left.message : undefined
  }

  /** One text embedded and metered: its unit vector and usage. */
  const embedOne = (text: string) =>
    Budget.embedding(
      embedder.model,
      Math.ceil(text.length / 3) + 8,
      Effect.map(embedder.embed([text]), (e) => ({ value: e, tokens: e.tokens }))
    ).pipe(Effect.flatMap((e) => {
      const vector = e.vectors[0]
      return vector === undefined || vector.length === 0
        ? Effect.fail(new Models.MemoryError({ message: "the embedder returned no vector" }))
        : Effect.succeed({ vector: unit(vector), usage: Usage.make(e.tokens, 0) })
    }))

  const recall: MemoryService["recall"] = ({ conversationId, query, userId }) =>
    Effect.gen(function*() {
      const read = yield* Effect.either(store.read(userId))
      if (Either.isLeft(read)) {
        return {
          working: {},
          items: [],
          epoch: -1,
          unavailable: `memory could not be read: ${read.left.message}`
        } satisfies Recalled
      }
      const { epoch, working } = read.right
      // a fork continuing from stored steps takes their recall — unless the user forgot since
      const stored = Option.flatMapNullable(yield* FiberRef.get(Models.currentRecorded), (steps) => steps.recall)
      if (Option.isSome(stored) && stored.value.epoch === epoch) return stored.value
      if (!settings.recall) return { working, items: [], epoch } satisfies Recalled
      const embedded = yield* Effect.either(embedOne(query))
      if (Either.isLeft(embedded)) {
        const error = embedded.left
        return {
          working,
          items: [],
          epoch,
          unavailable: error._tag === "MemoryError" ? error.message : reasonOf(error)
        }
      }
      const hits = yield* Effect.either(store.search({
        userId,
        excludeConversationId: conversationId,
        model: embedder.model,
        vector: embedded.right.vector,
        k: settings.topK,
        minScore: settings.minScore
      }))
      if (Either.isLeft(hits)) {
        return {
          working,
          items: [],
          epoch,
          usage: embedded.right.usage,
          unavailable: `recall failed: ${hits.left.message}`
        }
      }
      return {
        working,
        epoch,
        usage: embedded.right.usage,
        items: hits.right.map(({ item, score }) => ({
          conversation_id: item.conversation_id,
          run_id: item.run_id,
          query: item.query,
          answer: item.answer,
          at: item.at,
          score: Math.round(score * 10_000) / 10_000
        }))
      } satisfies Recalled
    }).pipe(
      Effect.catchAllDefect((defect) =>
        Effect.succeed<Recalled>({ working: {}, items: [], epoch: -1, unavailable: `memory failed: ${String(defect)}` })
      )
    )

  const index: MemoryService["index"] = (turn) =>
    Effect.gen(function*() {
      if (!settings.recall) return { indexed: false } satisfies Indexed
      if (turn.epoch < 0) {
        return { indexed: false, unavailable: "not indexed: memory was unavailable when the run started" }
      }
      const text = turnText(turn.query, turn.answer)
      const sha = hash("sha256", text, "hex")
      const known = yield* store.vectorOf(turn.userId, sha, embedder.model)
      const embedded = Option.isSome(known)
        ? { vector: known.value, usage: undefined }
        : yield* embedOne(text)
      const item: StoredItem = {
        user_id: turn.userId,
        conversation_id: turn.conversationId,
        run_id: turn.runId,
        query: turn.query,
        answer: turn.answer,
        at: new Date().toISOString(),
        model: embedder.model,
        sha
      }
      const indexed = yield* store.insert(item, embedded.vector, turn.epoch)
      return embedded.usage === undefined ? { indexed } : { indexed, usage: embedded.usage }
    }).pipe(
      Effect.catchAll((error) =>
        Effect.succeed<Indexed>({
          indexed: false,
          unavailable: `this turn was not indexed: ${error._tag === "MemoryError" ? error.message : reasonOf(error)}`
        })
      ),
      Effect.catchAllDefect((defect) =>
        Effect.succeed<Indexed>({ indexed: false, unavailable: `this turn was not indexed: ${String(defect)}` })
      )
    )

  const update: MemoryService["update"] = ({ epoch, idempotencyKey, patch, userId }) =>
    Effect.flatMap(
      store.update(userId, idempotencyKey, epoch, (current) => applyPatch(current, patch, validate)),
      (outcome) =>
        outcome._tag === "Applied"
          ? Effect.succeed(outcome.updated)
          : Effect.fail(new Models.MemoryError({ message: outcome.message }))
    )

  const tool = Tool.make({
    name: Models.UPDATE_TOOL,
    description: toolDescription,
    parameters: Models.Patch,
    readOnly: false,
    // a call re-run after a crash carries the same idempotency key: its update is applied once
    idempotent: true,
    handler: (patch) =>
      Effect.gen(function*() {
        const user = yield* FiberRef.get(Models.currentUser)
        if (Option.isNone(user)) {
          return yield* Effect.fail(new Tool.ToolError({ message: "update_memory: this run has no user" }))
        }
        const call = yield* FiberRef.get(Tool.currentCall)
        const key = Option.flatMapNullable(call, (c) => c.idempotencyKey).pipe(
          Option.getOrElse(() => `ik_${crypto.randomUUID()}`)
        )
        const updated = yield* update({
          userId: user.value.userId,
          patch,
          idempotencyKey: key,
          epoch: user.value.epoch
        }).pipe(
          Effect.mapError((error) => new Tool.ToolError({ message: `update_memory: ${error.message}` }))
        )
        const keys = Object.keys(updated.working)
        return `Working memory updated (${updated.keys.join(", ")}). Its keys now: ${
          keys.length > 0 ? keys.join(", ") : "(none)"
        }.`
      })
  })

  return {
    description: `${store.description}; ${embedder.label}${settings.recall ? "" : "; recall off (REACT_MEMORY=off)"}`,
    settings,
    recall,
    index,
    update,
    inspect: (userId) =>
      Effect.all([store.read(userId), store.items(userId)]).pipe(
        Effect.map(([read, items]) => ({
          working_memory: read.working,
          items: items.map((i) => ({
            conversation_id: i.conversation_id,
            run_id: i.run_id,
            query: i.query,
            answer: i.answer,
            at: i.at
          }))
        }))
      ),
    forget: store.forget,
    tool
  }
}
