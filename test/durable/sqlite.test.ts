/**
 * Durable runs on the embedded database: the real server process (`npm start`'s
 * main.ts) on a SQLite file, a fake OpenAI-compatible model in this process
 * whose replies are slow enough to kill in between, and a real MCP server whose
 * tools record every execution to a file. The server is killed with SIGKILL at
 * different points of a run and restarted on the same file; the run must
 * continue by itself, run no completed tool again, and a client reconnecting
 * with its last event id gets `resumed` once, the rest with continuing ids, and
 * `done`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { type ServerProcess, startServerProcess } from "../utils/serverProcess.js"
import { getJson, openSse, postJson, type SseEvent } from "../utils/sse.js"

const RECORDER = fileURLToPath(new URL("../utils/recorderMcp.ts", import.meta.url))

interface Setup {
  readonly dir: string
  readonly records: () => ReadonlyArray<string>
  readonly env: Record<string, string>
}

const setup = (llmUrl: string): Setup => {
  const dir = mkdtempSync(join(tmpdir(), "react-durable-"))
  const recordFile = join(dir, "records.txt")
  writeFileSync(recordFile, "")
  const mcp = join(dir, "mcp.json")
  writeFileSync(mcp, JSON.stringify({
    mcpServers: { rec: { command: process.execPath, args: ["--import", "tsx", RECORDER], env: { RECORD_FILE: recordFile } } }
  }))
  return {
    dir,
    records: () => readFileSync(recordFile, "utf8").split("\n").filter((l) => l !== ""),
    env: {
      DATABASE_PATH: join(dir, "react.sqlite"),
      LLM_BASE_URL: llmUrl,
      LLM_MODEL: "fake-model",
      LLM_API_KEY: "test",
      LLM_MAX_RETRIES: "0",
      MCP_CONFIG: mcp,
      RUN_DETACH_GRACE_MS: "60000",
      REACT_COMPLETION_CHECK_MIN_TOOLS: "10",
      // the fakes below answer streamed requests as the synthesis call; the streamed loop
      // calls of synthesis policy auto have a test of their own
      REACT_SYNTHESIS: "always"
    }
  }
}

const toolMessages = (body: any) => (body?.messages ?? []).filter((m: any) => m.role === "tool")

/** Every assistant tool call of a request is followed by its tool message (what providers demand). */
const assertPaired = (body: any) => {
  const messages: Array<any> = body?.messages ?? []
  messages.forEach((m, i) => {
    for (const call of m.tool_calls ?? []) {
      const answered = messages.slice(i + 1).some((n) => n.role === "tool" && n.tool_call_id === call.id)
      assert.isTrue(answered, `tool call ${call.id} unanswered in a request`)
    }
  })
}

