/**
 * Test wiring for the DAG agent: scripted models keyed on the request (steps run
 * concurrently, so replies cannot be a list in call order), a registry, the real
 * tools / hooks / guard / interrupts of test/utils/agentLayers.ts.
 */
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import type { ContextGuard } from "../../src/ContextGuard.js"
import type { DagJournal, DagOptions } from "../../src/DagAgent.js"
import * as DagAgent from "../../src/DagAgent.js"
import type { Hooks } from "../../src/Hooks.js"
import type { InterruptsService } from "../../src/Interrupts.js"
import * as Interrupts from "../../src/Interrupts.js"
import type { ChatRequest, Llm } from "../../src/Llm.js"
import { textOf } from "../../src/Message.js"
import * as ModelRegistry from "../../src/ModelRegistry.js"
import type { RunInput } from "../../src/ReactAgent.js"
import type { RunEvent } from "../../src/RunEvent.js"
import type { ScriptedLlmOptions, ScriptStep } from "../../src/ScriptedLlm.js"
import * as ScriptedLlm from "../../src/ScriptedLlm.js"
import type { Tool } from "../../src/Tool.js"
import * as Toolkit from "../../src/Toolkit.js"
import { allTools, noHooks, recordingGuard } from "./agentLayers.js"

/** What a request to a scripted model is, in a DAG run. */
export type RequestKind =
  | { readonly _tag: "Plan"; readonly text: string }
  | { readonly _tag: "Analyze"; readonly text: string }
  | { readonly _tag: "Route"; readonly text: string }
  | { readonly _tag: "Step"; readonly id: string; readonly task: string; readonly text: string; readonly turn: number }
  | { readonly _tag: "StepAnswer"; readonly id: string; readonly task: string; readonly text: string }
  | { readonly _tag: "Answer"; readonly text: string }
  | { readonly _tag: "React"; readonly text: string; readonly turn: number; readonly method: "chat" | "stream" }

const allText = (request: ChatRequest): string => request.messages.map((m) => textOf(m.content)).join("\n")

/** Classifies a request by its shape (structured-call function, step query, synthesis prompt). */
export const kindOf = (request: ChatRequest, method: "chat" | "stream"): RequestKind => {
  const text = allText(request)
  const fn = request.tools?.length === 1 ? request.tools[0].function.name : undefined
  const schemaFor = (name: string) => fn === name || text.includes(`\`${name}\``)
  if (schemaFor("create_plan")) return { _tag: "Plan", text }
  if (schemaFor("report_analysis")) return { _tag: "Analyze", text }
  if (schemaFor("choose_mode")) return { _tag: "Route", text }
  const step = /Your task \(step ([^)]+)\): ([^\n]*)/.exec(text)
  if (step !== null) {
    // a step's synthesis streams and offers no tools (under synthesis auto the step's loop calls stream too, with tools)
    if (method === "stream" && (request.tools ?? []).length === 0) {
      return { _tag: "StepAnswer", id: step[1], task: step[2], text }
    }
    const turn = request.messages.filter((m) => m.role === "assistant").length
    return { _tag: "Step", id: step[1], task: step[2], text, turn }
  }
  if (method === "stream" && text.startsWith("You write the final answer to the user's goal")) {
    return { _tag: "Answer", text }
  }
  return { _tag: "React", text, turn: request.messages.filter((m) => m.role === "assistant").length, method }
}

/** A plan reply (native function call). */
export const planReply = (
  steps: ReadonlyArray<{
    readonly id: string | number
    readonly task: string
    readonly dependencies?: ReadonlyArray<string | number>
    readonly tool_hint?: string | null
    readonly model_hint?: string | null
  }>
): ScriptStep => ScriptedLlm.toolCall("create_plan", { steps: steps.map((s) => ({ dependencies: [], ...s })) })

/** An analysis reply (native function call). */
export const analysisReply = (
  achieved: boolean,
  confidence: number,
  reasoning = "checked",
  finalAnswer?: string
): ScriptStep =>
  ScriptedLlm.toolCall("report_analysis", {
    achieved,
    confidence,
    reasoning,
    ...(finalAnswer !== undefined ? { final_answer: finalAnswer } : {})
  })

/** A step's loop replies: `turn` 0 answers `result` directly unless a tool call is given. */
export const stepText = (result: string): ScriptStep => ScriptedLlm.text(result)

