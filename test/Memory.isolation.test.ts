/**
 * Isolation, as a property over generated users, conversations and queries
 * (SPEC §25): no model request of one user's run ever contains another user's
 * indexed text or working memory, and a run without a user id reads nothing
 * (no memory of anyone in its requests, no embedding) and writes nothing (the
 * memory of every user is the same after it). Every user tells facts in the
 * same words ("my favourite fruit is …") and asks the same questions, so a
 * recall that crossed users would find the other user's turns: only the
 * secret words differ. On the in-memory store and on the SQL store of a real
 * SQLite file (sqlite-vec).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fc from "effect/FastCheck"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { ChatRequest } from "../src/Llm.js"
import * as Memory from "../src/Memory.js"
import * as Message from "../src/Message.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Database from "../src/server/Database.js"
import * as SqlMemory from "../src/server/SqlMemory.js"
import { type MemoryWorld, runOnce, switchableEmbedder } from "./utils/memoryAgents.js"

interface Op {
  /** Index of the user, or -1 for a run without a user id. */
  readonly user: number
  readonly conversation: number
  readonly kind: "tell" | "remember" | "ask"
}

const op: fc.Arbitrary<Op> = fc.record({
  user: fc.integer({ min: -1, max: 2 }),
  conversation: fc.integer({ min: 0, max: 2 }),
  kind: fc.constantFrom("tell", "remember", "ask")
})

/** Secret words of user `u`'s n-th fact: unique to the user, never said by anyone else. */
const secret = (u: number, n: number) => `qz${u}w${n}fruit`

const lastUserText = (request: ChatRequest): string => {
  const users = request.messages.filter((m) => m.role === "user")
  return Message.textOf(users[users.length - 1]?.content ?? "")
}

/** `remember <word>` stores it with update_memory; everything is answered by repeating the query. */
const responder: ScriptedLlm.Responder = (request) => {
  const query = lastUserText(request)
  const told = request.messages.some((m) => m.role === "tool")
  if (query.startsWith("remember ") && !told) {
    return ScriptedLlm.toolCall(Memory.UPDATE_TOOL, { set: { favourite_fruit: query.slice("remember ".length) } })
  }
  return ScriptedLlm.text(`I heard: ${query}`)
}

const sqliteWorld = Effect.gen(function*() {
  const filename = join(mkdtempSync(join(tmpdir(), "memory-iso-")), "react.sqlite")
  const context = yield* Layer.build(Database.layer({ _tag: "Sqlite", filename }).pipe(Layer.orDie))
  // the whole context: sqlite-vec is loaded through the SqliteClient, not the bare SqlClient
  const store = yield* Effect.provide(Effect.orDie(SqlMemory.makeStore), context)
  assert.match(store.description, /^sqlite-vec/)
  return store
})

const check = (makeStore: Effect.Effect<Memory.Store, never, Scope.Scope>, runs: number) =>
  Effect.promise(() =>
    fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 2, maxLength: 8 }), (ops) =>
        Effect.runPromise(Effect.scoped(Effect.gen(function*() {
          const store = yield* makeStore
          const embedder = switchableEmbedder()
          const world: MemoryWorld = { memory: Memory.makeUnsafe(store, embedder.service), store, embedder }
          const said = new Map<number, Set<string>>()
          for (const [n, o] of ops.entries()) {
            const word = secret(o.user, n)
            const query = o.kind === "tell"
              ? `My favourite fruit is ${word}`
              : o.kind === "remember"
              ? `remember ${word}`
              : "What is my favourite fruit?"
            const before = yield* Effect.forEach([0, 1, 2], (u) =>
              world.memory.inspect(`user-${u}`))
            const embedded = embedder.state.texts.length
            const run = yield* runOnce(world, responder, {
              query,
              conversationId: o.user < 0 ? `anon-${o.conversation}` : `u${o.user}-c${o.conversation}`,
              ...(o.user >= 0 ? { userId: `user-${o.user}` } : {})
            })
            const text = JSON.stringify(run.requests.map((r) => r.request))
            // what this run may see: its own user's words (and a run without a user: only its own query)
            for (const [u, words] of said) {
              if (u === o.user) continue
              for (const w of words) assert.notInclude(text, w, `run ${n} (user ${o.user}) saw user ${u}'s "${w}"`)
            }
            if (o.user < 0) {
              assert.strictEqual(embedder.state.texts.length, embedded, "a run without a user embeds nothing")
              const after = yield* Effect.forEach([0, 1, 2], (u) => world.memory.inspect(`user-${u}`))
              assert.deepStrictEqual(after, before, "a run without a user writes nothing")
              assert.notInclude(JSON.stringify(run.requests[0].request.tools ?? []), Memory.UPDATE_TOOL)
            } else if (o.kind !== "ask") {
              const words = said.get(o.user) ?? new Set<string>()
              words.add(word)
              said.set(o.user, words)
            }
          }
          // and recall works: each user's next conversation holds something of what they said
          for (const [u, words] of said) {
            const next = yield* runOnce(world, responder, {
              query: "What is my favourite fruit?",
              conversationId: `u${u}-next`,
              userId: `user-${u}`
            })
            const text = JSON.stringify(next.requests[0].request)
            assert.isTrue(
              [...words].some((w) => text.includes(w)),
              `user ${u}'s next conversation recalls nothing of ${[...words]}`
            )
          }
        })))),
      { numRuns: runs }
    )
  )

describe("Memory isolation (property)", () => {
  it.effect(
    "in memory: no request of one user holds another user's memory; without a user nothing is read or written",
    () => check(Effect.sync(() => Memory.makeStoreUnsafe()), 40),
    { timeout: 120_000 }
  )

  it.effect("on SQLite (sqlite-vec): the same", () => check(sqliteWorld, 12), { timeout: 120_000 })
})
