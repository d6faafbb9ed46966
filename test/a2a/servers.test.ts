/**
 * Two of our servers calling each other over A2A (real server processes):
 * server B has server A as a tool (`REACT_A2A_AGENTS`, with A's bearer token
 * as that remote's header). A is killed with SIGKILL while its task's run waits
 * on its model, and restarted on the same file and port: the run resumes by
 * itself, B's call follows the task (`GetTask`) until it is over, B's run
 * answers with A's answer — and A did the work once (one task, the SDK's client
 * reads it `completed` after the restart).
 */
import { TaskState } from "@a2a-js/sdk"
import { ClientFactory } from "@a2a-js/sdk/client"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { sqliteSetup, waitUntil } from "../utils/killMatrix.js"
import { startServerProcess } from "../utils/serverProcess.js"
import { openSse, type SseEvent } from "../utils/sse.js"

const TOKEN_A = "token-of-a"

describe("two servers over A2A (real processes)", () => {
  it.live(
    "B calls A; A is killed mid-task and restarts: the task finishes, B gets its answer, A worked once",
    () =>
      Effect.promise(async () => {
        // A: its first loop call is slow (the kill lands in it); the resumed run asks again and answers
        const fakeA = await FakeOpenAi.start((body) =>
          body?.stream
            ? FakeOpenAi.sseText("Callee answer.")
            : FakeOpenAi.completion({ content: "callee done", delayMs: 4000 })
        )
        // B: calls A's agent once, then answers with what it said
        const fakeB = await FakeOpenAi.start((body, index) => {
          if (body?.stream) return FakeOpenAi.sseText("B relays: Callee answer.")
          const tools = (body.messages ?? []).filter((m: any) => m.role === "tool").length
          return tools === 0
            ? FakeOpenAi.completion({
              toolCalls: [{
                id: FakeOpenAi.freshCallId(index),
                name: "callee",
                arguments: JSON.stringify({ query: "CALLEE-TASK" })
              }]
            })
            : FakeOpenAi.completion({ content: "relayed" })
        })
        const a = sqliteSetup(fakeA.url)
        const b = sqliteSetup(fakeB.url)
        let serverA = await startServerProcess({ ...a.env, API_TOKEN: TOKEN_A })
        const serverB = await startServerProcess({
          ...b.env,
          REACT_A2A_AGENTS: JSON.stringify([{
            url: serverA.url,
            name: "callee",
            headers: { Authorization: `Bearer ${TOKEN_A}` }
          }])
        })
        try {
          const events: Array<SseEvent> = []
          const run = openSse(`${serverB.url}/api/react`, {
            body: { query: "ASK-B", conversation_id: "b-conv" },
            timeoutMs: 120_000,
            onEvent: (e) => void events.push(e)
          })
          await waitUntil(() => fakeA.requests.length >= 1, 30_000, "A's run asked its model")
          await serverA.kill("SIGKILL")
          const killedAfter = fakeA.requests.length
          serverA = await serverA.restart()
          const result = await run
          const done = result.events[result.events.length - 1]
          assert.strictEqual(done.event, "done")
          assert.strictEqual(done.data.answer, "B relays: Callee answer.")
          const call = result.events.find((e) =>
            e.event === "step" && e.data.type === "iteration" && e.data.status === "done"
          )
          assert.strictEqual(call?.data.tool_name, "callee")
          assert.isNull(call?.data.error)
          assert.strictEqual(call?.data.observation, "Callee answer.")
          // the connection loss and the remote task's progress reached B's stream as the call's progress
          assert.isTrue(
            events.some((e) =>
              e.event === "step" && e.data.status === "progress" && String(e.data.message).includes("callee")
            )
          )

          // A: one task, completed after the restart, read by the SDK's own client
          const client = await new ClientFactory().createFromUrl(serverA.url)
          const auth = { serviceParameters: { Authorization: `Bearer ${TOKEN_A}` } }
          const listed = await client.listTasks({
            tenant: "",
            contextId: "",
            status: 0,
            pageToken: "",
            statusTimestampAfter: undefined
          }, auth)
          assert.strictEqual(listed.tasks.length, 1, "A did the work once")
          const task = await client.getTask({ tenant: "", id: listed.tasks[0].id }, auth)
          assert.strictEqual(task.status?.state, TaskState.TASK_STATE_COMPLETED)
          assert.strictEqual(
            task.artifacts[0]?.parts[0]?.content?.$case === "text" ? task.artifacts[0].parts[0].content.value : "",
            "Callee answer."
          )
          // A's model: the call in flight at the kill was never answered; after the restart its run asked again
          assert.strictEqual(killedAfter, 1)
          assert.deepStrictEqual(fakeA.requests.slice(1).map((r) => r.body.stream === true), [false, true])
        } finally {
          await serverB.kill()
          await serverA.kill()
          await fakeA.close()
          await fakeB.close()
        }
      }),
    180_000
  )
})
