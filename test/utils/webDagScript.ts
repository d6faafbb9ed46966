/**
 * The scripted model's DAG-mode replies for the page's browser tests (with
 * delays, so the graph fills in visibly): queries starting `dag` plan three steps
 * — two parallel lookups and a comparison that depends on both; queries
 * starting `dagreplan` are judged not achieved after the first round and
 * re-planned with one more step.
 */
import type { ChatRequest } from "../../src/Llm.js"
import type { ScriptStep } from "../../src/ScriptedLlm.js"
import * as ScriptedLlm from "../../src/ScriptedLlm.js"
import { draftOf, kindOf } from "./dagLayers.js"

const ANSWER = "**Lyon is larger**: about 522,000 inhabitants against 232,000 for Porto.\n\n" +
  "| City | Population |\n|---|---|\n| Lyon | 522,000 |\n| Porto | 232,000 |\n\nThe difference is about **290,000** people."

const lookup = (topic: string, ms: number, id: string): ScriptStep =>
  ScriptedLlm.toolCall("lookup", { topic, ms }, { id, delay: "250 millis" })

/** The reply to a DAG-mode request of a `dag…` query, or undefined when the request is not one. */
export const dagReply = (request: ChatRequest, method: "chat" | "stream"): ScriptStep | undefined => {
  const kind = kindOf(request, method)
  if (kind._tag === "Route") {
    return ScriptedLlm.toolCall("choose_mode", {
      mode: /^\s*dag/i.test(kind.text.split("\n").pop() ?? "") ? "dag" : "react"
    })
  }
  if (kind._tag === "React" || !/Goal:\ndag|Overall goal: dag/i.test(kind.text)) return undefined
  const replan = /Goal:\ndagreplan|Overall goal: dagreplan/i.test(kind.text)
  switch (kind._tag) {
    case "Plan":
      if (kind.text.includes("What happened in round 1")) {
        return ScriptedLlm.toolCall("create_plan", {
          steps: [{
            id: "1",
            task: "Look up the population of the Porto metropolitan area",
            dependencies: [],
            tool_hint: "lookup"
          }]
        }, { delay: "300 millis" })
      }
      return ScriptedLlm.toolCall("create_plan", {
        steps: [
          { id: "1", task: "Look up the population of Lyon", dependencies: [], tool_hint: "lookup" },
          {
            id: "2",
            task: "Look up the population of Porto",
            dependencies: [],
            tool_hint: "lookup",
            model_hint: "fast"
          },
          { id: "3", task: "Compare the two populations", dependencies: ["1", "2"], tool_hint: "calculator" }
        ]
      }, { delay: "400 millis" })
    case "Step": {
      if (kind.task.includes("Porto metropolitan")) {
        return kind.turn === 0
          ? lookup("Porto metro", 600, "call_metro")
          : ScriptedLlm.text("The Porto metropolitan area has about 1.7 million inhabitants.", { delay: "150 millis" })
      }
      if (kind.id === "1") {
        return kind.turn === 0
          ? lookup("Lyon", 900, "call_lyon")
          : ScriptedLlm.text("Lyon has about 522,000 inhabitants.", { delay: "150 millis" })
      }
      if (kind.id === "2") {
        return kind.turn === 0
          ? lookup("Porto", 1200, "call_porto")
          : ScriptedLlm.text("Porto has about 232,000 inhabitants.", { delay: "150 millis" })
      }
      return kind.turn === 0
        ? ScriptedLlm.toolCall("calculator", { a: 522000, b: -232000 }, { id: "call_diff", delay: "200 millis" })
        : ScriptedLlm.text("Lyon has about 290,000 more inhabitants than Porto.", { delay: "150 millis" })
    }
    case "StepAnswer":
      return ScriptedLlm.text(draftOf(kind.text), { delay: "80 millis", chunkDelay: "15 millis" })
    case "Analyze": {
      const first = !kind.text.includes("Porto metropolitan")
      return replan && first
        ? ScriptedLlm.toolCall("report_analysis", {
          achieved: false,
          confidence: 0.4,
          reasoning: "Porto's figure is the municipality only; the metropolitan area is needed for a fair comparison."
        }, { delay: "300 millis" })
        : ScriptedLlm.toolCall("report_analysis", {
          achieved: true,
          confidence: 0.92,
          reasoning: "Both populations found and compared."
        }, {
          delay: "300 millis"
        })
    }
    case "Answer":
      return ScriptedLlm.text(ANSWER, { delay: "150 millis", chunkDelay: "20 millis" })
  }
}
