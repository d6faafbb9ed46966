/**
 * The remedy docs/tools.md gives for CPU-heavy tool work: the loop runs in a
 * worker thread, so the agent's tool timeout cuts it (the worker is terminated)
 * and the main thread stays free meanwhile. A synchronous loop in the handler
 * itself could do neither.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { Worker } from "node:worker_threads"
import * as ContextGuard from "../../src/ContextGuard.js"
import * as Hooks from "../../src/Hooks.js"
import * as Interrupts from "../../src/Interrupts.js"
import * as ReactAgent from "../../src/ReactAgent.js"
import * as ScriptedLlm from "../../src/ScriptedLlm.js"
import * as Tool from "../../src/Tool.js"
import * as Toolkit from "../../src/Toolkit.js"

// the worker of docs/tools.md, as a file
const WORKER = `import { parentPort, workerData } from "node:worker_threads"
let count = 0
for (let n = 2; n < workerData.limit; n++) {
  let prime = true
  for (let d = 2; d * d <= n; d++) if (n % d === 0) { prime = false; break }
  if (prime) count++
}
parentPort.postMessage(count)
`

describe("CPU-heavy tool work in a worker thread", () => {
  it.live("the tool timeout terminates the worker, and the main thread stays responsive", () =>
    Effect.gen(function*() {
      const file = join(mkdtempSync(join(tmpdir(), "react-engine-worker-")), "primes.worker.mjs")
      writeFileSync(file, WORKER)
      const exits: Array<number> = []
      const inWorker = (limit: number) =>
        Effect.async<number, Tool.ToolError>((resume) => {
          const worker = new Worker(pathToFileURL(file), { workerData: { limit } })
          worker.once("message", (count: number) => resume(Effect.succeed(count)))
          worker.once("error", (e) => resume(Effect.fail(new Tool.ToolError({ message: e.message }))))
          worker.once("exit", (code) => exits.push(code))
          return Effect.promise(() => worker.terminate())
        })
      const countPrimes = Tool.make({
        name: "count_primes",
        description: "Counts the primes below a limit.",
        parameters: Schema.Struct({ limit: Schema.Int }),
        timeout: "600 millis",
        handler: ({ limit }) => Effect.map(inWorker(limit), (n) => `${n} primes below ${limit}`)
      })
      const llm = ScriptedLlm.makeUnsafe([
        ScriptedLlm.toolCall("count_primes", { limit: 1000 }, { id: "small" }),
        ScriptedLlm.toolCall("count_primes", { limit: Number.MAX_SAFE_INTEGER }, { id: "huge" }),
        ScriptedLlm.text("done"),
        ScriptedLlm.text("done")
      ])
      const layer = ReactAgent.layer({ completionCheck: false }).pipe(
        Layer.provide(
          Layer.mergeAll(
            llm.layer,
            Toolkit.layer([countPrimes]),
            Hooks.layerNoop,
            ContextGuard.layer(),
            Interrupts.layerMemory
          )
        )
      )
      // the main thread's timers keep firing while the worker computes
      let ticks = 0
      const ticker = setInterval(() => void ticks++, 20)
      const result = yield* Effect.flatMap(ReactAgent.ReactAgent, (agent) => agent.runCollect({ query: "count" })).pipe(
        Effect.provide(layer),
        Effect.ensuring(Effect.sync(() => clearInterval(ticker)))
      )
      const byId = new Map(result.steps.map((s) => [s.tool_call_id, s]))
      assert.strictEqual(byId.get("small")?.observation, "168 primes below 1000")
      assert.match(byId.get("huge")?.error ?? "", /timed out/)
      assert.isAtLeast(ticks, 10, "the event loop was free during the 600 ms the worker ran")
      for (let i = 0; i < 40 && exits.length < 2; i++) yield* Effect.sleep("50 millis")
      assert.strictEqual(exits.length, 2, "both workers are gone (the second one terminated)")
      assert.strictEqual(result.answer, "done")
    }), 30_000)
})
