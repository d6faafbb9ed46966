/**
 * The in-memory store of `Memory.layerMemory`: per user a working memory, the
 * applied update keys, the items and their vectors; search is an exact scan of
 * the user's items. Every operation is one synchronous step (no interleaving).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { Store, StoredItem, UpdateOutcome, WorkingMemory } from "../../Memory.js"

interface UserState {
  working: WorkingMemory
  readonly applied: Map<string, UpdateOutcome>
  readonly items: Array<{ readonly item: StoredItem; readonly vector: Float32Array }>
}

/** The dot product of two vectors of the same length (their cosine when both are unit length). */
export const dot = (a: Float32Array, b: Float32Array): number => {
  let sum = 0
  for (let i = 0; i < a.length; i++) sum += (a[i] ?? 0) * (b[i] ?? 0)
  return sum
}

export const make = (): Store => {
  const users = new Map<string, UserState>()
  const epochs = new Map<string, number>()
  const stateOf = (userId: string): UserState => {
    let state = users.get(userId)
    if (state === undefined) {
      state = { working: {}, applied: new Map(), items: [] }
      users.set(userId, state)
    }
    return state
  }
  const epochOf = (userId: string) => epochs.get(userId) ?? 0
  return {
    description: "in-memory exact scan",
    read: (userId) => Effect.sync(() => ({ working: users.get(userId)?.working ?? {}, epoch: epochOf(userId) })),
    update: (userId, key, epoch, change) =>
      Effect.sync((): UpdateOutcome => {
        const state = stateOf(userId)
        const before = state.applied.get(key)
        if (before !== undefined) return before
        if (epochOf(userId) !== epoch) {
          return { _tag: "Refused", message: "the user's memory was forgotten since this run started" }
        }
        const result = change(state.working)
        const outcome: UpdateOutcome = Either.isLeft(result)
          ? { _tag: "Refused", message: result.left }
          : { _tag: "Applied", updated: result.right }
        if (outcome._tag === "Applied") {
          state.working = outcome.updated.working
        }
        state.applied.set(key, outcome)
        return outcome
      }),
    vectorOf: (userId, sha, model) =>
      Effect.sync(() =>
        Option.fromNullable(users.get(userId)?.items.find((i) => i.item.sha === sha && i.item.model === model)?.vector)
      ),
    insert: (item, vector, epoch) =>
      Effect.sync(() => {
        if (epochOf(item.user_id) !== epoch) return false
        const state = stateOf(item.user_id)
        if (state.items.some((i) => i.item.run_id === item.run_id)) return false
        state.items.push({ item, vector })
        return true
      }),
    search: ({ excludeConversationId, k, minScore, model, userId, vector }) =>
      Effect.sync(() => {
        const hits = (users.get(userId)?.items ?? [])
          .filter((i) => i.item.model === model && i.item.conversation_id !== excludeConversationId)
          .map((i, at) => ({ item: i.item, score: dot(i.vector, vector), at }))
          .filter((hit) => hit.score >= minScore)
          .sort((a, b) => b.score - a.score)
        // a turn said again word for word (the same text, the same sha) is one memory: in the place of its most
        // similar copy, recalled as last said (its latest copy)
        const bySha = new Map<string, { item: StoredItem; readonly score: number; at: number }>()
        for (const hit of hits) {
          const seen = bySha.get(hit.item.sha)
          if (seen === undefined) bySha.set(hit.item.sha, { ...hit })
          else if (hit.at > seen.at) Object.assign(seen, { item: hit.item, at: hit.at })
        }
        return [...bySha.values()].slice(0, k).map(({ item, score }) => ({ item, score }))
      }),
    items: (userId) => Effect.sync(() => (users.get(userId)?.items ?? []).map((i) => i.item)),
    forget: (userId) =>
      Effect.sync(() => {
        users.delete(userId)
        epochs.set(userId, epochOf(userId) + 1)
      })
  }
}
