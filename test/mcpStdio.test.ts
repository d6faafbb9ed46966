/**
 * `npm run mcp` for real: `node --import tsx src/app/mcp.ts` spawned by the MCP
 * SDK's stdio client, over the app layer configured from the environment (the
 * offline demo model, or a fake OpenAI endpoint to observe cancellation).
 */
import { assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import type { Progress } from "@modelcontextprotocol/sdk/types.js"
import * as Effect from "effect/Effect"
import { fileURLToPath } from "node:url"
import * as FakeOpenAi from "./utils/fakeOpenAiServer.js"

const root = fileURLToPath(new URL("..", import.meta.url))

/** The stdio server as a child process (closed with the scope); `env` replaces the LLM settings. */
const spawn = (env: Record<string, string> = {}) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const stderr: Array<string> = []
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: ["--import", "tsx", "src/app/mcp.ts"],
        cwd: root,
        env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
        stderr: "pipe"
      })
      transport.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk.toString()))
      const client = new Client({ name: "interop-test", version: "1.0.0" })
      await client.connect(transport)
      return { client, stderr }
    }),
    ({ client }) => Effect.promise(() => client.close())
  )

describe("npm run mcp (stdio)", () => {
  it.scopedLive(
    "lists ask; a call on the offline demo model answers, with progress per step; logs go to stderr",
    () =>
      Effect.gen(function*() {
        const { client, stderr } = yield* spawn()
        const { tools } = yield* Effect.promise(() => client.listTools())
        assert.deepStrictEqual(tools.map((t) => t.name), ["ask"])
        const progress: Array<Progress> = []
        const result = yield* Effect.promise(() =>
          client.callTool({ name: "ask", arguments: { query: "What is 12*7+1?" } }, undefined, {
            onprogress: (p) => progress.push(p)
          })
        )
        assert.deepStrictEqual(result.content, [{ type: "text", text: "12*7+1 = **85**" }])
        assert.deepStrictEqual(progress.map((p) => p.message), [
          "Iteration 1",
          "calculator done",
          "Iteration 2",
          "Writing the answer"
        ])
        // the demo-model warning went to stderr (stdout carries only the protocol, or the client would have failed)
        assert.include(stderr.join(""), "OFFLINE DEMO")
      }),
    60_000
  )

  it.scopedLive(
    "cancelling the call cancels the run: the LLM request in flight is aborted",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped(() => FakeOpenAi.hang)
        const { client } = yield* spawn({
          LLM_BASE_URL: fake.url,
          LLM_MODEL: "fake-model",
          LLM_API_KEY: "k",
          LLM_MAX_RETRIES: "0"
        })
        const controller = new AbortController()
        const call = client.callTool({ name: "ask", arguments: { query: "go" } }, undefined, {
          signal: controller.signal
        }).then(
          () => "answered",
          (e: Error) => e.name
        )
        assert.isTrue(yield* Effect.promise(() => fake.waitForRequests(1, 20_000)), "the run reached the model")
        controller.abort()
        assert.notStrictEqual(yield* Effect.promise(() => call), "answered")
        assert.isTrue(yield* Effect.promise(() => fake.waitForClientAbort(5_000)), "the model request was aborted")
        assert.lengthOf(fake.requests, 1)
      }),
    60_000
  )
})
