/**
 * Test wiring for the ReAct agent: a scripted LLM, tools, hooks, a context guard
 * and the real in-memory interrupts, composed into one layer that also exposes
 * the dependencies (so tests can inject interrupts).
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { AgentOptions } from "../../src/AgentConfig.js"
import type { ApprovalsService } from "../../src/Approvals.js"
import type { CheckOptions, ContextGuardOptions, ContextGuardService } from "../../src/ContextGuard.js"
import { makeUnsafe as makeGuard } from "../../src/ContextGuard.js"
import * as ContextGuard from "../../src/ContextGuard.js"
import * as Hooks from "../../src/Hooks.js"
import type { InterruptsService } from "../../src/Interrupts.js"
import { make as makeInterruptsService } from "../../src/Interrupts.js"
import * as Interrupts from "../../src/Interrupts.js"
import type { LlmService } from "../../src/Llm.js"
import type { ChatMessage } from "../../src/Message.js"
import * as ReactAgent from "../../src/ReactAgent.js"
import type { RecordedRequest, ScriptedLlmOptions, ScriptStep } from "../../src/ScriptedLlm.js"
import * as ScriptedLlm from "../../src/ScriptedLlm.js"
import type { Tool as ToolT } from "../../src/Tool.js"
import * as Tool from "../../src/Tool.js"
import * as Toolkit from "../../src/Toolkit.js"

/** Hooks that allow everything and change nothing (the real empty layer). */
export const noHooks: Layer.Layer<Hooks.Hooks> = Hooks.layerNoop

/**
 * The real context guard (`ContextGuard.makeUnsafe`) wrapped to record the options of
 * every check (the loop's hints and forced budgets).
 */
export const recordingGuard = (
  options: ContextGuardOptions = {}
): { readonly layer: Layer.Layer<ContextGuard.ContextGuard>; readonly checks: Array<CheckOptions | undefined> } => {
  const checks: Array<CheckOptions | undefined> = []
  const real = makeGuard(options)
  const service: ContextGuardService = {
    ...real,
    // every check goes through checkAndCompact (recorded)
    fits: () => false,
    checkAndCompact: (messages, opts) =>
      Effect.suspend(() => {
        checks.push(opts)
        return real.checkAndCompact(messages, opts)
      })
  }
  return { layer: Layer.succeed(ContextGuard.ContextGuard, service), checks }
}

/** A calculator-ish tool: `add({a, b})`. */
export const addTool = Tool.make({
  name: "add",
  description: "Adds two numbers",
  parameters: Schema.Struct({ a: Schema.Number, b: Schema.Number }),
  handler: ({ a, b }) => Effect.succeed(String(a + b))
})

/** Echoes its `text` argument. */
export const echoTool = Tool.make({
  name: "echo",
  description: "Echoes text",
  parameters: Schema.Struct({ text: Schema.String }),
  handler: ({ text }) => Effect.succeed(`echo: ${text}`)
})

/** Sleeps `ms` (real or test clock) then answers `slept <ms>`. */
export const sleepTool = Tool.make({
  name: "sleep",
  description: "Sleeps",
  parameters: Schema.Struct({ ms: Schema.Number }),
  handler: ({ ms }) => Effect.as(Effect.sleep(ms), `slept ${ms}`)
})

/** Fails with a ToolError. */
export const failTool = Tool.make({
  name: "fail",
  description: "Always fails",
  parameters: Schema.Struct({}),
  handler: () => Effect.fail(new Tool.ToolError({ message: "it broke" }))
})

/** Dies with a defect. */
export const crashTool = Tool.make({
  name: "crash",
  description: "Always crashes",
  parameters: Schema.Struct({}),
  handler: () => Effect.die(new Error("boom"))
})

/** Never finishes (its own timeout is short). */
export const hangTool = Tool.make({
  name: "hang",
  description: "Never returns",
  parameters: Schema.Struct({}),
  handler: () => Effect.never,
  timeout: "50 millis"
})

/** Returns HTML with an artifact. */
export const pageTool = Tool.make({
  name: "page",
  description: "Renders a page",
  parameters: Schema.Struct({}),
  handler: () =>
    Effect.succeed({
      content: "<html><body>big page</body></html>",
      contentType: "html" as const,
      artifacts: [{ name: "page.html", mimeType: "text/html", size: 34 }]
    })
})

