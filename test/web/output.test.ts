/**
 * The page with typed answers and tool progress, headless Chromium against the
 * REAL server (test/utils/webAppServer.ts) with a real MCP server over
 * Streamable HTTP: an MCP tool's `notifications/progress` reach the tool's
 * card as a bar and its last message (gone when the call ends); a message sent
 * with an "Answer schema" gets its value as a collapsible JSON tree beside the
 * text, growing while it streams; a schema that is not JSON is refused on the page.
 */
import { assert, layer } from "@effect/vitest"
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { z } from "zod"
import * as McpTools from "../../src/McpTools.js"
import { Chromium, ChromiumLive, openPage, pw, screenshot } from "../utils/browser.js"
import { mcpHttpServerWith } from "../utils/mcpHttpServer.js"
import { webAppServer } from "../utils/webAppServer.js"

/** `work {steps, ms}`: one progress notification per step, with a message. */
const registerWork = (server: McpServer) => {
  server.registerTool("work", {
    description: "Works in steps, reporting progress",
    inputSchema: { steps: z.number(), ms: z.number() }
  }, async ({ ms, steps }, extra) => {
    const token = extra._meta?.progressToken
    for (let i = 1; i <= steps; i++) {
      await new Promise((resolve) => setTimeout(resolve, ms))
      if (token !== undefined) {
        await extra.sendNotification({
          method: "notifications/progress",
          params: { progressToken: token, progress: i, total: steps, message: `indexing part ${i} of ${steps}` }
        })
      }
    }
    return { content: [{ type: "text", text: `indexed ${steps} parts` }] }
  })
}

const ask = (page: Page, text: string) =>
  pw(async () => {
    await page.fill("#composer-input", text)
    await page.keyboard.press("Enter")
  })

const setup = Effect.gen(function*() {
  const mcp = yield* mcpHttpServerWith(registerWork)
  const tools = yield* McpTools.fromConfig({ mcpServers: { lab: { url: mcp.url } } })
  const server = yield* webAppServer({ tools: tools.tools })
  const browser = yield* Chromium
  const opened = yield* openPage(browser)
  yield* pw(() => opened.page.goto(server.url))
  return { ...server, ...opened }
})

layer(ChromiumLive, { timeout: "60 seconds", excludeTestServices: true })(
  "typed answers and tool progress, on the page",
  (it) => {
    it.scoped("an MCP tool's progress: a bar and the last message on its running card, gone when it ends", () =>
      Effect.gen(function*() {
        const { errors, page } = yield* setup
        yield* ask(page, "progress: index the docs")
        const bar = ".turn:last-child .card.running[data-tool='lab__work'] .progress progress"
        yield* pw(() => page.waitForSelector(bar))
        // the bar moves: a later report shows a larger value and its message
        yield* pw(() =>
          page.waitForFunction(
            (sel) => Number((document.querySelector(sel) as HTMLProgressElement | null)?.value ?? 0) >= 0.6,
            bar
          )
        )
        const message = yield* pw(() => page.textContent(".turn:last-child .card.running .progress-message"))
        assert.match(message ?? "", /^indexing part [3-5] of 5$/)
        yield* screenshot(page, "tool-progress")
        yield* pw(() => page.waitForSelector(".turn:last-child .card.ok[data-tool='lab__work']"))
        assert.strictEqual(yield* pw(() => page.locator(".turn:last-child .card .progress").count()), 0)
        yield* pw(() => page.waitForSelector(".turn:last-child .run-footer:not([hidden])"))
        assert.deepStrictEqual(errors, [])
      }))

    it.scoped("an answer schema: the value as a JSON tree beside the text, growing as it streams, then the decoded value", () =>
      Effect.gen(function*() {
        const { errors, page } = yield* setup
        const schema = {
          type: "object",
          properties: {
            city: { type: "string" },
            population: { type: "integer" },
            landmarks: { type: "array", items: { type: "string" } },
            capital: { type: "boolean" }
          },
          required: ["city", "population", "landmarks", "capital"],
          additionalProperties: false
        }
        yield* pw(async () => {
          await page.click(".schema-option summary")
          await page.fill("#output-schema", JSON.stringify(schema, null, 2))
        })
        yield* ask(page, "Tell me about Paris")
        // while it streams: a partial tree
        yield* pw(() => page.waitForSelector(".turn:last-child .output-panel.partial .json-key"))
        // then the whole value, no longer partial
        yield* pw(() => page.waitForSelector(".turn:last-child .output-panel:not(.partial)"))
        yield* pw(() => page.waitForSelector(".turn:last-child .run-footer:not([hidden])"))
        const keys = yield* pw(() =>
          page.locator(".turn:last-child .output-tree > details > ul > li > .json-key").allTextContents()
        )
        assert.deepStrictEqual(keys, ["city", "population", "landmarks", "capital"])
        const landmarks = yield* pw(() => page.locator(".turn:last-child .output-tree .json-string").allTextContents())
        assert.deepStrictEqual(landmarks, ["\"Paris\"", "\"Eiffel Tower\"", "\"Louvre\"", "\"Notre-Dame\""])
        // collapsible: closing the root hides the entries
        yield* pw(() => page.click(".turn:last-child .output-tree > details > summary"))
        assert.isFalse(yield* pw(() => page.isVisible(".turn:last-child .output-tree .json-key >> nth=0")))
        const text = yield* pw(() => page.textContent(".turn:last-child .answer"))
        assert.deepStrictEqual(JSON.parse(text ?? ""), {
          city: "Paris",
          population: 2102650,
          landmarks: ["Eiffel Tower", "Louvre", "Notre-Dame"],
          capital: true
        })
        yield* pw(() => page.click(".turn:last-child .output-tree > details > summary"))
        yield* screenshot(page, "typed-answer")
        assert.deepStrictEqual(errors, [])
      }))

    it.scoped("an answer schema that is not JSON: an error on the page, nothing sent", () =>
      Effect.gen(function*() {
        const { llm, page } = yield* setup
        yield* pw(async () => {
          await page.click(".schema-option summary")
          await page.fill("#output-schema", "{ type: object")
        })
        yield* ask(page, "Tell me about Paris")
        yield* pw(() => page.waitForSelector(".turn:last-child .run-error"))
        assert.include(
          yield* pw(() => page.textContent(".turn:last-child .run-error")),
          "The answer schema is not JSON"
        )
        assert.strictEqual(llm.requests.length, 0)
      }))
  }
)
