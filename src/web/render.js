// @ts-check
/**
 * Renders one run (one user turn) from its SSE events. `apply()` is idempotent
 * per event id and per tool call, so a replay after a reconnect never duplicates
 * cards, bubbles or answer text.
 *
 * @since 0.1.0
 */
import { closeApproval, decideApproval, requestApproval } from "./approval.js"
import { DagView, isDagEvent } from "./dag.js"
import { formatNumber, formatSeconds, h, markdown, pretty, preview } from "./dom.js"

/**
 * @typedef {{ event: string, data: any, id?: string | number | undefined }} RunEvent
 */

export class RunView {
  /**
   * @param {string} query the user's message that started the run
   * @param {{ onChange?: () => void, onApproval?: import("./approval.js").Decide }} [options]
   *   `onApproval` sends the user's decision on a call waiting for approval
   */
  constructor(query, options = {}) {
    this.onChange = options.onChange ?? (() => {})
    this.onApproval = options.onApproval
    /** @type {Map<string, string>} approval id → card key */
    this.approvals = new Map()
    /** highest event id applied; events at or below it are replays */
    this.lastId = -1
    this.finished = false
    this.answerText = ""
    /** @type {Map<string, HTMLElement>} */
    this.cards = new Map()
    /** @type {Map<number, HTMLElement>} */
    this.iterations = new Map()
    /** @type {Map<string, HTMLElement>} */
    this.injects = new Map()
    /** @type {Map<string, number>} */
    this.startedAt = new Map()
    this.renderScheduled = false
    /** @type {DagView | null} */
    this.dag = null

    this.root = h("article", { class: "turn" })
    if (query) this.root.append(h("div", { class: "msg user" }, h("div", { class: "bubble", text: query })))
    this.run = h("section", { class: "run", "aria-label": "Agent run", "aria-busy": "true" })
    this.status = h("div", { class: "status-line", role: "status", "aria-live": "polite" })
    this.answer = h("div", { class: "answer markdown", hidden: true })
    this.footer = h("footer", { class: "run-footer", hidden: true })
    this.run.append(this.status, this.answer, this.footer)
    this.root.append(this.run)
    this.timer = setInterval(() => this.tickRunning(), 100)
  }

  /**
   * Apply one SSE event. Returns false for a duplicate (already applied) event.
   *
   * @param {RunEvent} ev
   */
  apply(ev) {
    const id = ev.id === undefined || ev.id === "" ? undefined : Number(ev.id)
    if (id !== undefined && Number.isFinite(id)) {
      if (id <= this.lastId) return false
      this.lastId = id
    }
    const d = ev.data ?? {}
    // DAG mode: the plan graph renders its own events (see dag.js)
    if (this.dag || isDagEvent(ev.event, d)) {
      if (!this.dag) {
        this.dag = new DagView(() => new RunView("", { onChange: this.onChange, onApproval: this.onApproval }))
        this.insert(this.dag.root)
      }
      if (this.dag.apply(ev.event, d)) {
        this.onChange()
        return true
      }
    }
    switch (ev.event) {
      case "step":
        if (d.type === "thinking") this.thinking(d)
        else if (d.type === "iteration") d.status === "start" ? this.toolStart(d) : this.toolDone(d)
        else if (d.type === "answer") this.setStatus("Writing the answer…")
        break
      case "phase":
        if (d.phase === "selecting_tools") {
          this.phase = h("div", { class: "phase active", text: `Selecting tools among ${formatNumber(d.total_tools ?? 0)}…` })
          this.phaseTotal = Number(d.total_tools ?? 0)
          this.insert(this.phase)
        }
        break
      case "compact":
        this.insert(
          h("div", { class: "divider", role: "separator", text: `Context compacted: ${d.original_messages} → ${d.kept_messages} messages` })
        )
        break
      case "inject":
        this.injectTaken(d)
        break
      case "approval":
        this.approval(d)
        break
      case "answer":
        if (d.status === "delta" && typeof d.content === "string") this.appendAnswer(d.content)
        else if (d.status === "start") this.showAnswer()
        else if (d.status === "done") this.renderAnswer()
        break
      case "error":
        this.insert(
          h("div", { class: "run-error", role: "alert" }, h("strong", { text: "Error: " }), String(d.message ?? "the run failed"),
            d.retryable ? h("span", { class: "muted", text: " (retryable)" }) : null)
        )
        break
      case "done":
        this.done(d)
        break
    }
    this.onChange()
    return true
  }

