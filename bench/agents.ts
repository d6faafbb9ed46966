/**
 * Sub-agents and A2A (SPEC §27): what a call costs, against a direct tool call.
 * One parent agent (zero-latency scripted model, synthesis `auto`: one loop
 * call that calls the tool, one that answers) calls, each run, one of:
 *
 * - `direct`: a tool whose handler returns at once (the floor);
 * - `sub-agent`: `ReactAgent.asTool` of a second agent (its own scripted model,
 *   answering at once): a child run in process, its events forwarded;
 * - `A2A → SDK server`: `A2A.remoteAgent` of the A2A SDK's reference server in
 *   this process on 127.0.0.1 (its request handler and Express handlers; its
 *   executor answers at once): the protocol's round trip — card already read,
 *   one `SendStreamingMessage` over HTTP with SSE;
 * - `A2A → our server`: `A2A.remoteAgent` of this engine's server in this
 *   process on 127.0.0.1 (SQLite): a durable run with its model (a fake
 *   OpenAI-compatible HTTP server answering at once) behind the protocol.
 *
 * Runs interleaved round-robin (load spikes hit every variant alike); wall
 * and process CPU time per parent run, medians; ratios against `direct`.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as os from "node:os"
import * as A2A from "../src/A2A.js"
import * as ContextGuard from "../src/ContextGuard.js"
import * as Hooks from "../src/Hooks.js"
import * as Interrupts from "../src/Interrupts.js"
import { Llm } from "../src/Llm.js"
import * as ReactAgent from "../src/ReactAgent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Tool from "../src/Tool.js"
import * as Toolkit from "../src/Toolkit.js"
import * as FakeOpenAi from "../test/utils/fakeOpenAiServer.js"
import { startSampleServer } from "../test/utils/sdkSampleServer.js"
import { startServer } from "../test/utils/serverHarness.js"
import { median, quantile } from "./harness.js"

/** One variant's figures. @since 0.1.0 */
export interface AgentsFigure {
  readonly variant: string
  readonly runs: number
  /** Median wall time of a parent run (ms). */
  readonly wallMs: number
  readonly wallP90Ms: number
  /** Median process CPU time of a parent run (ms; the remote side too, in this process). */
  readonly cpuMs: number
}

/** @since 0.1.0 */
export interface AgentsResults {
  readonly date: string
  /** `uptime`'s load averages when the section started and ended. */
  readonly loadBefore: ReadonlyArray<number>
  readonly loadAfter: ReadonlyArray<number>
  readonly figures: ReadonlyArray<AgentsFigure>
}

const hasToolResult = (request: { readonly messages: ReadonlyArray<{ readonly role: string }> }) =>
  request.messages.some((m) => m.role === "tool")

/** A model that calls `tool` once, then answers. */
const parentModel = (tool: string, args: Record<string, unknown>) =>
  ScriptedLlm.makeUnsafe(
    (request) =>
      hasToolResult(request) ? ScriptedLlm.text("Done.") : ScriptedLlm.toolCall(tool, args, { id: "call_1" }),
    { record: false }
  )

const agentLayer = (llm: ScriptedLlm.ScriptedLlm, tools: ReadonlyArray<Tool.Tool>) =>
  ReactAgent.layer({ completionCheck: false, synthesis: "auto" }).pipe(
    Layer.provide(Layer.mergeAll(
      Layer.succeed(Llm, llm.service),
      Toolkit.layer(tools),
      Hooks.layerNoop,
      ContextGuard.layer({}),
      Interrupts.layerMemory
    ))
  )

const echo = Tool.make({
  name: "echo",
  description: "Echoes its text",
  parameters: Schema.Struct({ query: Schema.String }),
  handler: ({ query }) => Effect.succeed(query)
})

const measure = async (run: () => Promise<unknown>) => {
  const c0 = process.cpuUsage()
  const t0 = process.hrtime.bigint()
  await run()
  const wall = Number(process.hrtime.bigint() - t0) / 1e6
  const c = process.cpuUsage(c0)
  return { wall, cpu: (c.user + c.system) / 1000 }
}

