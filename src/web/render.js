// @ts-check
/**
 * Renders one run (one user turn) from its SSE events. `apply()` is idempotent
 * per event id and per tool call, so a replay after a reconnect never duplicates
 * cards, bubbles or answer text. However a run ends — done, stopped, failed, or
 * lost — `end()` leaves no spinner behind and says how it ended.
 *
 * @since 0.1.0
 */
import { AgentViews } from "./agents.js"
import { closeApproval, decideApproval, requestApproval } from "./approval.js"
import { showAttachments } from "./attachments.js"
import { budgetOutcome, budgetPanel, costText, exhaustedLine, guardrailAlert } from "./budget.js"
import { endMarker, finishCard, forkButton, runningCard } from "./cards.js"
import { DagView, isDagEvent } from "./dag.js"
import { formatNumber, formatSeconds, h, markdown } from "./dom.js"
import { OutputPanel } from "./output.js"
import { endProgress, isEphemeral, showProgress } from "./progress.js"

/**
 * @typedef {{ event: string, data: any, id?: string | number | undefined }} RunEvent
 * @typedef {(fork: { conversationId: string, runId: string, at: number, query: string }) => void} Fork
 */

/** What a retry's `reason` means, for people. */
const REASONS = /** @type {Record<string, string>} */ ({
  RateLimited: "rate limited",
  Server: "server error",
  Timeout: "timed out",
  Connection: "connection error"
})

export class RunView {
  /**
   * @param {string} query the user's message that started the run
   * @param {{ onChange?: () => void, onApproval?: import("./approval.js").Decide, onBudget?: import("./budget.js").DecideBudget, onFork?: Fork }} [options]
   *   `onApproval` sends the user's decision on a call waiting for approval; `onBudget` on a run waiting for more budget;
   *   `onFork` forks the finished run at a step ("Fork from here" on its tool cards)
   */
  constructor(query, options = {}) {
    this.query = query
    this.onFork = options.onFork
    /** @type {{ conversationId: string, runId: string } | null} the finished run (its `done`), once known */
    this.forkable = null
    this.onChange = options.onChange ?? (() => {})
    this.onApproval = options.onApproval
    this.onBudget = options.onBudget
    /** @type {HTMLElement | null} the panel of a run waiting for more budget */
    this.budgetWait = null
    /** @type {Map<string, string>} approval id → card key */
    this.approvals = new Map()
    /** highest event id applied; events at or below it are replays */
    this.lastId = -1
    this.finished = false
    this.answerText = ""
    /** the `error` event's message, when the run failed */
    this.failure = /** @type {string | null} */ (null)
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
    /** @type {OutputPanel | null} the typed answer (output.js) */
    this.output = null
    /** @type {HTMLElement | null} the retry line of the LLM call in progress */
    this.retryLine = null
    this.retries = 0
    /** true while the run waits for a free slot (`phase queued`) */
    this.queued = false

    this.root = h("article", { class: "turn" })
    if (query) this.root.append(h("div", { class: "msg user" }, h("div", { class: "bubble", text: query })))
    this.run = h("section", { class: "run", "aria-label": "Agent run", "aria-busy": "true" })
    // what is going on, for screen readers (the page shows it in place: spinners, cards)
    this.live = h("div", { class: "sr-only", role: "status", "aria-live": "polite" })
    this.status = h("div", { class: "status-line" })
    this.answer = h("div", { class: "answer markdown", hidden: true })
    this.footer = h("footer", { class: "run-footer", hidden: true })
    this.run.append(this.live, this.status, this.answer, this.footer)
    this.root.append(this.run)
    this.timer = setInterval(() => this.tickRunning(), 100)
    // sub-agents: a child run's events are drawn in the card of the call that started it
    this.agents = new AgentViews(
      this.run,
      (node) => this.insert(node),
      () => new RunView("", { onChange: this.onChange, onApproval: this.onApproval, onBudget: this.onBudget })
    )
  }

