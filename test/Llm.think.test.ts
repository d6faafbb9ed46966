/**
 * `<think>` blocks: one scanner splits a whole reply (`Llm.splitThinking`) and a
 * streamed one (the scripted model routes its chunks through it, as the provider
 * layers do). The whole-reply split is pinned to the rules it always had (the
 * reference below); the streamed split does not depend on where the chunks are
 * cut.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as fc from "effect/FastCheck"
import * as Stream from "effect/Stream"
import * as Llm from "../src/Llm.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"

/** The whole-reply rules as they were written before the scanner was shared: one regular expression. */
const reference = (content: string) => {
  if (!content.includes("<think>")) return { content, reasoning: "" }
  const parts: Array<string> = []
  const rest = content.replace(/<think>([\s\S]*?)(?:<\/think>|$)/g, (_, inner: string) => {
    parts.push(inner.trim())
    return ""
  })
  return { content: rest.trim(), reasoning: parts.join("\n\n") }
}

const pieces = ["<think>", "</think>", "<thi", "nk>", "</", "think>", "<", ">", " ", "\n", "a", "bc", "x y"]
const text = fc.array(fc.constantFrom(...pieces), { maxLength: 24 }).map((p) => p.join(""))

/** Cuts `s` at the given offsets. */
const cut = (s: string, at: ReadonlyArray<number>): Array<string> => {
  const points = [...new Set(at.map((n) => n % (s.length + 1)))].sort((a, b) => a - b)
  const out: Array<string> = []
  let from = 0
  for (const p of points) {
    out.push(s.slice(from, p))
    from = p
  }
  out.push(s.slice(from))
  return out.filter((c) => c !== "")
}

const streamed = (content: string, chunks: ReadonlyArray<string>) =>
  Effect.map(
    Stream.runCollect(
      ScriptedLlm.makeUnsafe([ScriptedLlm.text(content, { chunks })]).service.streamChat({ messages: [] })
    ),
    (deltas) => {
      let c = ""
      let r = ""
      for (const d of Chunk.toReadonlyArray(deltas)) {
        if (d._tag === "Content") c += d.text
        else if (d._tag === "Reasoning") r += d.text
      }
      return { content: c, reasoning: r }
    }
  )

describe("<think> blocks", () => {
  it("a whole reply: blocks out, trimmed, joined by a blank line", () => {
    assert.deepStrictEqual(Llm.splitThinking("<think>\n plan \n</think>\n\nAnswer"), {
      content: "Answer",
      reasoning: "plan"
    })
    assert.deepStrictEqual(Llm.splitThinking("a <think>x</think> b<think>y"), { content: "a  b", reasoning: "x\n\ny" })
    assert.deepStrictEqual(Llm.splitThinking("no tags"), { content: "no tags", reasoning: "" })
    fc.assert(fc.property(text, (s) => assert.deepStrictEqual(Llm.splitThinking(s), reference(s))), { numRuns: 2000 })
  })

  it.effect("a streamed reply splits the same wherever its chunks are cut", () =>
    Effect.promise(() =>
      fc.assert(
        fc.asyncProperty(text, fc.array(fc.nat(), { maxLength: 6 }), async (s, at) => {
          const whole = await Effect.runPromise(streamed(s, [s]))
          const chunked = await Effect.runPromise(streamed(s, cut(s, at)))
          assert.deepStrictEqual(chunked, whole)
          // streamed, the blocks' text comes untrimmed: but for white space, both splits agree
          const bare = (
            x: { content: string; reasoning: string }
          ) => [x.content.replace(/\s/g, ""), x.reasoning.replace(/\s/g, "")]
          assert.deepStrictEqual(bare(whole), bare(reference(s)))
        }),
        { numRuns: 300 }
      )
    ))
})
