/**
 * Terminal rendering of a run's events: a spinner while the model thinks (TTY
 * only), one line per tool call and result, inject/compact/retry lines, the
 * streamed answer (markdown rendered for a terminal when stdout is one) and a
 * footer; in DAG mode the plan, one line per step start / result, and the
 * steps' tool lines prefixed with their step id. Or, with `--json`, one JSON
 * line per event.
 *
 * @internal
 */
import type { RetryNotice } from "../Llm.js"
import type { RunEvent } from "../RunEvent.js"
import { agentOf, settledAnswers } from "../RunEvent.js"
import type { ToolCatalogue } from "../server/AppInfo.js"
import { toWire } from "../server/EventWire.js"
import { budgetText, cachedPart, neededText, oneLine, seconds, showArgs } from "./cliFormat.js"
import { makeLineRenderer } from "./cliMarkdown.js"

/** Where the renderer writes (process streams in the CLI, buffers in tests). @internal */
export interface Output {
  readonly write: (text: string) => void
  readonly error: (text: string) => void
  readonly isTTY: boolean
}

/** @internal */
export interface Renderer {
  readonly event: (event: RunEvent) => void
  /** The LLM is about to retry a failed call. */
  readonly retry: (notice: RetryNotice) => void
  /** Stops the spinner (idempotent). */
  readonly close: () => void
  /** True once a `RunFailed` event was seen. */
  readonly failed: () => boolean
}

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

/** The retry's SSE payload (the same as the server's `phase` frame). @internal */
export const retryPayload = (notice: RetryNotice) => ({
  phase: "retrying" as const,
  attempt: notice.attempt,
  reason: notice.reason,
  delay_ms: Math.round(notice.delayMs)
})

/** One JSON line per event: `{"event": <SSE channel>, "data": <payload>}`. @internal */
export const jsonRenderer = (out: Output): Renderer => {
  let failed = false
  return {
    event: (event) => {
      if (event._tag === "RunFailed") failed = true
      const wire = toWire(event)
      out.write(JSON.stringify({ event: wire.channel, data: wire.data }) + "\n")
    },
    retry: (notice) => out.write(JSON.stringify({ event: "phase", data: retryPayload(notice) }) + "\n"),
    close: () => {},
    failed: () => failed
  }
}