const waitUntil = async (predicate: () => boolean | Promise<boolean>, timeoutMs: number, what: string) => {
  const started = Date.now()
  while (!(await predicate())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** Opens a run, reads its events until `until` says stop, then SIGKILLs the server. */
const runUntilKill = async (server: ServerProcess, conversation: string, until: (e: SseEvent) => boolean) => {
  const seen: Array<SseEvent> = []
  let kill: Promise<void> | undefined
  await openSse(`${server.url}/api/react`, {
    body: { query: "record something", conversation_id: conversation },
    timeoutMs: 30_000,
    onEvent: (e) => {
      seen.push(e)
      if (kill === undefined && until(e)) kill = server.kill("SIGKILL")
    }
  }).catch(() => undefined)
  await kill
  return seen
}

/** Resumes from the last id; returns the events after it. */
const resume = async (url: string, conversation: string, lastId: string) =>
  (await openSse(`${url}/api/react/events?conversation_id=${conversation}`, {
    headers: { "last-event-id": lastId },
    timeoutMs: 60_000
  })).events

const assertContinues = (before: ReadonlyArray<SseEvent>, after: ReadonlyArray<SseEvent>) => {
  const ids = [...before, ...after].map((e) => Number(e.id))
  ids.forEach((id, i) => assert.strictEqual(id, i + 1, `event ids continue: ${ids.join(",")}`))
  assert.strictEqual(after.filter((e) => e.event === "phase" && e.data.phase === "resumed").length, 1)
  assert.strictEqual(after[after.length - 1].event, "done")
}

/**
 * The stored conversation after the run: pairing holds, the query is stored once,
 * and no assistant tool call or tool message is stored twice (nothing duplicated
 * by the replay), every tool call answered (nothing lost).
 */
const assertStoredOnce = async (url: string, conversation: string, query = "record something") => {
  const stored = await getJson(`${url}/api/conversations/${conversation}`)
  const messages: Array<any> = stored.body.messages
  assertPaired({ messages })
  assert.strictEqual(messages.filter((m) => m.role === "user" && m.content === query).length, 1, "the query is stored once")
  const callIds = messages.flatMap((m) => (m.tool_calls ?? []).map((c: any) => c.id))
  const toolIds = messages.filter((m) => m.role === "tool").map((m) => m.tool_call_id)
  assert.strictEqual(new Set(callIds).size, callIds.length, `no tool call stored twice: ${callIds.join(",")}`)
  assert.deepStrictEqual([...toolIds].sort(), [...callIds].sort(), "one tool message per call")
  assert.strictEqual(messages[messages.length - 1].role, "assistant", "the turn ends with the answer")
  return messages
}

const answer = (events: ReadonlyArray<SseEvent>) =>
  events.filter((e) => e.event === "answer" && e.data.status === "delta").map((e) => e.data.content).join("")

/**
 * Kills the server after the third answer delta of a run whose answer is `words`, restarts it on the
 * same file and resumes: the client gets `reset`, then the whole answer again, stored once.
 * Returns the events after the restart, for checks of the scenario's own.
 */
const killDuringAnswer = async (env: Record<string, string>, conversation: string, words: ReadonlyArray<string>) => {
  const first = await startServerProcess(env)
  let deltas = 0
  const before = await runUntilKill(first, conversation, (e) => e.event === "answer" && e.data.status === "delta" && ++deltas === 3)
  assert.strictEqual(answer(before), words.slice(0, 3).join(""))
  const second = await startServerProcess(env)
  try {
    const after = await resume(second.url, conversation, before[before.length - 1].id!)
    assertContinues(before, after)
    const reset = after.findIndex((e) => e.event === "answer" && e.data.status === "reset")
    assert.isAtLeast(reset, 0)
    assert.strictEqual(answer(after.slice(reset)), words.join(""))
    assert.strictEqual(after[after.length - 1].data.answer, words.join(""))
    const stored = await assertStoredOnce(second.url, conversation)
    assert.strictEqual(stored[stored.length - 1].content, words.join(""), "the stored answer is the one streamed again, once")
    return after
  } finally {
    await second.kill()
  }
}

describe("durable runs on SQLite (real server processes, SIGKILL)", () => {
  it.live("kill -9 during a tool call: the call is not run twice (restart error), the run goes on and ends with done", () =>
    Effect.promise(async () => {
      const fake = await FakeOpenAi.start((body) => {
        if (body?.stream) return FakeOpenAi.sseText("It was recorded.")
        const tools = toolMessages(body).length
        return tools === 0
          ? FakeOpenAi.completion({ toolCalls: [{ id: "call_t1", name: "rec__record", arguments: JSON.stringify({ label: "t1", ms: 5000 }) }], delayMs: 200 })
          : FakeOpenAi.completion({ content: "done", delayMs: 200 })
      })
      const s = setup(fake.url)
      try {
        const first = await startServerProcess(s.env)
        const before = await runUntilKill(first, "kill-tool", (e) => e.event === "step" && e.data.type === "iteration" && e.data.status === "start")
        await waitUntil(() => s.records().includes("start t1"), 10_000, "the tool to start")
        const second = await startServerProcess(s.env)
        try {
          const after = await resume(second.url, "kill-tool", before[before.length - 1].id!)
          assertContinues(before, after)
          const toolDone = after.find((e) => e.event === "step" && e.data.type === "iteration" && e.data.status === "done")
          assert.include(toolDone?.data.error, "interrupted by a server restart; not retried")
          assert.deepStrictEqual(s.records(), ["start t1"], "the call in flight was not run again")
          for (const r of fake.requests) assertPaired(r.body)
          const stored = await getJson(`${second.url}/api/conversations/kill-tool`)
          assert.strictEqual(stored.body.turn_details[0].status, "completed")
          await assertStoredOnce(second.url, "kill-tool")
        } finally {
          await second.kill()
        }
      } finally {
        await fake.close()
      }
    }), 120_000)

  it.live("kill -9 during an idempotent tool call: it runs again, once more", () =>
    Effect.promise(async () => {
      const fake = await FakeOpenAi.start((body) => {
        if (body?.stream) return FakeOpenAi.sseText("Recorded twice, safely.")
        return toolMessages(body).length === 0
          ? FakeOpenAi.completion({ toolCalls: [{ id: "call_i1", name: "rec__record_idem", arguments: JSON.stringify({ label: "i1", ms: 4000 }) }] })
          : FakeOpenAi.completion({ content: "done" })
      })
      const s = setup(fake.url)
      try {
        const first = await startServerProcess(s.env)
        const before = await runUntilKill(first, "kill-idem", (e) => e.event === "step" && e.data.type === "iteration" && e.data.status === "start")
        await waitUntil(() => s.records().includes("start i1"), 10_000, "the tool to start")
        const second = await startServerProcess(s.env)
        try {
          const after = await resume(second.url, "kill-idem", before[before.length - 1].id!)
          assertContinues(before, after)
          const toolDone = after.find((e) => e.event === "step" && e.data.type === "iteration" && e.data.status === "done")
          assert.strictEqual(toolDone?.data.observation, "recorded i1")
          assert.deepStrictEqual(s.records(), ["start i1", "start i1", "end i1"])
        } finally {
          await second.kill()
        }
      } finally {
        await fake.close()
      }
    }), 120_000)

  it.live("kill -9 after a tool round (during the next LLM call): the completed tool is not run again", () =>
    Effect.promise(async () => {
      const fake = await FakeOpenAi.start((body) => {
        if (body?.stream) return FakeOpenAi.sseText("Both recorded.")
        const tools = toolMessages(body).length
        if (tools === 0) return FakeOpenAi.completion({ toolCalls: [{ id: "call_a", name: "rec__record", arguments: JSON.stringify({ label: "a", ms: 100 }) }] })
        if (tools === 1) return FakeOpenAi.completion({ toolCalls: [{ id: "call_b", name: "rec__record", arguments: JSON.stringify({ label: "b", ms: 100 }) }], delayMs: 3000 })
        return FakeOpenAi.completion({ content: "done" })
      })
      const s = setup(fake.url)
      try {
        const first = await startServerProcess(s.env)
        const before = await runUntilKill(first, "kill-llm", (e) => e.event === "step" && e.data.type === "thinking" && e.data.status === "start" && e.data.iteration === 2)
        const second = await startServerProcess(s.env)
        try {
          const after = await resume(second.url, "kill-llm", before[before.length - 1].id!)
          assertContinues(before, after)
          assert.deepStrictEqual(s.records(), ["start a", "end a", "start b", "end b"])
          for (const r of fake.requests) assertPaired(r.body)
          assert.include(answer(after), "Both recorded.")
          const stored = await assertStoredOnce(second.url, "kill-llm")
          assert.strictEqual(stored.filter((m) => m.role === "tool").length, 2)
        } finally {
          await second.kill()
        }
      } finally {
        await fake.close()
      }
    }), 120_000)

  it.live("kill -9 during synthesis: the client gets answer reset, then the whole answer again", () =>
    Effect.promise(async () => {
      const words = Array.from({ length: 30 }, (_, i) => `w${i} `)
      const fake = await FakeOpenAi.start((body) =>
        body?.stream
          ? FakeOpenAi.sse([...words.map((w) => FakeOpenAi.chunk.content(w)), FakeOpenAi.chunk.finish("stop")], { chunkDelayMs: 150 })
          : FakeOpenAi.completion({ content: "draft" })
      )
      const s = setup(fake.url)
      try {
        await killDuringAnswer(s.env, "kill-answer", words)
      } finally {
        await fake.close()
      }
    }), 120_000)

  it.live("kill -9 while an interrupt is queued: after the restart it is taken in, and the run finishes by itself", () =>
    Effect.promise(async () => {
      const fake = await FakeOpenAi.start((body) => {
        if (body?.stream) return FakeOpenAi.sseText("Handled the follow-up.")
        const tools = toolMessages(body).length
        return tools === 0
          ? FakeOpenAi.completion({ toolCalls: [{ id: "call_q", name: "rec__record_idem", arguments: JSON.stringify({ label: "q", ms: 4000 }) }] })
          : FakeOpenAi.completion({ content: "done" })
      })
      const s = setup(fake.url)
      try {
        const first = await startServerProcess(s.env)
        const seen: Array<SseEvent> = []
        const stream = openSse(`${first.url}/api/react`, {
          body: { query: "record something", conversation_id: "kill-inject-2" },
          timeoutMs: 30_000,
          onEvent: (e) => void seen.push(e)
        }).catch(() => undefined)
        await waitUntil(() => seen.some((e) => e.event === "step" && e.data.type === "iteration" && e.data.status === "start"), 15_000, "the tool to start")
        const queued = await postJson(`${first.url}/api/react/inject`, { conversation_id: "kill-inject-2", content: "also note the time" })
        assert.strictEqual(queued.status, 200)
        await first.kill("SIGKILL")
        await stream
        const second = await startServerProcess(s.env)
        try {
          // nobody reconnects: the run finishes by itself
          await waitUntil(async () => (await getJson(`${second.url}/api/conversations/kill-inject-2`)).body?.active === false, 60_000, "the run to finish")
          const after = await resume(second.url, "kill-inject-2", seen[seen.length - 1].id!)
          assertContinues(seen, after)
          const inject = after.find((e) => e.event === "inject")
          assert.strictEqual(inject?.data.content, "also note the time")
          const last = fake.requests[fake.requests.length - 2].body
          assert.isTrue(
            last.messages.some((m: any) => m.role === "user" && String(m.content).startsWith("[USER INTERRUPT]") && String(m.content).includes("also note the time")),
            "the loop call after the restart carries the interrupt"
          )
          const stored = await assertStoredOnce(second.url, "kill-inject-2")
          assert.strictEqual(stored.filter((m) => m.role === "user" && String(m.content).includes("also note the time")).length, 1)
        } finally {
          await second.kill()
        }
      } finally {
        await fake.close()
      }
    }), 120_000)

  it.live("synthesis auto: kill -9 while the answer streams from the loop call: reset, the answer again, no synthesis call", () =>
    Effect.promise(async () => {
      const words = Array.from({ length: 30 }, (_, i) => `v${i} `)
      const fake = await FakeOpenAi.start((body) =>
        toolMessages(body).length === 0
          ? FakeOpenAi.sse([
            FakeOpenAi.chunk.role(),
            FakeOpenAi.chunk.toolCall(0, { id: "call_s", name: "rec__record", arguments: JSON.stringify({ label: "s", ms: 100 }) }),
            FakeOpenAi.chunk.finish("tool_calls")
          ])
          : FakeOpenAi.sse([...words.map((w) => FakeOpenAi.chunk.content(w)), FakeOpenAi.chunk.finish("stop")], { chunkDelayMs: 150 })
      )
      const s = setup(fake.url)
      const env = { ...s.env, REACT_SYNTHESIS: "auto" }
      try {
        await killDuringAnswer(env, "kill-auto", words)
        assert.isTrue(fake.requests.every((r) => r.body?.stream === true), "every loop call streams")
        assert.isFalse(
          fake.requests.some((r) => String(r.body?.messages?.[0]?.content ?? "").startsWith("You write the final answer")),
          "no synthesis call"
        )
        assert.deepStrictEqual(s.records(), ["start s", "end s"], "the completed tool is not run again")
      } finally {
        await fake.close()
      }
    }), 120_000)

  it.live("kill -9 with a client attached, nobody reconnects: the detach grace cancels the resumed run", () =>
    Effect.promise(async () => {
      const fake = await FakeOpenAi.start((body) =>
        body?.stream
          ? FakeOpenAi.sseText("never")
          : FakeOpenAi.completion({ toolCalls: [{ id: "call_g", name: "rec__record_idem", arguments: JSON.stringify({ label: "g", ms: 20_000 }) }] })
      )
      const s = setup(fake.url)
      const env = { ...s.env, RUN_DETACH_GRACE_MS: "1500" }
      try {
        const first = await startServerProcess(env)
        const before = await runUntilKill(first, "kill-grace", (e) => e.event === "step" && e.data.type === "iteration" && e.data.status === "start")
        const second = await startServerProcess(env)
        try {
          // the lease of the client of the dead process is gone: the grace runs from the restart
          await waitUntil(async () => (await getJson(`${second.url}/api/conversations/kill-grace`)).body?.active === false, 15_000, "the grace to cancel the run")
          const after = await resume(second.url, "kill-grace", before[before.length - 1].id!)
          const done = after[after.length - 1]
          assert.deepStrictEqual([done.event, done.data.cancelled], ["done", true])
          assert.include(second.output(), "no client re-attached within 1500 ms")
        } finally {
          await second.kill()
        }
      } finally {
        await fake.close()
      }
    }), 120_000)

  it.live("kill -9 while a call waits for approval: after the restart it still waits, an approval runs it once", () =>
    Effect.promise(async () => {
      const fake = await FakeOpenAi.start((body) => {
        if (body?.stream) return FakeOpenAi.sseText("Recorded after approval.")
        return toolMessages(body).length === 0
          ? FakeOpenAi.completion({ toolCalls: [{ id: "call_ap", name: "rec__record", arguments: JSON.stringify({ label: "ap", ms: 100 }) }] })
          : FakeOpenAi.completion({ content: "done" })
      })
      const s = setup(fake.url)
      const env = { ...s.env, REACT_APPROVAL_TOOLS: "rec__record" }
      try {
        const first = await startServerProcess(env)
        const before = await runUntilKill(first, "kill-approval", (e) => e.event === "approval" && e.data.status === "requested")
        const requested = before[before.length - 1].data
        assert.deepStrictEqual(s.records(), [], "nothing runs before the approval")
        const second = await startServerProcess(env)
        try {
          // the restarted run waits for the same approval (same id): a person answers it now
          await waitUntil(async () => {
            const list = await getJson(`${second.url}/api/conversations`)
            return (list.body?.conversations ?? []).some((c: any) => c.id === "kill-approval" && c.waiting_approval === true)
          }, 30_000, "the restarted run to wait for the approval")
          const answer = await postJson(`${second.url}/api/react/approve`, {
            conversation_id: "kill-approval",
            approval_id: requested.approval_id,
            decision: "approve"
          })
          assert.strictEqual(answer.status, 200, JSON.stringify(answer.body))
          const after = await resume(second.url, "kill-approval", before[before.length - 1].id!)
          assertContinues(before, after)
          assert.isTrue(after.some((e) => e.event === "approval" && e.data.status === "approved"))
          assert.deepStrictEqual(s.records(), ["start ap", "end ap"], "approved once, run once")
          const again = await postJson(`${second.url}/api/react/approve`, {
            conversation_id: "kill-approval",
            approval_id: requested.approval_id,
            decision: "approve"
          })
          assert.strictEqual(again.status, 409)
        } finally {
          await second.kill()
        }
      } finally {
        await fake.close()
      }
    }), 120_000)
})
