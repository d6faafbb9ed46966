/**
 * This engine's client against another vendor's agent: an A2A agent built on
 * the A2A SDK's own server classes (its request handler and Express handlers,
 * started here on 127.0.0.1, an executor shaped like the SDK's sample agent)
 * becomes a tool of a ReAct agent (`A2A.remoteAgent`); the agent's run calls it
 * and its events show the call, the remote task's progress and its answer.
 *
 *   npx tsx examples/a2a/remote-agent.ts
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as A2A from "../../src/A2A.js"
import * as ContextGuard from "../../src/ContextGuard.js"
import * as Hooks from "../../src/Hooks.js"
import * as Interrupts from "../../src/Interrupts.js"
import { Llm } from "../../src/Llm.js"
import * as ReactAgent from "../../src/ReactAgent.js"
import * as ScriptedLlm from "../../src/ScriptedLlm.js"
import * as Toolkit from "../../src/Toolkit.js"
import { startSampleServer } from "../../test/utils/sdkSampleServer.js"

const sample = await startSampleServer({ token: "sample-token" })
const program = Effect.gen(function*() {
  const expert = yield* A2A.remoteAgent(sample.url, {
    name: "sample_agent",
    headers: { Authorization: "Bearer sample-token" }
  })
  console.log(`tool ${expert.name}: ${expert.description}`)
  // a scripted model stands in for a real one: it delegates once, then answers from the result
  const model = ScriptedLlm.makeUnsafe((request) =>
    request.messages.some((m) => m.role === "tool")
      ? ScriptedLlm.text("The sample agent says: Sample answer to: What is A2A?")
      : ScriptedLlm.toolCall("sample_agent", { query: "What is A2A?" }, { id: "call_1" })
  )
  const agent = ReactAgent.layer({ completionCheck: false }).pipe(Layer.provide(Layer.mergeAll(
    Layer.succeed(Llm, model.service),
    Toolkit.layer([expert]),
    Hooks.layerNoop,
    ContextGuard.layer({}),
    Interrupts.layerMemory
  )))
  yield* Effect.flatMap(
    ReactAgent.ReactAgent,
    (a) =>
      a.run({ query: "Ask the sample agent what A2A is." }).pipe(Stream.runForEach((event) =>
        Effect.sync(() => {
          if (event._tag === "ToolStart") {
            console.log(`→ ${event.tool_name}(${JSON.stringify(event.tool_args)}) key ${event.idempotency_key}`)
          } else if (event._tag === "ToolProgress") console.log(`  progress: ${event.message}`)
          else if (event._tag === "ToolDone") console.log(`← ${event.tool_name}: ${event.error ?? event.observation}`)
          else if (event._tag === "Done") console.log(`answer: ${event.answer}`)
        })
      ))
  ).pipe(Effect.provide(agent))
})
await Effect.runPromise(program)
console.log(`the sample server received: ${JSON.stringify(sample.received)}`)
await sample.close()
