/**
 * DAG mode and attachments (docs/attachments.md): the planner, the steps and
 * the analysis read text only, so a query with files is not planned — the run
 * goes on in ReAct mode at once (`DagPhase` `react_fallback`, naming why) and
 * the model gets the files with the query. A query without files is planned as
 * before.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Message from "../../src/Message.js"
import * as ScriptedLlm from "../../src/ScriptedLlm.js"
import { dagEvents, doneOf, makeDag, planReply, requestsOf, stepText } from "../utils/dagLayers.js"

const PHOTO: Message.FileRef = {
  name: "photo.png",
  media_type: "image/png",
  size: 120,
  sha256: "a".repeat(64),
  width: 8,
  height: 8
}

const script = () =>
  makeDag({
    plan: () => planReply([{ id: 1, task: "look" }]),
    react: (_turn, method) => (method === "stream" ? ScriptedLlm.text("a red square") : stepText("a red square"))
  })

describe("DagAgent with attachments", () => {
  it.effect("a query with files goes on in ReAct mode at once; the model gets the files", () => {
    const h = script()
    return Effect.gen(function*() {
      const events = yield* dagEvents({
        query: [{ type: "text", text: "What is in the photo?" }, Message.file(PHOTO)],
        conversationId: "dag-files"
      })
      const phases = events.flatMap((e) => (e._tag === "DagPhase" ? [`${e.phase}:${e.reasoning ?? ""}`] : []))
      assert.deepStrictEqual(phases, ["react_fallback:the query has attachments, which DAG steps cannot read"])
      assert.isTrue(events.some((e) => e._tag === "AttachmentsReceived"))
      assert.strictEqual(doneOf(events).answer, "a red square")
      const requests = requestsOf(h)
      assert.deepStrictEqual(requests.filter((r) => r.kind._tag === "Plan"), [], "no plan was asked for")
      const query = requests[0].request.messages.find((m) => m.role === "user")
      assert.deepStrictEqual(Message.filesOf(query?.content).map((f) => f.file.sha256), [PHOTO.sha256])
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a query without files is planned as before", () => {
    const h = script()
    return Effect.gen(function*() {
      const events = yield* dagEvents({ query: "What is in the photo?", conversationId: "dag-text" })
      assert.strictEqual(events.find((e) => e._tag === "DagPhase")?._tag === "DagPhase" ? "planning" : "", "planning")
      assert.isAbove(requestsOf(h).filter((r) => r.kind._tag === "Plan").length, 0)
      assert.isFalse(events.some((e) => e._tag === "AttachmentsReceived"))
    }).pipe(Effect.provide(h.layer))
  })
})