  /**
   * Apply one SSE event. Returns false for a duplicate (already applied) event.
   *
   * @param {RunEvent} ev
   */
  apply(ev) {
    const d = ev.data ?? {}
    // an ephemeral event has no id of its own (an SSE parser hands it the last one): never a replay
    const id = ev.id === undefined || ev.id === "" || isEphemeral(ev.event, d) ? undefined : Number(ev.id)
    if (id !== undefined && Number.isFinite(id)) {
      if (id <= this.lastId) return false
      this.lastId = id
    }
    if (this.agents.route(ev.event, d)) {
      this.onChange()
      return true
    }
    if (ev.event === "step" || ev.event === "answer") this.endRetry()
    // DAG mode: the plan graph renders its own events (see dag.js)
    if (this.dag || isDagEvent(ev.event, d)) {
      if (!this.dag) {
        this.dag = new DagView(() =>
          new RunView("", { onChange: this.onChange, onApproval: this.onApproval, onBudget: this.onBudget })
        )
        this.insert(this.dag.root)
      }
      if (this.dag.apply(ev.event, d)) {
        this.onChange()
        return true
      }
    }
    // a run that waited for a free slot has begun: its "waiting" line goes
    if (this.queued && !(ev.event === "phase" && d.phase === "queued")) {
      this.queued = false
      this.setStatus("")
    }
    switch (ev.event) {
      case "step":
        if (d.type === "thinking") this.thinking(d)
        else if (d.type === "iteration" && d.status === "progress") this.toolProgress(d)
        else if (d.type === "iteration" && d.status === "start") this.toolStart(d)
        else if (d.type === "iteration") this.toolDone(d)
        // an answer streamed by the loop (synthesis "auto") is already on screen
        else if (d.type === "answer" && this.answerText === "") this.setStatus("Writing the answer…", true)
        break
      case "phase":
        if (d.phase === "selecting_tools") {
          this.phase = h("div", {
            class: "phase active",
            text: `Selecting tools among ${formatNumber(d.total_tools ?? 0)}…`
          })
          this.phaseTotal = Number(d.total_tools ?? 0)
          this.insert(this.phase)
        } else if (d.phase === "retrying") {
          this.retrying(d)
        } else if (d.phase === "budget_exhausted") {
          this.insert(exhaustedLine(d))
        } else if (d.phase === "queued") {
          this.queued = true
          this.setStatus(`Waiting for a free slot (${formatNumber(Number(d.position ?? 0))} ahead)…`, true)
        }
        break
      case "budget":
        if (d.status === "exhausted") {
          this.budgetWait = budgetPanel(d, this.onBudget)
          this.insert(this.budgetWait)
        } else {
          const outcome = budgetOutcome(d)
          if (this.budgetWait) this.budgetWait.replaceWith(outcome)
          else this.insert(outcome)
          this.budgetWait = null
        }
        break
      case "guardrail":
        this.insert(guardrailAlert(d))
        break
      case "input":
        // the run's attachments (its first event): in the user's bubble
        if (d.type === "attachments") {
          showAttachments(
            /** @type {HTMLElement} */ (this.root.querySelector(".msg.user .bubble")),
            d.attachments ?? []
          )
        }
        break
      case "compact":
        this.insert(
          h("div", {
            class: "divider",
            role: "separator",
            text: `Context compacted: ${d.original_messages} → ${d.kept_messages} messages`
          })
        )
        break
      case "inject":
        this.injectTaken(d)
        break
      case "approval":
        this.approval(d)
        break
      case "answer":
        if (d.type === "output_partial") this.typedAnswer().partial(d.value)
        else if (d.status === "delta" && typeof d.content === "string") this.appendAnswer(d.content)
        else if (d.status === "start") this.showAnswer()
        else if (d.status === "done") this.renderAnswer()
        else if (d.status === "reset") this.resetAnswer()
        break
      case "error":
        this.failure = String(d.message ?? "the run failed")
        this.insert(
          h(
            "div",
            { class: "run-error", role: "alert" },
            h("strong", { text: "Error: " }),
            this.failure,
            d.retryable ? h("span", { class: "muted", text: " (retryable)" }) : null
          )
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

  /**
   * The visible status line (under the run): only for what nothing else shows.
   *
   * @param {string} text
   * @param {boolean} [busy] with a spinner
   */
  setStatus(text, busy = false) {
    this.status.replaceChildren(...(busy ? [h("span", { class: "spinner", "aria-hidden": "true" })] : []), text)
    this.status.hidden = text === ""
    this.announce(text)
  }

  /** @param {string} text announced to screen readers */
  announce(text) {
    if (text !== "") this.live.textContent = text
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
      slot.replaceChildren(
        h("span", { class: "spinner", "aria-hidden": "true" }),
        h("span", { text: `Thinking · step ${d.iteration}` })
      )
      slot.classList.add("active")
      this.announce(`Thinking (step ${d.iteration})…`)
    } else {
      slot.classList.remove("active")
      slot.classList.add("done")
      const reasoning = typeof d.reasoning === "string" ? d.reasoning.trim() : ""
      if (reasoning) {
        const label = h("span", { class: "step-label", text: `Step ${d.iteration}` })
        slot.replaceChildren(
          h(
            "details",
            { class: "reasoning" },
            h("summary", {}, label, h("span", { class: "muted", text: " · reasoning" })),
            h("p", { text: reasoning })
          )
        )
      } else {
        // a label only heads the step's tool cards (see toolStart): none before the answer
        slot.replaceChildren()
      }
    }
  }

  endPhase() {
    if (this.phase?.classList.contains("active")) {
      this.phase.classList.remove("active")
      this.phase.textContent = `Tools selected among ${formatNumber(this.phaseTotal ?? 0)}`
    }
  }

  /** `phase {phase:"retrying", attempt, reason, delay_ms}`: the LLM call is retried. @param {any} d */
  retrying(d) {
    const reason = REASONS[String(d.reason)] ?? String(d.reason ?? "error")
    this.retries++
    if (!this.retryLine) {
      this.retryLine = h("div", { class: "phase retry active" })
      // under the step's thinking indicator when it is a loop call, else above the answer
      const thinking = this.run.querySelector(".thinking.active")
      if (thinking) thinking.after(this.retryLine)
      else this.insert(this.retryLine)
    }
    this.retryLine.classList.add("active")
    this.retryLine.dataset.reason = reason
    this.retryLine.textContent = `The model is busy (${reason}): retry ${d.attempt ?? this.retries} in ${
      formatSeconds(Number(d.delay_ms ?? 0) / 1000)
    }…`
    this.announce(this.retryLine.textContent)
  }

  /** The retried call went on (or the run ended): the retry line settles. */
  endRetry() {
    const line = this.retryLine
    if (!line) return
    line.classList.remove("active")
    line.textContent = `Model call retried ${this.retries}× (${line.dataset.reason})`
    this.retryLine = null
    this.retries = 0
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
    const slot = /** @type {HTMLElement} */ (it.querySelector(".thinking"))
    if (slot.classList.contains("active")) {
      // the model is done thinking once its tools run (even if no `thinking done` came)
      slot.classList.replace("active", "done")
      slot.replaceChildren()
    }
    if (slot.childElementCount === 0) slot.append(h("span", { class: "step-label", text: `Step ${d.iteration}` }))
    const card = runningCard(d, key)
    this.cards.set(key, card)
    this.startedAt.set(key, performance.now())
    const round = /** @type {HTMLElement} */ (it.querySelector(".round"))
    round.append(card)
    it.classList.toggle("parallel", it.querySelectorAll(".card").length > 1)
    this.announce(`Running ${d.tool_name}…`)
  }

  /** @param {any} d */
  toolDone(d) {
    const key = this.cardKey(d)
    if (!this.cards.has(key)) this.toolStart(d)
    const card = /** @type {HTMLElement} */ (this.cards.get(key))
    if (!card.classList.contains("running")) return
    this.startedAt.delete(key)
    endProgress(card)
    finishCard(card, d)
    // the event being applied is this call's `iteration done`: forking there keeps the call's outcome
    const onFork = this.onFork
    if (onFork && this.lastId > 0 && !this.dag) {
      forkButton(card, this.lastId, (at) => {
        if (this.forkable) onFork({ ...this.forkable, at, query: this.query })
      })
    }
  }

  /** A running call reports progress (ephemeral: no id). @param {any} d */
  toolProgress(d) {
    const card = this.cards.get(this.cardKey(d))
    if (card) showProgress(card, d)
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
    const bubble = h(
      "div",
      { class: "msg inject queued", "data-inject-id": id },
      h(
        "div",
        { class: "bubble" },
        h("span", { class: "badge", text: "Follow-up · queued" }),
        h("span", { class: "inject-text", text: content }),
        recall
      )
    )
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
    const bubble = h(
      "div",
      { class: "msg inject taken", "data-inject-id": id },
      h(
        "div",
        { class: "bubble" },
        h("span", { class: "badge", text: "Interrupt · taken in" }),
        h("span", { class: "inject-text", text: String(d.content ?? "") })
      )
    )
    this.injects.set(id, bubble)
    this.insert(bubble)
  }

  showAnswer() {
    this.answer.hidden = false
    this.setStatus("")
    // the model is writing the answer (synthesis "auto" streams it from the loop call): no thinking spinner beside it
    for (const slot of this.run.querySelectorAll(".thinking.active")) {
      slot.classList.remove("active")
      slot.classList.add("done")
      slot.replaceChildren()
    }
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

  /** The answer shown so far is void (the model went on working, or the stream restarted after a crash). */
  resetAnswer() {
    this.answerText = ""
    this.answer.replaceChildren()
    this.answer.hidden = true
  }

  renderAnswer() {
    this.renderScheduled = false
    this.answer.innerHTML = markdown().render(this.answerText)
    this.answer.classList.toggle("streaming", !this.finished)
    this.onChange()
  }

  /** @param {any} d the `done` event's data */
  /** The typed-answer panel (output.js), made when the run's answer turns out typed. */
  typedAnswer() {
    if (!this.output) {
      this.output = new OutputPanel()
      this.run.classList.add("typed")
      this.answer.after(this.output.root)
    }
    return this.output
  }

  done(d) {
    if (this.finished) return
    if (d.output !== undefined) this.typedAnswer().done(d.output)
    if (!this.answerText && typeof d.answer === "string" && d.answer) this.answerText = d.answer
    const kind = d.cancelled === true ? "stopped" : this.failure !== null ? "failed" : "done"
    this.end(kind)
    const u = d.usage ?? {}
    const parts = [
      `${formatNumber(d.iterations ?? 0)} iteration${d.iterations === 1 ? "" : "s"}`,
      `${formatNumber(u.total_tokens ?? 0)} tokens`,
      ...(costText(u) ? [costText(u)] : []),
      formatSeconds(Number(d.elapsed ?? 0))
    ]
    // the share of the input read from the provider's prompt cache
    const cached = Number(u.cached_input_tokens ?? 0)
    if (cached > 0 && Number(u.prompt_tokens ?? 0) > 0) {
      parts.splice(2, 0, `${Math.round((100 * cached) / Number(u.prompt_tokens))}% cached`)
    }
    const first = this.footer.childElementCount === 0
    this.footer.append(
      ...parts.flatMap((p, i) => (i === 0 && first
        ? [h("span", { text: p })]
        : [h("span", { class: "sep", "aria-hidden": "true", text: "·" }), h("span", { text: p })])
      )
    )
    // the run as a cassette (docs/replay.md): this is the conversation's latest run while the page shows it
    if (typeof d.conversation_id === "string" && d.conversation_id !== "") {
      this.footer.append(
        h("span", { class: "sep", "aria-hidden": "true", text: "·" }),
        h("a", {
          class: "cassette",
          href: `/api/conversations/${encodeURIComponent(d.conversation_id)}/runs/latest/cassette`,
          download: "",
          title: "Download this run as a cassette (replay it in a test)",
          text: "cassette"
        })
      )
    }
    this.footer.hidden = false
    const cache = u.cached_input_tokens !== undefined || u.cache_write_input_tokens !== undefined
      ? ` (cache read ${formatNumber(u.cached_input_tokens ?? 0)}, written ${
        formatNumber(u.cache_write_input_tokens ?? 0)
      })`
      : ""
    this.footer.title = `prompt ${formatNumber(u.prompt_tokens ?? 0)}${cache} · completion ${
      formatNumber(u.completion_tokens ?? 0)
    } · ${formatNumber(u.llm_calls ?? 0)} LLM calls`
    const pending = Array.isArray(d.pending_injections) ? d.pending_injections : []
    for (const p of pending) {
      this.injectRecalled(String(p.id))
      this.insert(
        h(
          "div",
          { class: "msg inject pending" },
          h(
            "div",
            { class: "bubble" },
            h("span", { class: "badge", text: "Not taken in (run ended)" }),
            h("span", { class: "inject-text", text: String(p.content ?? "") })
          )
        )
      )
    }
    for (const q of this.run.querySelectorAll(".inject.queued")) q.querySelector("button")?.remove()
    // a finished run can be forked at its steps
    if (typeof d.run_id === "string" && typeof d.conversation_id === "string") {
      this.forkable = { conversationId: d.conversation_id, runId: d.run_id }
      for (const b of this.run.querySelectorAll("button.fork")) /** @type {HTMLElement} */ (b).hidden = false
    }
  }

  /**
   * The run is over, however it ended: every spinner and timer stops, cards still
   * running are marked cancelled, and a run that did not finish normally gets a
   * marker saying so (with what it was doing) at the head of its footer.
   *
   * @param {"done" | "stopped" | "failed" | "lost"} kind
   * @param {string} [note] shown beside the marker (e.g. why the run was lost)
   */
  end(kind, note) {
    if (this.finished) return
    this.finished = true
    clearInterval(this.timer)
    this.dag?.finish()
    this.agents.end(kind)
    const thinking = /** @type {HTMLElement | null} */ (this.run.querySelector(".thinking.active"))
    const running = [...this.startedAt.keys()].map((key) => this.cards.get(key)?.dataset.tool ?? "a tool")
    const streaming = this.answerText !== "" && kind !== "done"
    for (const key of this.startedAt.keys()) {
      const card = this.cards.get(key)
      card?.classList.replace("running", "cancelled")
      const el = card?.querySelector(".elapsed")
      if (el) el.textContent = "cancelled"
    }
    this.startedAt.clear()
    // calls still waiting for a person: the run ended without their answer
    for (const key of this.approvals.values()) {
      const card = this.cards.get(key)
      if (!card?.classList.contains("awaiting")) continue
      closeApproval(card)
      card.classList.replace("running", "cancelled")
      const el = card.querySelector(".elapsed")
      if (el) el.textContent = "cancelled"
    }
    if (thinking) {
      thinking.classList.remove("active")
      thinking.classList.add("done")
      thinking.replaceChildren()
    }
    this.endPhase()
    this.endRetry()
    if (this.answerText) {
      this.showAnswer()
      this.renderAnswer()
    }
    this.answer.classList.remove("streaming")
    this.answer.classList.toggle("cut", streaming)
    this.setStatus("")
    // the screen-reader status does not keep saying "Thinking (step 2)…" after the run
    if (kind === "done") this.live.textContent = ""
    if (kind !== "done") {
      const detail = thinking
        ? "while thinking"
        : running.length > 0
        ? `while running ${running.join(", ")}`
        : streaming
        ? "during the answer"
        : ""
      this.footer.append(endMarker(kind, detail))
      if (note) {
        this.footer.append(h("span", { class: "sep", "aria-hidden": "true", text: "·" }), h("span", { text: note }))
      }
      this.announce(this.footer.textContent ?? "")
    }
    this.footer.hidden = this.footer.childElementCount === 0
    this.run.setAttribute("aria-busy", "false")
  }

  /** @param {string} text a visible note under the run (reconnecting…) */
  note(text) {
    this.setStatus(text)
  }

  dispose() {
    clearInterval(this.timer)
    this.agents.dispose()
  }
}