  /** @param {Node} node insert before the answer, in arrival order */
  insert(node) {
    this.run.insertBefore(node, this.answer)
  }

  /** @param {string} text */
  setStatus(text) {
    this.status.textContent = text
    this.status.hidden = text === ""
  }

  /** @param {number} n */
  iteration(n) {
    let it = this.iterations.get(n)
    if (!it) {
      const thinking = h("div", { class: "thinking" })
      const round = h("div", { class: "round" })
      it = h("div", { class: "iteration", "data-iteration": n }, thinking, round)
      this.iterations.set(n, it)
      this.insert(it)
    }
    return it
  }

  /** @param {any} d */
  thinking(d) {
    const it = this.iteration(Number(d.iteration ?? 0))
    const slot = /** @type {HTMLElement} */ (it.querySelector(".thinking"))
    this.endPhase()
    if (d.status === "start") {
      if (slot.classList.contains("done")) return
      slot.replaceChildren(h("span", { class: "spinner", "aria-hidden": "true" }), h("span", { text: `Thinking · step ${d.iteration}` }))
      slot.classList.add("active")
      this.setStatus("Thinking…")
    } else {
      slot.classList.remove("active")
      slot.classList.add("done")
      const label = h("span", { class: "step-label", text: `Step ${d.iteration}` })
      const reasoning = typeof d.reasoning === "string" ? d.reasoning.trim() : ""
      if (reasoning) {
        slot.replaceChildren(h("details", { class: "reasoning" }, h("summary", {}, label, h("span", { class: "muted", text: " · reasoning" })),
          h("p", { text: reasoning })))
      } else {
        slot.replaceChildren(label)
      }
      this.setStatus("")
    }
  }

  endPhase() {
    if (this.phase?.classList.contains("active")) {
      this.phase.classList.remove("active")
      this.phase.textContent = `Tools selected among ${formatNumber(this.phaseTotal ?? 0)}`
    }
  }

  /** @param {any} d */
  cardKey(d) {
    return d.tool_call_id ? `id:${d.tool_call_id}` : `it:${d.iteration}:${d.tool_name}`
  }

  /** @param {any} d */
  toolStart(d) {
    const key = this.cardKey(d)
    if (this.cards.has(key)) return
    const it = this.iteration(Number(d.iteration ?? 0))
    const card = h(
      "details",
      { class: "card running", "data-key": key, "data-tool": d.tool_name },
      h(
        "summary",
        {},
        h("span", { class: "dot", "aria-hidden": "true" }),
        h("span", { class: "tool-name", text: d.tool_name }),
        h("span", { class: "args-preview", text: preview(d.tool_args) }),
        h("span", { class: "elapsed", text: "running…" })
      ),
      h("div", { class: "card-body" }, h("div", { class: "label", text: "Arguments" }), h("pre", { class: "args", text: pretty(d.tool_args) }))
    )
    this.cards.set(key, card)
    this.startedAt.set(key, performance.now())
    const round = /** @type {HTMLElement} */ (it.querySelector(".round"))
    round.append(card)
    it.classList.toggle("parallel", it.querySelectorAll(".card").length > 1)
    this.setStatus(`Running ${d.tool_name}…`)
  }