/** The human-readable renderer. @internal */
export const textRenderer = (out: Output, info: { readonly model: string; readonly demo: boolean }): Renderer => {
  const color = out.isTTY
  const dim = (s: string) => (color ? `\x1b[2m${s}\x1b[22m` : s)
  const green = (s: string) => (color ? `\x1b[32m${s}\x1b[39m` : s)
  const red = (s: string) => (color ? `\x1b[31m${s}\x1b[39m` : s)
  const cyan = (s: string) => (color ? `\x1b[36m${s}\x1b[39m` : s)
  let timer: ReturnType<typeof setInterval> | undefined
  let failed = false
  let answering = false
  let answerEndsWithNewline = true
  /** Some of the current answer reached the output (not just the pending, unrendered line). */
  let answerPrinted = false
  const tasks = new Map<string, string>()
  const tag = (stepId: string | undefined) => (stepId === undefined ? "" : `${dim(`[${stepId}]`)} `)

  const stopSpinner = () => {
    if (timer !== undefined) {
      clearInterval(timer)
      timer = undefined
      out.write("\r\x1b[K")
    }
  }
  const startSpinner = (label: string) => {
    if (!out.isTTY) return
    stopSpinner()
    let frame = 0
    const draw = () => out.write(`\r\x1b[K${cyan(FRAMES[frame++ % FRAMES.length])} ${dim(label)}`)
    draw()
    timer = setInterval(draw, 80)
    timer.unref?.()
  }
  const line = (text: string) => {
    stopSpinner()
    out.write(text + "\n")
  }
  // On a terminal the answer is shown line by line, each line rendered as
  // markdown once it is complete (a spinner while one is being written).
  let markdown = makeLineRenderer()
  let pending = ""
  const answerText = (text: string) => {
    if (!color) {
      out.write(text)
      answerPrinted ||= text !== ""
      return
    }
    pending += text
    const lines = pending.split("\n")
    pending = lines.pop() ?? ""
    for (const l of lines) line(markdown.line(l))
    answerPrinted ||= lines.length > 0
    if (pending !== "" && timer === undefined) startSpinner("writing the answer…")
  }
  const flushAnswer = () => {
    if (pending !== "") {
      stopSpinner()
      out.write(markdown.line(pending))
      pending = ""
    }
  }

  const retry = (notice: RetryNotice) => {
    const text = `the model is busy (${notice.reason}): retry ${notice.attempt} in ${seconds(notice.delayMs / 1000)}`
    if (out.isTTY) startSpinner(`${text}…`)
    else line(`↻ ${text}`)
  }

  // piped output cannot take text back: a streamed loop reply is printed once it is the answer
  const settle = out.isTTY ? undefined : settledAnswers()
  // a sub-agent's steps, indented under the call that started it (its answer is the call's result)
  const renderChild = (event: RunEvent, indent: string, name: string): void => {
    const who = `${indent}${dim(`[${name}]`)} `
    if (event._tag === "ToolStart") line(`${who}${cyan("→")} ${event.tool_name}(${showArgs(event.tool_args)})`)
    else if (event._tag === "ToolDone") {
      line(
        who + (event.error === null
          ? `${green("✓")} ${event.tool_name}: ${oneLine(event.observation, 100)}`
          : `${red("✗")} ${event.tool_name}: ${oneLine(event.error, 160)}`)
      )
    } else if (event._tag === "ThinkingDone" && event.reasoning.trim() !== "") {
      line(`${who}${dim(`· ${oneLine(event.reasoning, 160)}`)}`)
    }
  }
  const render = (event: RunEvent): void => {
    const child = event._tag === "AgentStart" || event._tag === "AgentDone" ? undefined : agentOf(event)
    // a child's approvals are the user's to answer: shown as the run's own
    if (child !== undefined && event._tag !== "ApprovalRequested" && event._tag !== "ApprovalDecided") {
      return renderChild(event, "  ".repeat(child.depth), child.name)
    }
    switch (event._tag) {
      case "AgentStart":
        line(
          `${"  ".repeat(event.agent.depth - 1)}${cyan("▶")} sub-agent ${event.agent.name}: ${
            oneLine(event.query, 120)
          }`
        )
        break
      case "AgentDone":
        line(
          "  ".repeat(event.agent.depth - 1) + (event.error === undefined
            ? `${green("✓")} sub-agent ${event.agent.name} ${
              dim(`${event.iterations} iterations, ${seconds(event.elapsed)}`)
            }`
            : `${red("✗")} sub-agent ${event.agent.name}: ${oneLine(event.error, 160)}`)
        )
        break
      case "LlmRetry":
        retry({ attempt: event.attempt, reason: event.reason, delayMs: event.delay_ms })
        break
      case "ThinkingStart":
        startSpinner(
          `${event.step_id !== undefined ? `step ${event.step_id} ` : ""}thinking${
            event.iteration > 1 ? ` (iteration ${event.iteration})` : ""
          }…`
        )
        break
      case "ThinkingDone":
        stopSpinner()
        if (event.reasoning.trim() !== "") line(`${tag(event.step_id)}${dim(`· ${oneLine(event.reasoning, 200)}`)}`)
        break
      case "ToolStart":
        line(`${tag(event.step_id)}${cyan("→")} ${event.tool_name}(${showArgs(event.tool_args)})`)
        startSpinner(`running ${event.tool_name}…`)
        break
      case "ToolProgress":
        // on a terminal the running call's spinner says how far it is (piped: nothing, the result line follows)
        startSpinner(
          `running ${event.tool_name}: ${oneLine(event.message, 80)}${
            event.progress !== undefined ? ` (${Math.round(event.progress * 100)}%)` : ""
          }…`
        )
        break
      case "ToolDone":
        line(
          tag(event.step_id) + (event.error === null
            ? `${green("✓")} ${event.tool_name} ${dim(seconds(event.iter_elapsed))}: ${oneLine(event.observation, 120)}`
            : `${red("✗")} ${event.tool_name} ${dim(seconds(event.iter_elapsed))}: ${oneLine(event.error, 200)}`)
        )
        break
      case "DagPhase":
        if (event.phase === "planning") startSpinner("planning…")
        else if (event.phase === "analyzing") startSpinner("checking the results…")
        else if (event.phase === "replanning") {
          line(`${cyan("↻")} re-planning${event.reasoning ? `: ${oneLine(event.reasoning, 200)}` : ""}`)
        } else line(dim(`no usable plan (${oneLine(event.reasoning ?? "", 160)}): continuing in ReAct mode`))
        break
      case "DagPlan":
        line(`${cyan("▸")} plan${event.round > 1 ? ` (round ${event.round})` : ""}:`)
        for (const s of event.steps) {
          tasks.set(s.id, s.task)
          line(
            `  ${dim(`[${s.id}]`)} ${oneLine(s.task, 120)}${
              s.dependencies.length > 0 ? dim(` ← ${s.dependencies.join(", ")}`) : ""
            }`
          )
        }
        break
      case "DagStep":
        if (event.status === "start") {
          line(`${tag(event.step_id)}${cyan("▶")} ${oneLine(tasks.get(event.step_id) ?? "", 120)}`)
          startSpinner(`running step ${event.step_id}…`)
        } else if (event.status === "done") {
          line(`${tag(event.step_id)}${green("✓")} ${oneLine(event.result ?? "", 160)}`)
        } else {
          line(
            `${tag(event.step_id)}${event.status === "failed" ? red("✗") : dim("–")} ${event.status}: ${
              oneLine(event.error ?? "", 160)
            }`
          )
        }
        break
      case "Compact":
        line(dim(`⇣ context compacted: ${event.original_messages} → ${event.kept_messages} messages`))
        break
      case "PhaseChange":
        startSpinner(`selecting tools among ${event.total_tools}…`)
        break
      case "Inject":
        line(`${cyan("↳")} injected: ${oneLine(event.content, 200)}`)
        break
      case "ApprovalRequested":
        line(`${tag(event.step_id)}${cyan("?")} ${event.tool_name} waits for approval`)
        break
      case "ApprovalDecided":
        line(
          tag(event.step_id) + (event.status === "approved"
            ? `${green("✓")} approved`
            : `${red("✗")} denied${event.reason !== undefined ? `: ${oneLine(event.reason, 160)}` : ""}`)
        )
        if (event.status === "approved") startSpinner("running…")
        break
      case "AnswerSignal":
        // an answer streamed by the loop (synthesis "auto") is already being printed
        if (!answering) startSpinner("writing the answer…")
        break
      case "AnswerReset":
        // what was printed as the answer is void: the model went on working (or a restart re-streams it)
        pending = ""
        stopSpinner()
        if (answering && answerPrinted) {
          if (!answerEndsWithNewline) out.write("\n")
          line(dim("↺ (not the answer: the model went on working)"))
        }
        answering = false
        answerPrinted = false
        answerEndsWithNewline = true
        break
      case "AnswerStart":
        stopSpinner()
        line("")
        answering = true
        answerPrinted = false
        markdown = makeLineRenderer()
        break
      case "AnswerDelta":
        if (timer !== undefined && pending === "") stopSpinner()
        answerText(event.content)
        if (event.content !== "") answerEndsWithNewline = event.content.endsWith("\n")
        break
      case "AnswerDone":
        flushAnswer()
        if (answering && !answerEndsWithNewline) out.write("\n")
        answering = false
        answerEndsWithNewline = true
        break
      case "GuardrailTripped":
        stopSpinner()
        line(
          `${red("⛔ guardrail")} ${event.name} tripped on the ${event.stage === "input" ? "request" : "answer"}: ${
            oneLine(event.reason, 200)
          }`
        )
        break
      case "BudgetExhausted":
        stopSpinner()
        line(
          `${red("$")} budget exhausted: ${budgetText(event)} spent${
            neededText(event)
          }; answering from what the run has`
        )
        break
      case "BudgetStatus":
        stopSpinner()
        if (event.status === "exhausted") line(`${cyan("$")} budget spent: $${event.spent_usd} of $${event.limit_usd}`)
        else if (event.status === "extended") line(`${green("$")} budget extended to $${event.limit_usd}`)
        else line(`${red("$")} stopped at $${event.spent_usd}`)
        break
      case "RunFailed":
        stopSpinner()
        failed = true
        out.error(`${red("✗ error:")} ${event.message}${event.retryable ? " (retryable)" : ""}\n`)
        break
      case "Done": {
        flushAnswer()
        stopSpinner()
        if (answering && !answerEndsWithNewline) out.write("\n")
        const u = event.usage
        const parts = [
          `${event.iterations} iteration${event.iterations === 1 ? "" : "s"}`,
          `${u.total_tokens} tokens (${u.prompt_tokens} in${
            cachedPart(u)
          }, ${u.completion_tokens} out, ${u.llm_calls} LLM calls)`,
          ...(u.cost_usd !== undefined ? [`$${u.cost_usd}`] : []),
          seconds(event.elapsed),
          info.demo ? `${info.model} (no LLM configured)` : info.model
        ]
        if (event.conversation_id) parts.push(`conversation ${event.conversation_id}`)
        line("")
        line(dim(`— ${parts.join(" · ")}`))
        if (event.pending_injections.length > 0) {
          line(dim(`  ${event.pending_injections.length} message(s) arrived too late for this run`))
        }
        break
      }
    }
  }
  return {
    event: (event) => (settle === undefined ? render(event) : settle(event).forEach(render)),
    retry,
    close: stopSpinner,
    failed: () => failed
  }
}

/** `--tools`: one line per tool (name, source, description), then the MCP servers that failed. @internal */
export const toolsText = (catalogue: ToolCatalogue, isTTY: boolean): string => {
  const dim = (s: string) => (isTTY ? `\x1b[2m${s}\x1b[22m` : s)
  const width = Math.max(0, ...catalogue.tools.map((t) => t.name.length))
  const sourceWidth = Math.max(0, ...catalogue.tools.map((t) => t.source.length))
  const lines = [`${catalogue.tools.length} tool${catalogue.tools.length === 1 ? "" : "s"}:`]
  for (const t of catalogue.tools) {
    lines.push(`  ${t.name.padEnd(width)}  ${dim(t.source.padEnd(sourceWidth))}  ${oneLine(t.description, 100)}`)
  }
  if (catalogue.failed_servers.length > 0) {
    lines.push("", `MCP servers that did not start (${catalogue.failed_servers.length}):`)
    for (const f of catalogue.failed_servers) lines.push(`  ✗ ${f.name}: ${oneLine(f.error, 300)}`)
  }
  return lines.join("\n") + "\n"
}
