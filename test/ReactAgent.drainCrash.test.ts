/**
 * The interrupt drain carried by a loop call's activity, across a crash: the
 * run's queue is the server's (SqlInterrupts over a real SQLite run log), the
 * journal a replayable memory store (a result is stored when its activity
 * ends; an interrupted activity stores nothing and runs again, as under the
 * workflow engine). "The process dies" right after a drain committed what it
 * took and before the activity's result was stored: the activity runs again in
 * the next execution, and its drain — keyed by the activity — must return the
 * messages the first attempt already marked drained, or they are lost.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { StoredCall } from "../src/internal/reactAgent/loopCall.js"
import type { InterruptsService } from "../src/Interrupts.js"
import type { ChatMessage } from "../src/Message.js"
import { textOf } from "../src/Message.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import type { RunJournal } from "../src/RunJournal.js"
import { makeIdempotencyKey } from "../src/RunJournal.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Database from "../src/server/Database.js"
import * as RunLog from "../src/server/RunLog.js"
import * as SqlInterrupts from "../src/server/SqlInterrupts.js"
import { jsonLlm, makeAgent } from "./utils/agentLayers.js"
import { journalSink, memoryJournal, memoryStore } from "./utils/dagLayers.js"

const CID = "conv-drain-crash"
const RUN = "run_drain_crash"
const NOTE = "also note the time"

const interrupted = (ms: ReadonlyArray<ChatMessage>) =>
  ms.some((m) =>
    m.role === "user" && textOf(m.content).startsWith("[USER INTERRUPT]") && textOf(m.content).includes(NOTE)
  )

/** The run log on a fresh SQLite file, the run active for the conversation and NOTE queued for it. */
const queued = Effect.gen(function*() {
  const context = yield* Layer.build(RunLog.layer.pipe(
    Layer.provide(
      Database.layer({ _tag: "Sqlite", filename: join(mkdtempSync(join(tmpdir(), "drain-crash-")), "runs.sqlite") })
    ),
    Layer.orDie
  ))
  const log = Context.get(context, RunLog.RunLog)
  yield* Effect.orDie(log.start({ runId: RUN, conversationId: CID, query: "q" }))
  const injected = yield* Effect.orDie(log.inject(CID, NOTE))
  assert.isTrue(Option.isSome(injected))
  return log
})

/** The server's queue, whose first drain that takes anything "kills the process" once it committed. */
const dying = (log: RunLog.RunLogService): { readonly service: InterruptsService; readonly crashed: () => boolean } => {
  const real = SqlInterrupts.makeUnsafe(log)
  let crashed = false
  return {
    service: {
      ...real,
      drain: (conversationId, options) =>
        Effect.flatMap(real.drain(conversationId, options), (items) => {
          if (crashed || items.length === 0) return Effect.succeed(items)
          crashed = true
          return Effect.interrupt
        })
    },
    crashed: () => crashed
  }
}

const cases = [
  {
    name: "native, the drain before the call after a tool round",
    llm: undefined,
    // a tool round first; then whatever the list holds
    reply: (ms: ReadonlyArray<ChatMessage>) =>
      interrupted(ms)
        ? ScriptedLlm.text("answered with the note")
        : ms.some((m) => m.role === "tool")
        ? ScriptedLlm.text("answered without the note")
        : ScriptedLlm.toolCall("add", { a: 1, b: 2 }, { id: "c1" })
  },
  {
    name: "native, the drain after an answer",
    llm: undefined,
    reply: (ms: ReadonlyArray<ChatMessage>) =>
      ScriptedLlm.text(interrupted(ms) ? "answered with the note" : "answered without the note")
  },
  {
    name: "JSON mode, the drain after every reply",
    llm: jsonLlm,
    reply: (ms: ReadonlyArray<ChatMessage>) =>
      interrupted(ms)
        ? ScriptedLlm.jsonFinal("answered with the note")
        : ScriptedLlm.jsonToolCall("add", { a: 1, b: 2 })
  }
] as const

describe("ReactAgent: a drain carried by a loop call's activity, across a crash", () => {
  for (const c of cases) {
    it.scopedLive(`${c.name}: the re-run activity takes in what its first attempt drained`, () =>
      Effect.gen(function*() {
        const log = yield* queued
        const queue = dying(log)
        const h = makeAgent((request) => c.reply(request.messages), {
          ...(c.llm !== undefined ? { llm: c.llm } : {}),
          interrupts: queue.service,
          agent: { synthesis: "auto" }
        })
        const store = memoryStore()
        // the first execution's process is dead from the crash on: it stores nothing more
        const journal = (sink: ReturnType<typeof journalSink>, dies: boolean): RunJournal => {
          const base = memoryJournal(store, sink)
          const dead = () => dies && queue.crashed()
          return {
            activity: (o) => Effect.suspend(() => (dead() ? Effect.interrupt : base.activity(o))),
            emit: (event, options) => Effect.suspend(() => (dead() ? Effect.void : base.emit(event, options))),
            runId: RUN,
            idempotencyKey: (name: string) => makeIdempotencyKey(RUN, name)
          }
        }
        const input = { query: "q", conversationId: CID }
        const first = journalSink()
        const second = journalSink()
        const exits = yield* Effect.gen(function*() {
          const agent = yield* ReactAgent.ReactAgent
          const one = yield* Effect.exit(agent.execute(input, journal(first, true)))
          const two = yield* Effect.exit(agent.execute(input, journal(second, false)))
          return [one, two] as const
        }).pipe(Effect.provide(h.layer))
        assert.isTrue(queue.crashed(), "the first execution died right after a drain")
        assert.isFalse(
          first.delivered.some((e) => e._tag === "Done" || e._tag === "Inject"),
          "the first execution ended"
        )
        assert.isTrue(Exit.isSuccess(exits[1]))
        // the model read the note after the restart, and the run took it in once
        assert.isTrue(
          h.requests().some((r) => interrupted(r.request.messages)),
          "no request after the crash carries the note"
        )
        const injects = [...first.delivered, ...second.delivered].filter((
          e
        ): e is Extract<RunEvent, { _tag: "Inject" }> => e._tag === "Inject")
        assert.deepStrictEqual(injects.map((e) => e.content), [NOTE])
        const done = second.delivered.find((e): e is Extract<RunEvent, { _tag: "Done" }> => e._tag === "Done")
        assert.strictEqual(done?.answer, "answered with the note")
        assert.deepStrictEqual(done?.pending_injections, [])
      }))
  }
})

describe("a loop call's stored step", () => {
  const reply = {
    content: "",
    toolCalls: [],
    finishReason: "stop",
    usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3, llm_calls: 1 }
  }
  const decode = Schema.decodeUnknownSync(StoredCall)
  const encode = Schema.encodeSync(StoredCall)
  it("reads what an earlier version stored (a bare reply; a streamed call's reply and shown) and what this one stores", () => {
    assert.deepStrictEqual(decode({ ...reply, content: "bare" }), { ...reply, content: "bare" })
    assert.deepStrictEqual(decode({ response: reply, shown: true }), { response: reply, shown: true })
    const drained = [{ id: "inj_1", content: "also" }]
    assert.deepStrictEqual(decode(encode({ response: reply, shown: false, drained })), {
      response: reply,
      shown: false,
      drained
    })
    assert.deepStrictEqual(decode(encode({ drained })), { drained })
    // neither a reply nor a drain: an error, not an empty step
    assert.throws(() => decode({ shown: false }))
  })
})