  /** @param {any} d */
  toolDone(d) {
    const key = this.cardKey(d)
    if (!this.cards.has(key)) this.toolStart(d)
    const card = /** @type {HTMLElement} */ (this.cards.get(key))
    if (!card.classList.contains("running")) return
    this.startedAt.delete(key)
    card.classList.remove("running")
    const failed = d.error !== null && d.error !== undefined && d.error !== ""
    card.classList.add(failed ? "failed" : "ok")
    const elapsed = /** @type {HTMLElement} */ (card.querySelector(".elapsed"))
    elapsed.textContent = `${failed ? "failed · " : ""}${formatSeconds(Number(d.iter_elapsed ?? 0))}`
    const body = /** @type {HTMLElement} */ (card.querySelector(".card-body"))
    if (failed) body.append(h("div", { class: "label", text: "Error" }), h("pre", { class: "error", text: String(d.error) }))
    const obs = typeof d.observation === "string" ? d.observation : pretty(d.observation)
    if (d.content_type === "html" || d.content_type === "markdown") {
      body.append(h("div", { class: "label", text: "Preview" }), previewFrame(d.content_type, obs, d.tool_name))
      card.setAttribute("open", "")
    } else if (obs || !failed) {
      body.append(h("div", { class: "label", text: "Observation" }), h("pre", { class: "observation", text: obs }))
    }
    const artifacts = Array.isArray(d.artifacts) ? d.artifacts : []
    if (artifacts.length > 0) {
      const list = h("ul", { class: "artifacts" })
      for (const a of artifacts) {
        const url = typeof a.url === "string" && /^(https?:|\/)/.test(a.url) ? a.url : undefined
        const name = `${a.name ?? "artifact"}${a.mimeType ? ` (${a.mimeType})` : ""}`
        list.append(h("li", {}, url ? h("a", { href: url, target: "_blank", rel: "noopener noreferrer", text: name }) : name))
      }
      body.append(h("div", { class: "label", text: "Artifacts" }), list)
    }
    if (this.startedAt.size === 0) this.setStatus("")
  }

  /** A call waits for the user, or was decided. @param {any} d */
  approval(d) {
    const id = String(d.approval_id ?? "")
    if (d.status === "requested") {
      const key = this.cardKey(d)
      if (!this.cards.has(key)) this.toolStart(d)
      const card = /** @type {HTMLElement} */ (this.cards.get(key))
      this.approvals.set(id, key)
      this.startedAt.delete(key) // the wait is not the tool's time
      requestApproval(card, d, this.onApproval)
      this.setStatus(`Waiting for your approval: ${d.tool_name}`)
      return
    }
    const key = this.approvals.get(id)
    const card = key === undefined ? undefined : this.cards.get(key)
    if (!card || !card.classList.contains("awaiting")) return
    decideApproval(card, d)
    if (d.status === "approved" && key !== undefined) this.startedAt.set(key, performance.now())
    this.setStatus("")
  }

  tickRunning() {
    const now = performance.now()
    for (const [key, t0] of this.startedAt) {
      const el = this.cards.get(key)?.querySelector(".elapsed")
      if (el) el.textContent = `running · ${((now - t0) / 1000).toFixed(1)} s`
    }
  }

  /** A follow-up the user sent and the server queued (not yet taken in). @param {string} id @param {string} content */
  injectQueued(id, content, onRecall = () => {}) {
    if (this.injects.has(id)) return
    const recall = h("button", { type: "button", class: "link", text: "Recall" })
    recall.addEventListener("click", onRecall)
    const bubble = h("div", { class: "msg inject queued", "data-inject-id": id },
      h("div", { class: "bubble" }, h("span", { class: "badge", text: "Follow-up · queued" }), h("span", { class: "inject-text", text: content }), recall))
    this.injects.set(id, bubble)
    this.insert(bubble)
  }

  /** @param {string} id */
  injectRecalled(id) {
    this.injects.get(id)?.remove()
    this.injects.delete(id)
  }

  /** @param {any} d */
  injectTaken(d) {
    const id = String(d.id ?? `${this.lastId}`)
    const existing = this.injects.get(id)
    if (existing) {
      existing.classList.remove("queued")
      existing.querySelector("button")?.remove()
      const badge = existing.querySelector(".badge")
      if (badge) badge.textContent = "Interrupt · taken in"
      if (existing.classList.contains("taken")) return
      existing.classList.add("taken")
      this.insert(existing) // move to where the agent took it in
      return
    }
    const bubble = h("div", { class: "msg inject taken", "data-inject-id": id },
      h("div", { class: "bubble" }, h("span", { class: "badge", text: "Interrupt · taken in" }), h("span", { class: "inject-text", text: String(d.content ?? "") })))
    this.injects.set(id, bubble)
    this.insert(bubble)
  }