export interface DagScript {
  /** Planner replies; `n` counts planner calls (0-based, retries included). */
  readonly plan: (n: number, text: string) => ScriptStep
  /** A step's loop reply for turn `turn` (0 = its first call). Default: answer `result of <id>`. */
  readonly step?: (id: string, turn: number, text: string) => ScriptStep
  /** A step's synthesis reply; default: the step's loop answer is streamed back as is. */
  readonly stepAnswer?: (id: string, text: string) => ScriptStep
  /** Analyzer replies; `n` counts analyzer calls. Default: achieved, confidence 1. */
  readonly analysis?: (n: number, text: string) => ScriptStep
  /** The final answer (stream). Default: "final answer". */
  readonly answer?: (text: string) => ScriptStep
  /** ReAct-mode requests (fallback, or react mode). Default: "react answer". */
  readonly react?: (turn: number, method: "chat" | "stream", text: string) => ScriptStep
  /** Router replies. Default: dag. */
  readonly route?: (text: string) => ScriptStep
}

/** The draft a step's loop produced (the step synthesis prompt quotes it). */
export const draftOf = (text: string): string =>
  /Draft answer:\n([\s\S]*?)\n\nWrite the final answer/.exec(text)?.[1] ?? ""

/** A responder for a DAG run, keyed on each request's kind. */
export const dagResponder = (script: DagScript): ScriptedLlm.Responder => {
  let plans = 0
  let analyses = 0
  return (request, _index, method) => {
    const kind = kindOf(request, method)
    switch (kind._tag) {
      case "Plan":
        return script.plan(plans++, kind.text)
      case "Analyze":
        return script.analysis ? script.analysis(analyses++, kind.text) : analysisReply(true, 1)
      case "Route":
        return script.route ? script.route(kind.text) : ScriptedLlm.toolCall("choose_mode", { mode: "dag" })
      case "Step":
        return script.step ? script.step(kind.id, kind.turn, kind.text) : stepText(`result of ${kind.id}`)
      case "StepAnswer":
        return script.stepAnswer ? script.stepAnswer(kind.id, kind.text) : ScriptedLlm.text(draftOf(kind.text))
      case "Answer":
        return script.answer ? script.answer(kind.text) : ScriptedLlm.text("final answer")
      case "React":
        return script.react ? script.react(kind.turn, kind.method, kind.text) : ScriptedLlm.text("react answer")
    }
  }
}

export interface DagHarness {
  readonly main: ScriptedLlm.ScriptedLlm
  readonly models: Readonly<Record<string, ScriptedLlm.ScriptedLlm>>
  /** The agent and every service it was built from. */
  readonly layer: Layer.Layer<
    | DagAgent.DagAgent
    | Interrupts.Interrupts
    | Llm
    | ModelRegistry.ModelRegistry
    | Toolkit.Toolkit
    | Hooks
    | ContextGuard
  >
}

/** A DAG agent over scripted models (main + extra registry models), tools, hooks and interrupts. */
export const makeDag = (
  script: DagScript | ScriptedLlm.Responder,
  options: {
    readonly llm?: ScriptedLlmOptions
    /** Extra registry models, each on the same script (their `model` is their name). */
    readonly models?: ReadonlyArray<string>
    readonly tools?: ReadonlyArray<Tool>
    readonly hooks?: Layer.Layer<Hooks>
    readonly interrupts?: InterruptsService
    readonly dag?: Partial<DagOptions>
  } = {}
): DagHarness => {
  const responder = typeof script === "function" ? script : dagResponder(script)
  const main = ScriptedLlm.makeUnsafe(responder, { model: "main", ...options.llm })
  const models: Record<string, ScriptedLlm.ScriptedLlm> = {}
  for (const name of options.models ?? []) {
    models[name] = ScriptedLlm.makeUnsafe(responder, { ...options.llm, model: name })
  }
  const registry = ModelRegistry.layer({
    main: main.service,
    ...Object.fromEntries(Object.entries(models).map(([name, m]) => [name, m.service]))
  })
  const deps = Layer.mergeAll(
    main.layer,
    registry,
    Toolkit.layer(options.tools ?? allTools),
    options.hooks ?? noHooks,
    recordingGuard().layer,
    options.interrupts ? Layer.succeed(Interrupts.Interrupts, options.interrupts) : Interrupts.layerMemory
  )
  const layer = DagAgent.layer({
    // the responders answer a step's `stream` call as its synthesis
    agent: { completionCheck: false, selfReflectionInterval: 0, synthesis: "always" },
    ...options.dag
  }).pipe(Layer.provideMerge(deps), Layer.orDie)
  return { main, models, layer }
}

