/**
 * Counts what one loop iteration costs the Effect runtime: effect steps (each
 * instruction a fiber evaluates), forked fibers and suspensions, through a
 * `Supervisor` with `OpSupervision` on. Deterministic, unlike CPU time, so a
 * change to the loop can be checked step by step:
 *
 *   npm run build && npx tsx bench/effectSteps.ts
 *
 * Prints the steps of one more single-tool iteration (10 steps − 2 steps, ÷ 8)
 * and of one more call in a round (10 steps × 4 calls − 10 steps × 1 call,
 * ÷ 30), with the most frequent instructions (`TOP=n`, default 0). Our engine
 * as installed (the package, dist/), on the bench's scripted scenario.
 *
 * @since 0.1.0
 */
import { ReactAgent } from "effect-react-engine"
import * as Effect from "effect/Effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as RuntimeFlags from "effect/RuntimeFlags"
import * as RuntimeFlagsPatch from "effect/RuntimeFlagsPatch"
import * as Supervisor from "effect/Supervisor"
import { agentLayer, lookupTool, resettableScript, scriptFor } from "./peers/ours.js"
import { QUERY, type Scenario } from "./scenario.js"

interface Count {
  readonly total: number
  readonly forks: number
  readonly suspends: number
  readonly byInstruction: Map<string, number>
}

/** An instruction's kind and, for continuations and thunks, the start of its function's source. */
const describe = (e: any): string => {
  const f = e._op === "OnSuccess" || e._op === "OnFailure" || e._op === "OnSuccessAndFailure"
    ? (e.effect_instruction_i1 ?? e.effect_instruction_i2)
    : e.effect_instruction_i0
  const source = typeof f === "function" ? f.toString().replace(/\s+/g, " ").slice(0, 80) : ""
  return `${e._op ?? "?"} ${source}`
}

class Counting extends Supervisor.AbstractSupervisor<void> {
  total = 0
  forks = 0
  suspends = 0
  readonly byInstruction = new Map<string, number>()
  get value() {
    return Effect.void
  }
  override onEffect(_fiber: unknown, effect: unknown) {
    this.total++
    const key = describe(effect)
    this.byInstruction.set(key, (this.byInstruction.get(key) ?? 0) + 1)
  }
  override onStart() {
    this.forks++
  }
  override onSuspend() {
    this.suspends++
  }
}

const count = async (scenario: Scenario): Promise<Count> => {
  const { llm, reset } = resettableScript(scriptFor(scenario))
  const runtime = ManagedRuntime.make(agentLayer(llm.service, [lookupTool(scenario)]))
  const agent = await runtime.runPromise(ReactAgent.ReactAgent)
  reset()
  const supervisor = new Counting()
  await runtime.runPromise(
    agent.runCollect({ query: QUERY }).pipe(
      Effect.supervised(supervisor),
      Effect.withRuntimeFlagsPatch(RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision))
    )
  )
  await runtime.dispose()
  return supervisor
}

const per = (label: string, long: Count, short: Count, n: number, top: number) => {
  console.log(
    `${label}: ${((long.total - short.total) / n).toFixed(1)} effect steps, ${
      ((long.forks - short.forks) / n).toFixed(2)
    } fibers, ${((long.suspends - short.suspends) / n).toFixed(2)} suspensions`
  )
  const rows = [...long.byInstruction].map(([k, v]) => [k, (v - (short.byInstruction.get(k) ?? 0)) / n] as const)
  for (const [k, v] of rows.filter(([, v]) => v !== 0).sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${v.toFixed(2).padStart(8)}  ${k}`)
  }
}

const top = Number(process.env.TOP ?? 0)
const scenario = (steps: number, calls: number): Scenario => ({
  name: `s${steps}x${calls}`,
  steps,
  calls,
  resultChars: 0
})
const [s2, s10, p10] = [await count(scenario(2, 1)), await count(scenario(10, 1)), await count(scenario(10, 4))]
per("one more single-tool iteration", s10, s2, 8, top)
per("one more call in a round", p10, s10, 30, top)