/** Returns `size` chars. */
export const bigTool = Tool.make({
  name: "big",
  description: "Returns a big text",
  parameters: Schema.Struct({ size: Schema.Number }),
  handler: ({ size }) => Effect.succeed("x".repeat(size))
})

/** A tool that records every run and needs approval (unless told otherwise). */
export const writer = (name = "write", needsApproval: Tool.NeedsApproval<{ readonly path: string }> = true) => {
  const ran: Array<string> = []
  const tool = Tool.make({
    name,
    description: "Writes a file",
    parameters: Schema.Struct({ path: Schema.String }),
    readOnly: false,
    needsApproval,
    handler: ({ path }) =>
      Effect.sync(() => {
        ran.push(path)
        return `wrote ${path}`
      })
  })
  return { tool, ran }
}

/** `n` tools that do nothing (`filler_<i>`): enough of them turn tool selection on (threshold 12). */
export const fillerTools = (n: number): ReadonlyArray<ToolT> =>
  Array.from({ length: n }, (_, i) =>
    Tool.make({
      name: `filler_${i}`,
      description: `Filler tool number ${i}`,
      parameters: Schema.Struct({}),
      handler: () => Effect.succeed("filler")
    }))

export const allTools: ReadonlyArray<ToolT> = [
  addTool,
  echoTool,
  sleepTool,
  failTool,
  crashTool,
  hangTool,
  pageTool,
  bigTool
]

/** A fresh in-memory interrupts service, usable synchronously from responders and tools. */
export const makeInterrupts = (): InterruptsService => Effect.runSync(makeInterruptsService)

/** Injects synchronously (throws when no run is active). */
export const injectNow = (service: InterruptsService, conversationId: string, content: string): string =>
  Effect.runSync(service.inject(conversationId, content)).id

export interface AgentHarness {
  readonly llm: ScriptedLlm.ScriptedLlm
  readonly layer: Layer.Layer<ReactAgent.ReactAgent | Interrupts.Interrupts>
  /** Loop/synthesis requests recorded by the scripted LLM. */
  readonly requests: () => ReadonlyArray<RecordedRequest>
}

/**
 * Builds an agent over a scripted LLM. The synthesis policy is `always` unless
 * `agent.synthesis` says otherwise: most scripts here are written for a loop
 * whose every call is a plain `chat` and whose answer a synthesis call writes
 * (test/ReactAgent.synthesisPolicy.test.ts covers `auto`, the default).
 */
export const makeAgent = (
  script: ReadonlyArray<ScriptStep> | ScriptedLlm.Responder,
  options: {
    readonly llm?: ScriptedLlmOptions
    readonly tools?: ReadonlyArray<ToolT>
    readonly agent?: Partial<AgentOptions>
    readonly hooks?: Layer.Layer<Hooks.Hooks>
    readonly guard?: Layer.Layer<ContextGuard.ContextGuard>
    /** A ready interrupts service (to inject from a responder or a tool); default: a fresh in-memory one. */
    readonly interrupts?: InterruptsService
    /** Where calls wait for approval; default: the agent's own in-memory one. */
    readonly approvals?: ApprovalsService
  } = {}
): AgentHarness => {
  const llm = ScriptedLlm.makeUnsafe(script, options.llm)
  const deps = Layer.mergeAll(
    llm.layer,
    Toolkit.layer(options.tools ?? allTools),
    options.hooks ?? noHooks,
    options.guard ?? recordingGuard().layer,
    options.interrupts ? Layer.succeed(Interrupts.Interrupts, options.interrupts) : Interrupts.layerMemory
  )
  const layer = ReactAgent.layer({
    synthesis: "always",
    ...options.agent,
    ...(options.approvals ? { approvals: options.approvals } : {})
  }).pipe(
    Layer.provideMerge(deps),
    Layer.orDie
  )
  return { llm, layer, requests: () => llm.requests }
}

/** JSON-mode agent (the model has no native tool calling). */
export const jsonLlm: ScriptedLlmOptions = { abilities: { toolCall: false } }

/** The messages of the n-th recorded request. */
export const messagesOf = (h: AgentHarness, n: number): ReadonlyArray<ChatMessage> => h.requests()[n].request.messages

export type { LlmService }
