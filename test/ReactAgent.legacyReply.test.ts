/**
 * A durable run stored by an earlier version, resumed by this one: its loop
 * call's stored result is a bare reply, without the `drained` this version's
 * loop call stores beside it (`loopCall.ts`). The drain right after that reply
 * is then a step of its own, under the name the earlier version gave it —
 * `drain/<iteration>/reply` in JSON mode, `drain/<iteration>/final` after a
 * native reply without tool calls — so that a replay finds what that version
 * stored under it (another name would drain again and lose what the stored
 * step took). In process: a journal that returns the stored reply for `llm/1`
 * and runs every other step, recording the names; the message "the user sent"
 * is queued while the stored reply is served, so only that drain can take it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { ChatResponseSchema } from "../src/Llm.js"
import type { ChatMessage } from "../src/Message.js"
import { textOf } from "../src/Message.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { injectNow, jsonLlm, makeAgent, makeInterrupts } from "./utils/agentLayers.js"
import { recordingJournal } from "./utils/journals.js"

const CID = "conv-legacy-reply"
const NOTE = "answer in French"

const hasNote = (ms: ReadonlyArray<ChatMessage>) =>
  ms.some((m) =>
    m.role === "user" && textOf(m.content).startsWith("[USER INTERRUPT]") && textOf(m.content).includes(NOTE)
  )

/** A journal whose store holds `llm/1` as an earlier version wrote it (a bare reply); `served` runs when it is read. */
const legacyJournal = (content: string, served: () => void) => {
  const stored = Schema.encodeSync(ChatResponseSchema)({
    content,
    toolCalls: [],
    finishReason: "stop",
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, llm_calls: 1 }
  })
  const { events, journal, names } = recordingJournal({ "llm/1": stored }, { onStored: served })
  return { journal, ran: names, events }
}

const cases = [
  {
    mode: "JSON",
    llm: jsonLlm,
    stored: JSON.stringify({ type: "final_answer", reasoning: "r", answer: "the stored answer" }),
    drain: "drain/1/reply",
    reply: () => ScriptedLlm.jsonFinal("la réponse")
  },
  {
    mode: "native",
    llm: undefined,
    stored: "the stored answer",
    drain: "drain/1/final",
    reply: () => ScriptedLlm.text("la réponse")
  }
] as const

describe("ReactAgent resuming a loop call stored by an earlier version", () => {
  for (const c of cases) {
    it.effect(`${c.mode}: the drain after the stored reply is the step \`${c.drain}\`, and takes the queued message in`, () =>
      Effect.gen(function*() {
        const irq = makeInterrupts()
        const h = makeAgent(() => c.reply(), {
          ...(c.llm !== undefined ? { llm: c.llm } : {}),
          interrupts: irq,
          agent: { synthesis: "auto" }
        })
        const legacy = legacyJournal(c.stored, () => injectNow(irq, CID, NOTE))
        yield* Effect.flatMap(
          ReactAgent.ReactAgent,
          (agent) => agent.execute({ query: "q", conversationId: CID }, legacy.journal)
        ).pipe(
          Effect.provide(h.layer)
        )
        assert.deepStrictEqual(legacy.ran.filter((n) => n.startsWith("llm/") || n.startsWith("drain/")), [
          "llm/1",
          c.drain,
          "llm/2"
        ])
        // the stored answer was suppressed by the message; the model, asked once (llm/2), read it
        assert.strictEqual(h.requests().length, 1)
        assert.isTrue(hasNote(h.requests()[0].request.messages))
        assert.deepStrictEqual(
          legacy.events.filter((e) => e._tag === "Inject").map((e) => e._tag === "Inject" && e.content),
          [NOTE]
        )
        const done = legacy.events.find((e): e is Extract<RunEvent, { _tag: "Done" }> => e._tag === "Done")
        assert.strictEqual(done?.answer, "la réponse")
      }))
  }
})