/** Measures the four variants (`quick`: fewer runs). @since 0.1.0 */
export const run = async (quick = false): Promise<AgentsResults> => {
  const loadBefore = os.loadavg()
  const scope = Effect.runSync(Scope.make())
  const inScope = <A>(effect: Effect.Effect<A, never, Scope.Scope>) => Effect.runPromise(Scope.extend(effect, scope))
  try {
    // the remote sides
    const sample = await startSampleServer({ stepMs: 0 })
    const fake = await inScope(
      FakeOpenAi.scoped((
        body
      ) => (body?.stream ? FakeOpenAi.sseText("Remote answer.") : FakeOpenAi.completion({ content: "ok" })))
    )
    const ours = await inScope(startServer({ llmUrl: fake.url }))
    const child = ManagedRuntime.make(
      agentLayer(ScriptedLlm.makeUnsafe(() => ScriptedLlm.text("Child answer."), { record: false }), [])
    )
    const childAgent = await child.runPromise(ReactAgent.ReactAgent)
    const toSample = await Effect.runPromise(A2A.remoteAgent(sample.url, { name: "remote" }))
    const toOurs = await Effect.runPromise(A2A.remoteAgent(ours.url, { name: "remote" }))
    const variants: ReadonlyArray<{ readonly name: string; readonly tool: Tool.Tool; readonly runs: number }> = [
      { name: "direct", tool: echo, runs: quick ? 30 : 200 },
      {
        name: "sub-agent (in process)",
        tool: ReactAgent.asTool(childAgent, { name: "research", description: "Researches" }),
        runs: quick ? 30 : 200
      },
      { name: "A2A → SDK reference server (127.0.0.1)", tool: toSample, runs: quick ? 10 : 60 },
      { name: "A2A → our server (127.0.0.1, durable run)", tool: toOurs, runs: quick ? 5 : 30 }
    ]
    const runtimes = variants.map((v) =>
      ManagedRuntime.make(agentLayer(parentModel(v.tool.name, { query: "q" }), [v.tool]))
    )
    const agents = await Promise.all(runtimes.map((r) => r.runPromise(ReactAgent.ReactAgent)))
    const once = async (i: number) => {
      const result = await Effect.runPromise(agents[i].runCollect({ query: "go" }))
      if (result.answer !== "Done." || result.steps[0]?.error !== null) {
        throw new Error(
          `${variants[i].name}: the run did not go as scripted: ${result.steps[0]?.error ?? result.answer}`
        )
      }
    }
    // warm-up, then round-robin
    for (let i = 0; i < variants.length; i++) for (let k = 0; k < 5; k++) await once(i)
    const samples = variants.map(() => [] as Array<{ wall: number; cpu: number }>)
    const most = Math.max(...variants.map((v) => v.runs))
    for (let round = 0; round < most; round++) {
      for (let i = 0; i < variants.length; i++) {
        if (samples[i].length < variants[i].runs) samples[i].push(await measure(() => once(i)))
      }
    }
    await Promise.all(runtimes.map((r) => r.dispose()))
    await child.dispose()
    await sample.close()
    return {
      date: new Date().toISOString(),
      loadBefore,
      loadAfter: os.loadavg(),
      figures: variants.map((v, i) => ({
        variant: v.name,
        runs: samples[i].length,
        wallMs: median(samples[i].map((s) => s.wall)),
        wallP90Ms: quantile(samples[i].map((s) => s.wall), 0.9),
        cpuMs: median(samples[i].map((s) => s.cpu))
      }))
    }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

const f = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2))

/** The section of docs/benchmarks.md. @since 0.1.0 */
export const section = (r: AgentsResults): string => {
  const base = r.figures[0]
  const rows = r.figures.map((x) =>
    `| ${x.variant} | ${x.runs} | ${f(x.wallMs)} | ${f(x.wallP90Ms)} | ${(x.wallMs / base.wallMs).toFixed(1)}× | ${
      f(x.cpuMs)
    } | ${(x.cpuMs / base.cpuMs).toFixed(1)}× |`
  )
  return `## Sub-agents and A2A

What a delegated call costs against a direct tool call (bench/agents.ts): one parent run — a
zero-latency scripted model calls the tool once, then answers — whose tool is a handler that returns
at once (\`direct\`), an in-process sub-agent (\`ReactAgent.asTool\`: a child run of one model call,
its events forwarded into the parent's), a remote agent over A2A on 127.0.0.1 (\`A2A.remoteAgent\`):
the A2A SDK's reference server (its request handler and Express handlers, an executor that answers at
once), or this engine's own server (a durable run on SQLite and a fake OpenAI-compatible model over
HTTP behind the protocol). Both servers run in the benchmark's process, so the CPU column counts both
sides. Interleaved rounds; medians per parent run; ratios against \`direct\`.

Measured ${r.date}; load average (1/5/15 min) before ${r.loadBefore.map((x) => x.toFixed(2)).join(" / ")},
after ${r.loadAfter.map((x) => x.toFixed(2)).join(" / ")} (the machine is shared: wall times are inflated,
read the ratios).

| Call | runs | wall ms (median) | wall ms (p90) | × direct | CPU ms (median) | × direct |
| --- | ---: | ---: | ---: | ---: | ---: | ---: |
${rows.join("\n")}

How to read it: an in-process sub-agent costs what its child run costs (here one more model call,
the child's events forwarded with \`agent\` through the parent's journal), not a protocol. An A2A
call adds the protocol's HTTP round trip with its SSE stream and the SDK's task bookkeeping on both
sides. A call to this engine's own server is a whole durable run on the remote side — its steps
stored in SQLite, its events in the run log, the model over HTTP — which is what "Cost of
durability" measures; the remote agent's own model time adds to it in real use.
`
}
