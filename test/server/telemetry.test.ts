/**
 * OTLP export from the real server process: `node --import tsx src/app/main.ts`
 * on the offline demo model (no LLM_* set), `OTEL_EXPORTER_OTLP_ENDPOINT`
 * pointing at a stand-in collector (test/utils/otlpCollector.ts, OTLP/HTTP
 * protobuf, the default protocol). One run with two parallel tool calls; its
 * spans must arrive as one trace under the request's `http.server` span, with
 * the GenAI attributes, and no credential from the request in any attribute.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import * as OtlpCollector from "../utils/otlpCollector.js"
import { openSse } from "../utils/sse.js"

const main = fileURLToPath(new URL("../../src/app/main.ts", import.meta.url))
const root = fileURLToPath(new URL("../..", import.meta.url))
const SECRET = "sk-test-do-not-export-1234"

/** The server process for the scope's lifetime (SIGTERM at the end, SIGKILL if it lingers); resolves with its port. */
const serverProcess = (env: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.promise(() => {
      // a vitest fork worker has an IPC channel: the child must not inherit it; no LLM_* (the demo model)
      const inherited = Object.fromEntries(
        Object.entries(process.env).filter(([k]) =>
          !k.startsWith("NODE_CHANNEL") && !k.startsWith("LLM_") && !k.startsWith("FAST_LLM_") && !k.startsWith("OTEL_")
        )
      )
      const child = spawn(process.execPath, ["--import", "tsx", main], {
        cwd: root,
        env: { ...inherited, ...env },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let output = ""
      child.stderr.on("data", (d) => (output += d.toString()))
      return new Promise<{ readonly child: ChildProcess; readonly port: number }>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the server did not start:\n${output}`)), 60_000)
        child.stdout.on("data", (d) => {
          output += d.toString()
          const ready = /ReAct engine ready: http:\/\/[^:]+:(\d+)/.exec(output)
          if (ready) {
            clearTimeout(timer)
            resolve({ child, port: Number(ready[1]) })
          }
        })
        child.once("exit", (code) => reject(new Error(`the server exited (${code}):\n${output}`)))
      })
    }),
    ({ child }) =>
      Effect.promise(() =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null) return resolve()
          const hard = setTimeout(() => child.kill("SIGKILL"), 10_000)
          child.once("exit", () => {
            clearTimeout(hard)
            resolve()
          })
          child.kill("SIGTERM")
        })
      )
  )

const until = async (check: () => boolean, ms: number, what: string) => {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

describe("OTLP export from the server process", () => {
  it.scopedLive(
    "a run with two parallel tool calls arrives as one trace under the request's span",
    () =>
      Effect.gen(function*() {
        const collector = yield* OtlpCollector.scoped
        const { port } = yield* serverProcess({
          PORT: "0",
          HOST: "127.0.0.1",
          DATABASE_PATH: join(mkdtempSync(join(tmpdir(), "react-engine-otel-")), "db.sqlite"),
          OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
          OTEL_BSP_SCHEDULE_DELAY: "200",
          OTEL_METRIC_EXPORT_INTERVAL: "300"
        })
        const result = yield* Effect.promise(() =>
          openSse(`http://127.0.0.1:${port}/api/react`, {
            body: { query: "What is 12*7+1 and what time is it in Tokyo?" },
            headers: { authorization: `Bearer ${SECRET}` },
            timeoutMs: 30_000
          })
        )
        assert.strictEqual(result.status, 200)
        const done = result.events.find((e) => e.event === "done")!
        assert.isDefined(done)
        const conversationId: string = done.data.conversation_id
        yield* Effect.promise(() =>
          until(() => collector.spans().some((s) => s.name === "invoke_agent ReactAgent"), 15_000, "the run's spans")
        )
        yield* Effect.promise(() =>
          until(
            () => collector.exports.some((e) => e.path === "/v1/metrics" && e.body.includes("react_engine.runs")),
            15_000,
            "the run metrics"
          )
        )
        const spans = collector.spans()
        if (process.env.PRINT_SPAN_TREE) {
          console.log(OtlpCollector.renderCollected(
            spans,
            process.env.PRINT_SPAN_TREE === "all"
              ? () => true
              : (k) =>
                k.startsWith("gen_ai.") || k.startsWith("react_engine.") || k === "error.type" || k === "url.path"
          ))
        }

        // a server run is a durable workflow: its spans (the workflow's own, one per activity,
        // and ours inside them) all descend from the request's span, in the request's trace
        const agent = spans.find((s) => s.name === "invoke_agent ReactAgent")!
        const byId = new Map(spans.map((s) => [s.spanId, s]))
        const ancestors = (span: typeof agent) => {
          const out: Array<typeof agent> = []
          for (let p = byId.get(span.parentSpanId ?? ""); p !== undefined; p = byId.get(p.parentSpanId ?? "")) {
            out.push(p)
          }
          return out
        }
        const request = ancestors(agent).find((s) => s.name.startsWith("http.server"))!
        assert.isDefined(request, "the run's spans descend from the request's span")
        assert.deepStrictEqual([request.name, request.kind, request.attributes["url.path"]], [
          "http.server POST",
          2,
          "/api/react"
        ])
        assert.strictEqual(agent.traceId, request.traceId)
        assert.deepStrictEqual(
          [
            agent.attributes["gen_ai.agent.name"],
            agent.attributes["gen_ai.conversation.id"],
            agent.attributes["react_engine.mode"],
            agent.attributes["react_engine.protocol"]
          ],
          ["ReactAgent", conversationId, "react", "native"]
        )
        assert.strictEqual(agent.attributes["gen_ai.usage.input_tokens"], done.data.usage.prompt_tokens)
        assert.strictEqual(agent.attributes["gen_ai.usage.output_tokens"], done.data.usage.completion_tokens)
        assert.strictEqual(agent.service, "effect-react-engine")

        const children = spans
          .filter((s) => /^(chat|execute_tool) /.test(s.name) && ancestors(s).includes(request))
          .sort((a, b) => (a.start < b.start ? -1 : 1))
        assert.deepStrictEqual(children.map((s) => s.name), [
          "chat offline-demo",
          "execute_tool calculator",
          "execute_tool current_time",
          // synthesis policy auto: the second loop call streams the answer, no synthesis call
          "chat offline-demo"
        ])
        // each inside the activity that stores its result
        assert.deepStrictEqual(children.map((s) => byId.get(s.parentSpanId ?? "")?.name), [
          "llm/1",
          `tool/1/${children[1].attributes["gen_ai.tool.call.id"]}`,
          `tool/1/${children[2].attributes["gen_ai.tool.call.id"]}`,
          "llm/2"
        ])
        const [first, calculator, time, second] = children
        assert.deepStrictEqual(first.attributes["gen_ai.response.finish_reasons"], ["tool_calls"])
        assert.deepStrictEqual([
          first.kind,
          first.attributes["react_engine.phase"],
          first.attributes["react_engine.iteration"]
        ], [3, "loop", 1])
        assert.deepStrictEqual(
          [
            second.attributes["react_engine.phase"],
            second.attributes["react_engine.iteration"],
            second.attributes["gen_ai.request.stream"]
          ],
          ["loop", 2, true]
        )
        // parallel: each call's activity (the tool and the storing of its outcome) started before the other one
        // ended — the demo's tools answer without waiting, so their own spans may not overlap
        const [calculatorStep, timeStep] = [calculator, time].map((s) => byId.get(s.parentSpanId ?? "")!)
        assert.isTrue(calculatorStep.start < timeStep.end && timeStep.start < calculatorStep.end)
        for (const tool of [calculator, time]) {
          assert.strictEqual(tool.status.code, 1)
          assert.isString(tool.attributes["gen_ai.tool.call.id"])
        }
        const chats = spans.filter((s) =>
          s.attributes["gen_ai.operation.name"] === "chat" && s.traceId === agent.traceId
        )
        const sum = (key: string) => chats.reduce((n, s) => n + Number(s.attributes[key] ?? 0), 0)
        assert.strictEqual(sum("gen_ai.usage.input_tokens"), done.data.usage.prompt_tokens)
        // content is off by default, and the request's credential is in no attribute
        assert.isTrue(spans.every((s) => !("gen_ai.input.messages" in s.attributes)))
        assert.notInclude(JSON.stringify(spans, (_, v) => (typeof v === "bigint" ? String(v) : v)), SECRET)
      }),
    90_000
  )
})
