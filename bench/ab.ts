/**
 * A/B of two builds of our engine, interleaved in one process beside the AI SDK (the loop
 * workloads of bench/scenario.ts, the same harness as bench/loopOverhead.ts):
 *
 *   npx esbuild $(find src -name '*.ts' ! -path 'src/app/*' ! -path 'src/web/*') --outdir=<dir> \
 *     --outbase=src --format=esm --platform=node --target=es2022   # once per variant, from its checkout
 *   echo '{"type":"module"}' > <dir>/package.json; ln -s <checkout>/node_modules <dir>/../node_modules
 *   npx tsx bench/ab.ts <dirA> <dirB> [generate|stream|both] [w1,w2,w3] [rounds]
 *
 * Prints the marginal CPU µs per step of A, B and the AI SDK and B ÷ A: on a shared machine
 * only the ratio of contenders timed side by side means anything.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Schema from "effect/Schema"
import { pathToFileURL } from "node:url"
import * as Loop from "./loopOverhead.js"
import * as aiSdk from "./peers/aiSdk.js"
import type { Engine, Scenario } from "./scenario.js"
import { FINAL, QUERY, runTool, TOOL_DESCRIPTION, TOOL_NAME, toolArgs } from "./scenario.js"
import type { Flavour } from "./scenario.js"
const HUGE = 100_000_000
const USAGE = { prompt: 10, completion: 5 }

export const oursFrom = async (dir: string, label: string, synthesis: "always" | "auto"): Promise<Engine> => {
  const m = await import(`${dir}/index.js`)
  const { ContextGuard, Hooks, Interrupts, Llm, ReactAgent, ScriptedLlm, Tool, Toolkit } = m
  const scriptFor = (s: Scenario) => {
    const script: Array<unknown> = []
    for (let step = 0; step < s.steps; step++) {
      script.push(
        ScriptedLlm.toolCalls(
          Array.from(
            { length: s.calls },
            (_, c) => ({ id: `call_${step}_${c}`, name: TOOL_NAME, arguments: toolArgs(step, c) })
          ),
          { usage: USAGE }
        )
      )
    }
    script.push(ScriptedLlm.text(FINAL, { usage: USAGE }), ScriptedLlm.text(FINAL, { usage: USAGE }))
    return script
  }
  return {
    name: label,
    prepare: async (s: Scenario) => {
      const script = scriptFor(s)
      let turn = 0
      const llm = ScriptedLlm.makeUnsafe(() => script[Math.min(turn++, script.length - 1)], { record: false })
      const tool = Tool.make({
        name: TOOL_NAME,
        description: TOOL_DESCRIPTION,
        parameters: Schema.Struct({ index: Schema.Number }),
        handler: (args: { index: number }) => Effect.sync(() => runTool(s, args))
      })
      const layer = ReactAgent.layer({ completionCheck: false, toolResultBudget: HUGE, maxIterations: 1000, synthesis })
        .pipe(
          Layer.provide(
            Layer.mergeAll(
              Layer.succeed(Llm.Llm, llm.service),
              Toolkit.layer([tool]),
              Hooks.layerNoop,
              ContextGuard.layer({ budget: HUGE }),
              Interrupts.layerMemory
            )
          )
        )
      const runtime: any = ManagedRuntime.make(layer)
      const agent: any = await runtime.runPromise(ReactAgent.ReactAgent)
      return async () => {
        turn = 0
        const result: any = await runtime.runPromise(agent.runCollect({ query: QUERY }))
        if (result.error) throw new Error(result.error.message)
        return { answer: result.answer, toolCalls: result.steps.length }
      }
    }
  }
}

const main = async () => {
  const [a, b, fl = "both", ws = "w1,w2,w3", samplesArg = "120"] = process.argv.slice(2)
  const flavours: Array<Flavour> = fl === "both" ? ["generate", "stream"] : [fl as Flavour]
  const labels = ws.split(",")
  const out: Array<string> = []
  for (const flavour of flavours) {
    const syn = flavour === "generate" ? "always" : "auto"
    const engines = [
      await oursFrom(a, "A", syn),
      await oursFrom(b, "B", syn),
      flavour === "generate" ? aiSdk.engine : aiSdk.streamEngine
    ]
    for (const c of Loop.cases.filter((c) => labels.includes(c.label))) {
      const r = await Loop.runCase(engines, c, {
        flavour,
        warmup: 15,
        samples: Number(samplesArg),
        afterGcRounds: 1,
        maxMsPerCase: 40_000,
        allocRepeats: 1,
        log: () => {}
      })
      const [fa, fb, fp] = r.figures
      const line = `${flavour} ${c.label}: A ${fa.marginalUs.toFixed(0)} B ${fb.marginalUs.toFixed(0)} AI ${
        fp.marginalUs.toFixed(0)
      } µs | B/A ${(fb.marginalUs / fa.marginalUs).toFixed(2)} A/AI ${
        (fa.marginalUs / fp.marginalUs).toFixed(2)
      } B/AI ${(fb.marginalUs / fp.marginalUs).toFixed(2)} | alloc A ${(fa.allocatedBytes / 1e6).toFixed(1)} B ${
        (fb.allocatedBytes / 1e6).toFixed(1)
      } AI ${(fp.allocatedBytes / 1e6).toFixed(1)} MB | n ${fa.samples}`
      console.log(line)
      out.push(line)
    }
  }
}
// run as a script only (bench/abn.ts imports `oursFrom`)
if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main().then(() => process.exit(0), (e) => {
    console.error(e)
    process.exit(1)
  })
}