/** Runs the DAG agent and collects its events. */
export const dagEvents = (input: RunInput) =>
  Effect.flatMap(DagAgent.DagAgent, (agent) => Stream.runCollect(agent.run(input))).pipe(Effect.map(Chunk.toArray))

/** The last event, which must be `Done`. */
export const doneOf = (events: ReadonlyArray<RunEvent>) => {
  const done = events[events.length - 1]
  if (done?._tag !== "Done") throw new Error(`the run did not end with Done: ${JSON.stringify(done)}`)
  return done
}

/** The `dag` step events as `status:id` strings. */
export const stepTrail = (events: ReadonlyArray<RunEvent>): Array<string> =>
  events.flatMap((e) => (e._tag === "DagStep" ? [`${e.status}:${e.step_id}`] : []))

/** Every request the models received, with their kind. */
export const requestsOf = (h: DagHarness) =>
  [h.main, ...Object.values(h.models)].flatMap((m) =>
    m.requests.map((r) => ({ model: m.service.model, kind: kindOf(r.request, r.method), request: r.request }))
  )

/**
 * What a durable host keeps of a run, in memory: each activity's result by
 * name, the activities that started, the event keys stored. Interrupted
 * activities store nothing (the workflow engine's rule: they run again).
 */
export interface MemoryStore {
  readonly results: Map<string, Exit.Exit<unknown, unknown>>
  readonly started: Set<string>
  readonly keys: Set<string>
  /** The activities whose executions delivered events (a restarted one has shown something). */
  readonly emitted: Set<string>
}

export const memoryStore = (): MemoryStore => ({
  results: new Map(),
  started: new Set(),
  keys: new Set(),
  emitted: new Set()
})

/** What one execution through a `memoryJournal` saw. */
export interface JournalSink {
  /** Every activity name asked for. */
  readonly names: Array<string>
  /** Every event the run emitted (stored or not). */
  readonly events: Array<RunEvent>
  /** The events a client got: the ones not stored yet. */
  readonly delivered: Array<RunEvent>
}

export const journalSink = (): JournalSink => ({ names: [], events: [], delivered: [] })

/** The activity whose execution emits (undefined: the run's body); a memory journal's own. */
const Executing = FiberRef.unsafeMake<string | undefined>(undefined)

/**
 * A journal over a `MemoryStore` that behaves as the server's
 * (src/server/internal/durableJournal.ts) for what a DAG run sees: a stored
 * activity returns its stored result and does not run; one that started in an
 * earlier execution and stored nothing runs `onRestart` when it has one (else
 * `execute` with `restarted: true`). Events are keyed as the server keys them:
 * emitted while an activity executes, by that activity (never emitted again
 * by a replay: delivered); with a key of their own (`EmitOptions.key`), by it;
 * from the body, by their position in the run; `emitOnce`, by the caller's key. A keyed event is delivered once.
 */
export const memoryJournal = (store: MemoryStore, sink: JournalSink): DagJournal => {
  let body = 0
  const once = (key: string, event: RunEvent) =>
    Effect.sync(() => {
      sink.events.push(event)
      if (store.keys.has(key)) return
      store.keys.add(key)
      sink.delivered.push(event)
    })
  return {
    activity: (o) =>
      Effect.suspend(() => {
        sink.names.push(o.name)
        const stored = store.results.get(o.name)
        if (stored !== undefined) return stored as Exit.Exit<any, any>
        const restarted = store.started.has(o.name)
        store.started.add(o.name)
        const run = restarted && o.onRestart !== undefined
          ? o.onRestart()
          : o.execute({ restarted, shown: restarted && store.emitted.has(o.name) })
        return Effect.locally(run, Executing, o.name).pipe(Effect.onExit((exit) =>
          Effect.sync(() => {
            if (!Exit.isInterrupted(exit)) store.results.set(o.name, exit)
          })
        ))
      }),
    emit: (event, options) =>
      Effect.flatMap(FiberRef.get(Executing), (activity) =>
        options?.key !== undefined
          ? once(`k:${options.key}`, event)
          : activity !== undefined
          ? Effect.sync(() => {
            store.emitted.add(activity)
            sink.events.push(event)
            sink.delivered.push(event)
          })
          : once(`b:${++body}`, event)),
    emitOnce: once
  }
}
