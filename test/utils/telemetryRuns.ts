/**
 * Scripted runs the telemetry tests share.
 */
import * as Effect from "effect/Effect"
import * as Hooks from "../../src/Hooks.js"
import * as ReactAgent from "../../src/ReactAgent.js"
import * as ScriptedLlm from "../../src/ScriptedLlm.js"

export const CID = "conv-telemetry"

export const runCollect = (query: string) =>
  Effect.flatMap(ReactAgent.ReactAgent, (agent) => agent.runCollect({ query, conversationId: CID }))
/** Two parallel calls (add, echo — the hook rewrites echo's text), a failing call, the answer, the synthesis. */
export const parallelScript = [
  ScriptedLlm.toolCalls([
    { id: "call_add", name: "add", arguments: { a: 1, b: 2 } },
    { id: "call_echo", name: "echo", arguments: { text: "hi" } }
  ], { usage: { prompt: 100, completion: 12 } }),
  ScriptedLlm.toolCall("fail", {}, { id: "call_fail", usage: { prompt: 140, completion: 5 } }),
  ScriptedLlm.text("3 and echo: hello", { usage: { prompt: 180, completion: 6 } }),
  ScriptedLlm.text("**3** and echo: hello", { usage: { prompt: 220, completion: 7 } })
]

export const rewriteEcho = Hooks.layer([
  Hooks.pre({ name: "polite", matcher: "echo", run: () => Effect.succeed({ allow: true, args: { text: "hello" } }) })
])

export const agentOptions = { completionCheck: false, selfReflectionInterval: 0 }
