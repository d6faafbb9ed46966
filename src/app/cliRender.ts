/**
 * Terminal rendering of a run's events: a spinner while the model thinks (TTY
 * only), one line per tool call and result, inject/compact lines, the streamed
 * answer and a footer; in DAG mode the plan, one line per step start / result,
 * and the steps' tool lines prefixed with their step id. Or, with `--json`, one
 * JSON line per event.
 *
 * @internal
 */
import type { RunEvent } from "../RunEvent.js"
import { toWire } from "../RunEvent.js"

/** Where the renderer writes (process streams in the CLI, buffers in tests). @internal */
export interface Output {
  readonly write: (text: string) => void
  readonly error: (text: string) => void
  readonly isTTY: boolean
}

/** @internal */
export interface Renderer {
  readonly event: (event: RunEvent) => void
  /** Stops the spinner (idempotent). */
  readonly close: () => void
  /** True once a `RunFailed` event was seen. */
  readonly failed: () => boolean
}

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

const oneLine = (text: string, max: number): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length > max ? `${flat.slice(0, max)}…` : flat
}

const showArgs = (args: unknown): string => {
  if (args === undefined) return ""
  try {
    const text = typeof args === "string" ? args : JSON.stringify(args)
    return oneLine(text ?? "", 200)
  } catch {
    return String(args)
  }
}

const seconds = (s: number): string => `${s < 10 ? s.toFixed(2) : s.toFixed(1)}s`

/** One JSON line per event: `{"event": <SSE channel>, "data": <payload>}`. @internal */
export const jsonRenderer = (out: Output): Renderer => {
  let failed = false
  return {
    event: (event) => {
      if (event._tag === "RunFailed") failed = true
      const wire = toWire(event)
      out.write(JSON.stringify({ event: wire.channel, data: wire.data }) + "\n")
    },
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

  return {
    event: (event) => {
      switch (event._tag) {
        case "ThinkingStart":
          startSpinner(`${event.step_id !== undefined ? `step ${event.step_id} ` : ""}thinking${event.iteration > 1 ? ` (iteration ${event.iteration})` : ""}…`)
          break
        case "ThinkingDone":
          stopSpinner()
          if (event.reasoning.trim() !== "") line(`${tag(event.step_id)}${dim(`· ${oneLine(event.reasoning, 200)}`)}`)
          break
        case "ToolStart":
          line(`${tag(event.step_id)}${cyan("→")} ${event.tool_name}(${showArgs(event.tool_args)})`)
          startSpinner(`running ${event.tool_name}…`)
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
          else if (event.phase === "replanning") line(`${cyan("↻")} re-planning${event.reasoning ? `: ${oneLine(event.reasoning, 200)}` : ""}`)
          else line(dim(`no usable plan (${oneLine(event.reasoning ?? "", 160)}): continuing in ReAct mode`))
          break
        case "DagPlan":
          line(`${cyan("▸")} plan${event.round > 1 ? ` (round ${event.round})` : ""}:`)
          for (const s of event.steps) {
            tasks.set(s.id, s.task)
            line(`  ${dim(`[${s.id}]`)} ${oneLine(s.task, 120)}${s.dependencies.length > 0 ? dim(` ← ${s.dependencies.join(", ")}`) : ""}`)
          }
          break
        case "DagStep":
          if (event.status === "start") {
            line(`${tag(event.step_id)}${cyan("▶")} ${oneLine(tasks.get(event.step_id) ?? "", 120)}`)
            startSpinner(`running step ${event.step_id}…`)
          } else if (event.status === "done") {
            line(`${tag(event.step_id)}${green("✓")} ${oneLine(event.result ?? "", 160)}`)
          } else {
            line(`${tag(event.step_id)}${event.status === "failed" ? red("✗") : dim("–")} ${event.status}: ${oneLine(event.error ?? "", 160)}`)
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
          startSpinner("writing the answer…")
          break
        case "AnswerStart":
          stopSpinner()
          line("")
          answering = true
          break
        case "AnswerDelta":
          stopSpinner()
          out.write(event.content)
          if (event.content !== "") answerEndsWithNewline = event.content.endsWith("\n")
          break
        case "AnswerDone":
          if (answering && !answerEndsWithNewline) out.write("\n")
          answering = false
          answerEndsWithNewline = true
          break
        case "RunFailed":
          stopSpinner()
          failed = true
          out.error(`${red("✗ error:")} ${event.message}${event.retryable ? " (retryable)" : ""}\n`)
          break
        case "Done": {
          stopSpinner()
          if (answering && !answerEndsWithNewline) out.write("\n")
          const u = event.usage
          const parts = [
            `${event.iterations} iteration${event.iterations === 1 ? "" : "s"}`,
            `${u.total_tokens} tokens (${u.prompt_tokens} in, ${u.completion_tokens} out, ${u.llm_calls} LLM calls)`,
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
    },
    close: stopSpinner,
    failed: () => failed
  }
}