  showAnswer() {
    this.answer.hidden = false
  }

  /** @param {string} text */
  appendAnswer(text) {
    this.showAnswer()
    this.answerText += text
    if (!this.renderScheduled) {
      this.renderScheduled = true
      requestAnimationFrame(() => this.renderAnswer())
    }
  }

  renderAnswer() {
    this.renderScheduled = false
    this.answer.innerHTML = markdown().render(this.answerText)
    this.answer.classList.toggle("streaming", !this.finished)
    this.onChange()
  }

  /** @param {any} d */
  done(d) {
    if (this.finished) return
    this.finished = true
    clearInterval(this.timer)
    this.dag?.finish()
    for (const key of [...this.startedAt.keys()]) {
      const card = this.cards.get(key)
      card?.classList.replace("running", "cancelled")
      const el = card?.querySelector(".elapsed")
      if (el) el.textContent = "cancelled"
    }
    this.startedAt.clear()
    for (const key of this.approvals.values()) {
      const card = this.cards.get(key)
      if (!card?.classList.contains("awaiting")) continue
      closeApproval(card)
      card.classList.replace("running", "cancelled")
      const el = card.querySelector(".elapsed")
      if (el) el.textContent = "cancelled"
    }
    this.endPhase()
    if (!this.answerText && typeof d.answer === "string" && d.answer) this.answerText = d.answer
    if (this.answerText) {
      this.showAnswer()
      this.renderAnswer()
    }
    this.answer.classList.remove("streaming")
    this.setStatus("")
    const u = d.usage ?? {}
    const parts = [
      `${formatNumber(d.iterations ?? 0)} iteration${d.iterations === 1 ? "" : "s"}`,
      `${formatNumber(u.total_tokens ?? 0)} tokens`,
      formatSeconds(Number(d.elapsed ?? 0))
    ]
    this.footer.replaceChildren(...parts.flatMap((p, i) => (i === 0 ? [h("span", { text: p })] : [h("span", { class: "sep", "aria-hidden": "true", text: "·" }), h("span", { text: p })])))
    this.footer.title = `prompt ${formatNumber(u.prompt_tokens ?? 0)} · completion ${formatNumber(u.completion_tokens ?? 0)} · ${formatNumber(u.llm_calls ?? 0)} LLM calls`
    this.footer.hidden = false
    const pending = Array.isArray(d.pending_injections) ? d.pending_injections : []
    for (const p of pending) {
      this.injectRecalled(String(p.id))
      this.insert(h("div", { class: "msg inject pending" },
        h("div", { class: "bubble" }, h("span", { class: "badge", text: "Not taken in (run ended)" }), h("span", { class: "inject-text", text: String(p.content ?? "") }))))
    }
    for (const q of this.run.querySelectorAll(".inject.queued")) q.querySelector("button")?.remove()
    this.run.setAttribute("aria-busy", "false")
  }

  /** @param {string} text */
  note(text) {
    this.setStatus(text)
  }

  dispose() {
    clearInterval(this.timer)
  }
}

/**
 * A sandboxed preview of an html/markdown tool result: no scripts, no same-origin
 * access, no forms, no navigation of the page.
 *
 * @param {"html" | "markdown"} kind
 * @param {string} content
 * @param {string} title
 */
export function previewFrame(kind, content, title) {
  const body = kind === "html" ? content : `<!doctype html><meta charset="utf-8"><style>body{font:14px/1.5 system-ui,sans-serif;margin:12px;color:#1f2328}pre{overflow:auto}</style>${markdown().render(content)}`
  const frame = h("iframe", { class: "preview", sandbox: "", title: `Preview of ${title}`, loading: "lazy", referrerpolicy: "no-referrer" })
  const iframe = /** @type {HTMLIFrameElement} */ (frame)
  iframe.srcdoc = body
  return frame
}
