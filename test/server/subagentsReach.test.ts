/**
 * What reaches through a sub-agent of `REACT_SUBAGENTS_FILE` on the real server
 * (routes, run registry, durable runs on SQLite, the `openai`-SDK model over a
 * fake OpenAI endpoint), docs/agents.md "Reaching through":
 * - an approval the child's call needs is asked on the parent's stream (with
 *   the child's `agent`) and answered on the parent's conversation;
 * - cancelling the parent's conversation stops the child mid-tool;
 * - a message injected while the child works is the parent's: the parent's
 *   next model request has it, the child's never do;
 * - the parent's budget pays for the child: a child's call that needs more than
 *   the parent left is refused before it is made.
 *
 * The fake model tells the parent's requests from the child's by the user's
 * query (`PARENT-QUERY`, which the child, with history `none`, never sees) and
 * gives every request fresh tool-call ids.
 */
import { assert, describe, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Tool from "../../src/Tool.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { startServer } from "../utils/serverHarness.js"
import { openSse, postJson, type SseEvent } from "../utils/sse.js"

const { freshCallId } = FakeOpenAi

const isParent = (body: any) => JSON.stringify(body.messages).includes("PARENT-QUERY")
const toolResults = (body: any) => (body?.messages ?? []).filter((m: any) => m.role === "tool").length

/** Every execution of a tool, as it happens: `start`, then `end` or `interrupted`. */
const recordingTool = (name: string, ms: number) => {
  const log: Array<string> = []
  const tool = Tool.make({
    name,
    description: `The ${name} tool`,
    parameters: Schema.Struct({ path: Schema.String }),
    handler: ({ path }) =>
      Effect.sync(() => log.push(`start ${path}`)).pipe(
        Effect.zipRight(Effect.sleep(ms)),
        Effect.zipRight(Effect.sync(() => log.push(`end ${path}`))),
        Effect.as(`did ${path}`),
        Effect.onInterrupt(() => Effect.sync(() => log.push(`interrupted ${path}`)))
      )
  })
  return { tool, log }
}

/** A tool call or a text, streamed when the request asks for a stream (a loop call that may be the answer). */
const reply = (
  body: any,
  call: { readonly id: string; readonly name: string; readonly arguments: string } | string
): FakeOpenAi.FakeReply => {
  if (typeof call === "string") {
    return body?.stream
      ? FakeOpenAi.sseText(call)
      : FakeOpenAi.completion({ content: call })
  }
  if (!body?.stream) return FakeOpenAi.completion({ toolCalls: [call] })
  const { chunk } = FakeOpenAi
  return FakeOpenAi.sse([chunk.role(), chunk.toolCall(0, call), chunk.finish("tool_calls"), chunk.usage(10, 4)])
}

/** The parent delegates to `worker` once; the child calls `tool` once; each then answers (and a synthesis). */
const responder = (tool: string): FakeOpenAi.FakeResponder => (body, index) => {
  const parent = isParent(body)
  if (toolResults(body) > 0 || (body?.tools ?? []).length === 0) {
    return reply(body, parent ? "Parent answer." : "Child answer.")
  }
  return parent
    ? reply(body, { id: freshCallId(index), name: "worker", arguments: JSON.stringify({ query: "CHILD-TASK" }) })
    : reply(body, { id: freshCallId(index), name: tool, arguments: JSON.stringify({ path: "notes.txt" }) })
}

const subagentsFile = (tool: string) => {
  const path = join(mkdtempSync(join(tmpdir(), "subagents-")), "subagents.json")
  writeFileSync(
    path,
    JSON.stringify([{
      name: "worker",
      description: "Does the work",
      system_prompt: "You are the worker.",
      tools: [tool]
    }])
  )
  return path
}

const server = (fake: { readonly url: string }, tool: Tool.Tool, vars: Record<string, string> = {}) =>
  startServer({
    llmUrl: fake.url,
    tools: [tool],
    settings: { detachGraceMs: 10_000 },
    provide: Layer.setConfigProvider(ConfigProvider.fromMap(
      new Map(Object.entries({
        REACT_SUBAGENTS_FILE: subagentsFile(tool.name),
        REACT_COMPLETION_CHECK_MIN_TOOLS: "10",
        ...vars
      }))
    ))
  })

const isChildToolStart = (e: SseEvent) =>
  e.event === "step" && e.data.type === "iteration" && e.data.status === "start" && e.data.agent?.name === "worker"

describe("sub-agents of REACT_SUBAGENTS_FILE: what reaches through (server)", () => {
  it.scopedLive(
    "an approval the child needs is asked on the parent's stream and answered on the parent's conversation",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped(responder("fs__write_file"))
        const file = recordingTool("fs__write_file", 0)
        const { url } = yield* server(fake, file.tool, { REACT_APPROVAL_TOOLS: "fs__write_*" })
        const answers: Array<number> = []
        const result = yield* Effect.promise(() =>
          openSse(`${url}/api/react`, {
            body: { query: "PARENT-QUERY", conversation_id: "reach-approve" },
            timeoutMs: 30_000,
            onEvent: async (e) => {
              if (e.event !== "approval" || e.data.status !== "requested") return
              // nothing ran before the person answered
              answers.push(file.log.length)
              const answer = await postJson(`${url}/api/react/approve`, {
                conversation_id: "reach-approve",
                approval_id: e.data.approval_id,
                decision: "approve"
              })
              answers.push(answer.status)
            }
          })
        )
        assert.deepStrictEqual(answers, [0, 200])
        assert.deepStrictEqual(
          file.log,
          ["start notes.txt", "end notes.txt"],
          "the child's call ran once, after the approval"
        )
        const approvals = result.events.filter((e) => e.event === "approval")
        assert.deepStrictEqual(approvals.map((e) => [e.data.status, e.data.agent?.name]), [["requested", "worker"], [
          "approved",
          "worker"
        ]])
        const agentDone = result.events.find((e) => e.event === "agent" && e.data.status === "done")
        assert.strictEqual(agentDone?.data.answer, "Child answer.")
        const done = result.events[result.events.length - 1]
        assert.strictEqual(done.event, "done")
        assert.strictEqual(done.data.answer, "Parent answer.")
      }),
    60_000
  )

  it.scopedLive(
    "cancelling the parent's conversation stops the child in its tool call; no model is asked again",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped(responder("slow__work"))
        const slow = recordingTool("slow__work", 30_000)
        const { url } = yield* server(fake, slow.tool)
        let requestsAtCancel = -1
        let cancel: { status: number; body: any } | undefined
        const result = yield* Effect.promise(() =>
          openSse(`${url}/api/react`, {
            body: { query: "PARENT-QUERY", conversation_id: "reach-cancel" },
            timeoutMs: 30_000,
            onEvent: async (e) => {
              if (!isChildToolStart(e)) return
              requestsAtCancel = fake.requests.length
              cancel = await postJson(`${url}/api/react/cancel`, { conversation_id: "reach-cancel" })
            }
          })
        )
        assert.strictEqual(cancel?.status, 200)
        const done = result.events[result.events.length - 1]
        assert.strictEqual(done.event, "done")
        assert.isTrue(done.data.cancelled, JSON.stringify(done.data))
        assert.deepStrictEqual(
          slow.log,
          ["start notes.txt", "interrupted notes.txt"],
          "the child's tool was interrupted"
        )
        yield* Effect.sleep("300 millis")
        // parent: the call of worker; child: the call of slow__work — nothing after the cancel
        assert.strictEqual(requestsAtCancel, 2)
        assert.deepStrictEqual(fake.requests.map((r) => isParent(r.body)), [true, false])
      }),
    60_000
  )

  it.scopedLive(
    "a message injected while the child works is the parent's: its next request has it, the child's never do",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped(responder("slow__work"))
        const slow = recordingTool("slow__work", 1_500)
        const { url } = yield* server(fake, slow.tool)
        let injected: { status: number; body: any } | undefined
        const result = yield* Effect.promise(() =>
          openSse(`${url}/api/react`, {
            body: { query: "PARENT-QUERY", conversation_id: "reach-inject" },
            timeoutMs: 30_000,
            onEvent: async (e) => {
              if (!isChildToolStart(e) || injected !== undefined) return
              injected = await postJson(`${url}/api/react/inject`, {
                conversation_id: "reach-inject",
                content: "USER-FOLLOWUP"
              })
            }
          })
        )
        assert.strictEqual(injected?.status, 200)
        assert.deepStrictEqual(slow.log, ["start notes.txt", "end notes.txt"])
        const has = (body: any) => JSON.stringify(body.messages).includes("USER-FOLLOWUP")
        const requests = fake.requests.map((r) => r.body)
        const child = requests.filter((b) => !isParent(b))
        const parent = requests.filter(isParent)
        assert.isTrue(child.length >= 2, "the child's call and its answer")
        assert.isFalse(child.some(has), "no request of the child has the parent's follow-up")
        const afterCall = parent.filter((b) => toolResults(b) > 0)
        assert.isTrue(afterCall.length > 0 && afterCall.every(has), "the parent's requests after the call have it")
        assert.isFalse(has(parent[0]), "the parent's first request was before it")
        const done = result.events[result.events.length - 1]
        assert.strictEqual(done.data.answer, "Parent answer.")
        assert.deepStrictEqual(done.data.pending_injections, [])
      }),
    60_000
  )

  it.scopedLive(
    "the parent's budget pays for the child: a child's call that needs more than the parent left is refused unmade",
    () =>
      Effect.gen(function*() {
        // the parent's call of worker spends 2,050 of a 2,400-token budget
        const base = responder("slow__work")
        const fake = yield* FakeOpenAi.scoped((body, index) =>
          isParent(body) && toolResults(body) === 0 && (body?.tools ?? []).length > 0 && !body?.stream
            ? FakeOpenAi.completion({
              toolCalls: [{
                id: freshCallId(index),
                name: "worker",
                arguments: JSON.stringify({ query: "CHILD-TASK" })
              }],
              usage: { prompt: 2_000, completion: 50 }
            })
            : base(body, index)
        )
        const slow = recordingTool("slow__work", 0)
        const { url } = yield* server(fake, slow.tool, { REACT_RUN_BUDGET_TOKENS: "2400" })
        const result = yield* Effect.promise(() =>
          openSse(`${url}/api/react`, {
            body: { query: "PARENT-QUERY", conversation_id: "reach-budget" },
            timeoutMs: 30_000
          })
        )
        // the child's first call would exceed what the parent left: refused on the parent's account, no request made
        const exhausted = result.events.filter((e) => e.event === "phase" && e.data.phase === "budget_exhausted")
        assert.deepStrictEqual(exhausted[0]?.data.agent?.name, "worker", JSON.stringify(exhausted.map((e) => e.data)))
        assert.strictEqual(exhausted[0].data.spent_tokens, 2_050, "the parent's spending")
        assert.strictEqual(exhausted[0].data.limit_tokens, 2_400)
        assert.deepStrictEqual(
          fake.requests.map((r) => isParent(r.body)),
          [true, true],
          "the child's model was never asked"
        )
        assert.deepStrictEqual(slow.log, [])
        const done = result.events[result.events.length - 1]
        assert.strictEqual(done.event, "done")
        assert.isAtMost(done.data.usage.total_tokens, 2_400)
      }),
    60_000
  )
})
