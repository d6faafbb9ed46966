// @ts-check
/**
 * Renders stored conversation messages (`GET /api/conversations/:id`) as past turns:
 * user bubbles, tool cards (collapsed, with their results) and markdown answers;
 * a turn that was stopped or failed (`turn_details[].status`) is marked the way
 * a live run is.
 *
 * @since 0.1.0
 */
import { attachmentsOf, showAttachments } from "./attachments.js"
import { endMarker, forkButton } from "./cards.js"
import { h, markdown, pretty, preview } from "./dom.js"

/** @param {unknown} content */
function textOf(content) {
  if (typeof content === "string") return content
  if (Array.isArray(content)) return content.map((p) => (p && p.type === "text" ? p.text : "")).join("")
  return ""
}

/** @param {string} text */
function parseJsonReply(text) {
  const t = text.trim()
  if (!t.startsWith("{")) return null
  try {
    const v = JSON.parse(t)
    return v && typeof v === "object" && (v.type === "tool_call" || v.type === "final_answer") ? v : null
  } catch {
    return null
  }
}

/**
 * @param {string} name @param {unknown} args @param {string | undefined} result
 */
function card(name, args, result) {
  return h(
    "details",
    { class: `card ${result === undefined ? "" : "ok"}`, "data-tool": name },
    h(
      "summary",
      {},
      h("span", { class: "dot", "aria-hidden": "true" }),
      h("span", { class: "tool-name", text: name }),
      h("span", { class: "args-preview", text: preview(args) }),
      h("span", { class: "elapsed" })
    ),
    h(
      "div",
      { class: "card-body" },
      h("div", { class: "label", text: "Arguments" }),
      h("pre", { class: "args", text: pretty(args) }),
      result === undefined ? null : h("div", { class: "label", text: "Observation" }),
      result === undefined ? null : h("pre", { class: "observation", text: result })
    )
  )
}

/**
 * @param {ReadonlyArray<any>} messages stored chat messages, oldest first
 * @param {ReadonlyArray<any>} [details] `turn_details` (per turn: `query`, `status`, `run_id`): with
 *   them a turn starts only at its own query (other user messages of the loop are
 *   harness prompts, not turns) and stopped / failed turns get their marker
 * @param {(fork: { runId: string, toolCallId: string, query: string }) => void} [onFork] "Fork from here"
 *   on the tool cards of turns whose run is known
 * @returns {HTMLElement[]} one element per past turn
 */
export function renderHistory(messages, details, onFork) {
  const turnDetails = Array.isArray(details) ? details : null
  /** @type {Map<string, string>} */
  const results = new Map()
  for (const m of messages) if (m && m.role === "tool") results.set(String(m.tool_call_id), textOf(m.content))
  /** @type {HTMLElement[]} */
  const turns = []
  /** @type {Array<string | undefined>} the stored status of each turn */
  const statuses = []
  let nextDetail = 0
  /** @type {any} the detail of the turn being rendered */
  let current = null
  /** @type {HTMLElement | null} */
  let run = null
  /** @type {HTMLElement | null} */
  let pendingJsonCard = null
  const ensureRun = () => {
    if (!run) {
      const turn = h("article", { class: "turn past" })
      run = h("section", { class: "run", "aria-label": "Agent run" })
      turn.append(run)
      turns.push(turn)
      statuses.push(undefined)
    }
    return run
  }
  for (const m of messages) {
    if (!m || typeof m !== "object") continue
    if (m.role === "system") continue
    if (m.role === "user") {
      const text = textOf(m.content)
      if (text.startsWith("[USER INTERRUPT]")) {
        ensureRun().append(
          h(
            "div",
            { class: "msg inject taken" },
            h(
              "div",
              { class: "bubble" },
              h("span", { class: "badge", text: "Interrupt" }),
              h("span", {
                class: "inject-text",
                text: text.replace(/^\[USER INTERRUPT\][^\n]*\n?/, "").replace(/\nTake it into account[^\n]*$/, "")
              })
            )
          )
        )
        continue
      }
      if (pendingJsonCard && /^Observation:/i.test(text)) {
        const body = pendingJsonCard.querySelector(".card-body")
        body?.append(
          h("div", { class: "label", text: "Observation" }),
          h("pre", { class: "observation", text: text.replace(/^Observation:\s*/i, "") })
        )
        pendingJsonCard.classList.add("ok")
        pendingJsonCard = null
        continue
      }
      const detail = turnDetails?.[nextDetail]
      if (turnDetails && !(detail && detail.query === text)) continue // a harness prompt of the loop
      nextDetail++
      current = detail
      const bubble = h("div", { class: "bubble", text })
      showAttachments(bubble, attachmentsOf(m.content))
      const turn = h("article", { class: "turn past" }, h("div", { class: "msg user" }, bubble))
      run = h("section", { class: "run", "aria-label": "Agent run" })
      turn.append(run)
      turns.push(turn)
      statuses.push(detail?.status)
      continue
    }
    if (m.role === "assistant") {
      const r = ensureRun()
      const calls = Array.isArray(m.tool_calls) ? m.tool_calls : []
      if (calls.length > 0) {
        const round = h("div", { class: `round${calls.length > 1 ? " parallel" : ""}` })
        for (const c of calls) {
          const el = card(c.function?.name ?? "tool", c.function?.arguments ?? "", results.get(String(c.id)))
          const fork = { runId: current?.run_id, toolCallId: c.id, query: current?.query }
          if (
            onFork && typeof fork.runId === "string" && typeof fork.toolCallId === "string" &&
            results.has(fork.toolCallId)
          ) {
            forkButton(
              el,
              0,
              () => onFork({ runId: fork.runId, toolCallId: fork.toolCallId, query: String(fork.query ?? "") })
            )
            el.querySelector("button.fork")?.removeAttribute("hidden")
          }
          round.append(el)
        }
        const thought = (typeof m.reasoning_content === "string" && m.reasoning_content.trim()) ||
          textOf(m.content).trim()
        const thinking = thought
          ? h(
            "div",
            { class: "thinking done" },
            h(
              "details",
              { class: "reasoning" },
              h("summary", {}, h("span", { class: "step-label", text: "Reasoning" })),
              h("p", { text: thought })
            )
          )
          : null
        r.append(h("div", { class: `iteration${calls.length > 1 ? " parallel" : ""}` }, thinking, round))
        continue
      }
      const text = textOf(m.content)
      const json = parseJsonReply(text)
      if (json?.type === "tool_call") {
        pendingJsonCard = card(String(json.tool_name ?? "tool"), json.tool_args ?? {}, undefined)
        r.append(h("div", { class: "iteration" }, h("div", { class: "round" }, pendingJsonCard)))
        continue
      }
      const answer = json?.type === "final_answer" ? String(json.answer ?? "") : text
      if (answer.trim()) {
        // a turn stores the loop's own last reply, then the synthesised answer: show the latter
        r.querySelector(":scope > .answer")?.remove()
        const el = h("div", { class: "answer markdown" })
        el.innerHTML = markdown().render(answer)
        r.append(el)
      }
    }
  }
  turns.forEach((turn, i) => {
    const kind = statuses[i] === "cancelled" ? "stopped" : statuses[i] === "failed" ? "failed" : null
    const run = turn.querySelector(".run")
    if (!kind || !run) return
    run.querySelector(":scope > .answer")?.classList.add("cut")
    run.append(h("footer", { class: "run-footer" }, endMarker(kind)))
  })
  return turns
}
