/**
 * Page rendering in a real browser against a test-only server that replays a
 * recorded event sequence (test/utils/webFakeServer.ts): SSE parsing across chunk
 * splits, hostile model output, replay dedupe, demo banner.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Chromium, ChromiumLive, openPage, pw, screenshot } from "../utils/browser.js"
import { fakeWebServer, type ScriptedEvent } from "../utils/webFakeServer.js"

const step = (data: Record<string, unknown>, delay = 0): ScriptedEvent => ({ event: "step", data, delay })
const usage = { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150, llm_calls: 3 }

const hostile = (): ReadonlyArray<ScriptedEvent> => [
  step({ type: "thinking", status: "start", iteration: 1 }),
  step({ type: "thinking", status: "done", iteration: 1, reasoning: "<img src=x onerror=alert(1)>" }, 20),
  step({
    type: "iteration",
    status: "start",
    iteration: 1,
    tool_name: "<b>evil</b>",
    tool_args: { q: "<script>alert(2)</script>" },
    tool_call_id: "t1"
  }),
  step({
    type: "iteration",
    status: "done",
    iteration: 1,
    tool_name: "<b>evil</b>",
    observation: "<img src=x onerror=alert(3)>",
    error: null,
    iter_elapsed: 0.01,
    tool_call_id: "t1"
  }, 20),
  step({ type: "answer", status: "start" }),
  { event: "answer", data: { status: "start" } },
  { event: "answer", data: { status: "delta", content: "Look: <img src=x onerror=alert(1)> " }, delay: 10 },
  {
    event: "answer",
    data: { status: "delta", content: "<script>alert(4)</script> **bold** [x](javascript:alert(5))" },
    delay: 10
  },
  { event: "answer", data: { status: "done" } },
  { event: "done", data: { answer: "ignored", iterations: 1, usage, elapsed: 0.5, pending_injections: [] } }
]

layer(ChromiumLive, { timeout: "60 seconds", excludeTestServices: true })(
  "web page rendering (recorded events)",
  (it) => {
    it.scoped("model output with HTML is shown as text, never executed", () =>
      Effect.gen(function*() {
        const server = yield* fakeWebServer(hostile)
        const browser = yield* Chromium
        const { page, errors, dialogs } = yield* openPage(browser)
        yield* pw(() => page.goto(server.url))
        yield* pw(() => page.fill("#composer-input", "show me"))
        yield* pw(() => page.keyboard.press("Enter"))
        yield* pw(() => page.waitForSelector(".run-footer:not([hidden])"))
        const answer = yield* pw(() => page.innerHTML(".answer"))
        assert.notInclude(answer, "<img")
        assert.notInclude(answer, "<script")
        assert.include(answer, "&lt;img src=x onerror=alert(1)&gt;")
        assert.include(answer, "<strong>bold</strong>")
        assert.notInclude(answer, "href=\"javascript:")
        const active = yield* pw(() =>
          page.locator(".run img, .run script, .run a[href^='javascript'], .run b").count()
        )
        assert.strictEqual(active, 0)
        assert.strictEqual(yield* pw(() => page.textContent(".card .tool-name")), "<b>evil</b>")
        assert.include(yield* pw(() => page.textContent(".card .observation")), "<img src=x onerror=alert(3)>")
        assert.include(yield* pw(() => page.textContent(".reasoning")), "<img src=x onerror=alert(1)>")
        assert.deepStrictEqual(dialogs, [])
        assert.deepStrictEqual(errors, [])
      }))

    it.scoped("the SSE parser handles CRLF, CR, multi-line data, comments and any chunk split", () =>
      Effect.gen(function*() {
        const server = yield* fakeWebServer(() => [])
        const browser = yield* Chromium
        const { page } = yield* openPage(browser)
        yield* pw(() => page.goto(server.url))
        const results = yield* pw(() =>
          page.evaluate(`(async () => {
          const { createSseParser } = await import("/assets/sse.js")
          const stream = ": comment\\r\\nid: 7\\r\\nevent: step\\r\\ndata: {\\"a\\":\\r\\ndata: 1}\\r\\n\\r\\nevent: answer\\rdata: x\\r\\rdata: plain\\n\\nid: 9\\nevent: done\\ndata\\n\\n"
          const out = []
          for (let size = 1; size <= stream.length; size++) {
            const got = []
            const p = createSseParser((m) => got.push(m.event + "|" + m.id + "|" + m.data))
            for (let i = 0; i < stream.length; i += size) p.feed(stream.slice(i, i + size))
            out.push(got.join(";"))
          }
          return out
        })()`) as Promise<Array<string>>
        )
        const expected = "step|7|{\"a\":\n1};answer|7|x;message|7|plain;done|9|"
        assert.isAbove(results.length, 50)
        for (const r of results) assert.strictEqual(r, expected)
      }))

    it.scoped("shows the offline-demo banner only when /health says demo", () =>
      Effect.gen(function*() {
        const server = yield* fakeWebServer(() => [])
        const browser = yield* Chromium
        const { page } = yield* openPage(browser)
        yield* pw(() => page.goto(server.url))
        yield* pw(() => page.waitForFunction(() => document.getElementById("model")?.textContent === "scripted"))
        assert.isFalse(yield* pw(() => page.isVisible("#demo-banner")))
        server.health = { status: "ok", model: "demo", demo: true }
        yield* pw(() => page.reload())
        yield* pw(() => page.waitForSelector("#demo-banner", { state: "visible" }))
        assert.include(yield* pw(() => page.textContent("#demo-banner")), "Offline demo model")
        yield* screenshot(page, "demo-banner")
      }))

    it.scoped("phase line, compaction divider, error, queued follow-up recall and follow-ups left pending", () =>
      Effect.gen(function*() {
        const server = yield* fakeWebServer(() => [
          { event: "phase", data: { phase: "selecting_tools", total_tools: 14 } },
          { event: "compact", data: { original_messages: 40, kept_messages: 12 }, delay: 20 },
          step({ type: "thinking", status: "start", iteration: 1 }, 20),
          step({
            type: "iteration",
            status: "start",
            iteration: 1,
            tool_name: "lookup",
            tool_args: "{\"topic\":\"x\"}"
          }, 20),
          step({
            type: "iteration",
            status: "done",
            iteration: 1,
            tool_name: "lookup",
            observation: "",
            error: "timed out",
            iter_elapsed: 1.5
          }, 5000),
          { event: "error", data: { message: "the model is unavailable", retryable: true } },
          { event: "done", data: { answer: "", iterations: 1, usage, elapsed: 2, pending_injections: [] } }
        ])
        server.autoTakeIn = false
        const browser = yield* Chromium
        const { page, errors } = yield* openPage(browser)
        yield* pw(() => page.goto(server.url))
        yield* pw(() => page.fill("#composer-input", "go"))
        yield* pw(() => page.keyboard.press("Enter"))
        yield* pw(() => page.waitForSelector(".card.running"))
        assert.strictEqual(yield* pw(() => page.textContent(".phase")), "Tools selected among 14")
        assert.strictEqual(yield* pw(() => page.textContent(".divider")), "Context compacted: 40 → 12 messages")
        // JSON-mode card (no tool_call_id, string args): pretty-printed
        assert.strictEqual(yield* pw(() => page.textContent(".card pre.args")), JSON.stringify({ topic: "x" }, null, 2))
        // a follow-up is queued, recalled back into the box, then queued again
        yield* pw(() => page.fill("#composer-input", "first follow-up"))
        yield* pw(() => page.keyboard.press("Enter"))
        yield* pw(() => page.waitForSelector(".msg.inject.queued"))
        yield* pw(() => page.click(".msg.inject.queued button"))
        yield* pw(() => page.waitForSelector(".msg.inject", { state: "detached" }))
        assert.strictEqual(yield* pw(() => page.inputValue("#composer-input")), "first follow-up")
        yield* pw(() => page.keyboard.press("Enter"))
        yield* pw(() => page.waitForSelector(".run-footer:not([hidden])"))
        assert.include(yield* pw(() => page.textContent(".card.failed .elapsed")), "failed")
        assert.include(yield* pw(() => page.textContent(".card.failed pre.error")), "timed out")
        assert.include(yield* pw(() => page.textContent(".run-error")), "the model is unavailable")
        // the footer says the run failed; nothing spins
        assert.match(
          (yield* pw(() => page.textContent(".run-footer"))) ?? "",
          /^Failed·1 iteration·150 tokens·2\.00 s$/
        )
        assert.strictEqual(yield* pw(() => page.locator(".spinner, .thinking.active").count()), 0)
        assert.include(yield* pw(() => page.textContent(".msg.inject.pending")), "first follow-up")
        assert.strictEqual(yield* pw(() => page.locator(".msg.inject").count()), 1)
        const recalls = server.requests.filter((r) => r.path === "/api/react/inject/recall")
        assert.strictEqual(recalls.length, 1)
        assert.deepStrictEqual(errors, [])
      }))

    it.scoped("the footer shows the share of the input read from the prompt cache, with reads and writes in its title", () =>
      Effect.gen(function*() {
        const cachedUsage = {
          ...usage,
          prompt_tokens: 1000,
          completion_tokens: 50,
          total_tokens: 1050,
          cached_input_tokens: 830,
          cache_write_input_tokens: 120
        }
        const server = yield* fakeWebServer(() => [
          { event: "answer", data: { status: "start" } },
          { event: "answer", data: { status: "delta", content: "ok" } },
          { event: "answer", data: { status: "done" } },
          {
            event: "done",
            data: { answer: "ok", iterations: 1, usage: cachedUsage, elapsed: 1, pending_injections: [] }
          }
        ])
        const browser = yield* Chromium
        const { page, errors } = yield* openPage(browser)
        yield* pw(() => page.goto(server.url))
        yield* pw(() => page.fill("#composer-input", "go"))
        yield* pw(() => page.keyboard.press("Enter"))
        yield* pw(() => page.waitForSelector(".run-footer:not([hidden])"))
        assert.match(
          (yield* pw(() => page.textContent(".run-footer"))) ?? "",
          /^1 iteration·1,050 tokens·83% cached·1\.00 s$/
        )
        assert.include(
          (yield* pw(() => page.getAttribute(".run-footer", "title"))) ?? "",
          "cache read 830, written 120"
        )
        assert.deepStrictEqual(errors, [])
      }))
  }
)
