/**
 * The real server over the `openai`-SDK LLM (pointed at a fake OpenAI server):
 * `GET /api/tools` with built-ins, a real MCP server and one that fails to start;
 * the tool count in `/health`; LLM retries as `phase {phase:"retrying"}` frames.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { mkdtempSync, realpathSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { startServer } from "../utils/serverHarness.js"
import { openSse } from "../utils/sse.js"

const require = createRequire(import.meta.url)
const FS_SERVER = require.resolve("@modelcontextprotocol/server-filesystem/dist/index.js")

describe("the tools the server has", () => {
  it.scopedLive(
    "GET /api/tools names every tool and its source, and the MCP servers that did not start; /health counts them",
    () =>
      Effect.gen(function*() {
        const dir = realpathSync(mkdtempSync(join(tmpdir(), "react-engine-tools-")))
        const config = join(dir, "mcp.json")
        writeFileSync(
          config,
          JSON.stringify({
            mcpServers: {
              fs: { command: process.execPath, args: [FS_SERVER, dir] },
              broken: { command: "/nonexistent/not-a-command" }
            }
          })
        )
        const fake = yield* FakeOpenAi.scoped([])
        const server = yield* startServer({ llmUrl: fake.url, mcpConfigPath: config })
        const body = yield* Effect.promise(() => fetch(`${server.url}/api/tools`).then((r) => r.json()))
        const tools = body.tools as Array<{ name: string; description: string; source: string }>
        assert.deepStrictEqual(tools.slice(0, 2).map((t) => [t.name, t.source]), [["calculator", "builtin"], [
          "current_time",
          "builtin"
        ]])
        const fs = tools.filter((t) => t.source === "mcp:fs")
        assert.isAbove(fs.length, 5)
        assert.isTrue(fs.every((t) => t.name.startsWith("fs__") && t.description !== ""))
        assert.strictEqual(tools.length, 2 + fs.length)
        assert.deepStrictEqual(body.failed_servers.map((f: { name: string }) => f.name), ["broken"])
        assert.include(body.failed_servers[0].error, "cannot start")
        const health = yield* Effect.promise(() => fetch(`${server.url}/health`).then((r) => r.json()))
        assert.strictEqual(health.tools, tools.length)
      }),
    60_000
  )

  it.scopedLive("with API_TOKEN, /api/tools needs the token like every /api route", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped([])
      const server = yield* startServer({ llmUrl: fake.url, settings: { apiToken: Option.some(Redacted.make("t0k")) } })
      assert.strictEqual((yield* Effect.promise(() => fetch(`${server.url}/api/tools`))).status, 401)
      const ok = yield* Effect.promise(() =>
        fetch(`${server.url}/api/tools`, { headers: { authorization: "Bearer t0k" } })
      )
      assert.strictEqual(ok.status, 200)
    }))
})

describe("LLM retries during a run", () => {
  it.scopedLive("each retry is a phase {phase:\"retrying\", attempt, reason, delay_ms} frame, in order, and the run goes on", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped([
        FakeOpenAi.error(429, "Rate limit reached", { type: "rate_limit_error" }),
        FakeOpenAi.error(503, "overloaded"),
        FakeOpenAi.completion({ content: "Paris." }),
        FakeOpenAi.sseText("Paris.")
      ])
      const server = yield* startServer({ llmUrl: fake.url, llmMaxRetries: 3, tools: [] })
      const run = yield* Effect.promise(() =>
        openSse(`${server.url}/api/react`, { body: { query: "Capital of France?" } })
      )
      const retries = run.events.filter((e) => e.event === "phase" && e.data.phase === "retrying")
      assert.deepStrictEqual(retries.map((e) => [e.data.attempt, e.data.reason]), [[1, "RateLimited"], [2, "Server"]])
      assert.isTrue(retries.every((e) => Number.isInteger(e.data.delay_ms) && e.data.delay_ms > 0))
      // between the first thinking start and its done, with ids in sequence
      const names = run.events.map((e) => e.event === "step" ? `${e.data.type}:${e.data.status}` : e.event)
      assert.deepStrictEqual(names.slice(0, 4), ["thinking:start", "phase", "phase", "thinking:done"])
      assert.strictEqual(run.events.at(-1)?.data.answer, "Paris.")
      assert.strictEqual(fake.requests.length, 4)
    }))
})
