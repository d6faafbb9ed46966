// @ts-check
/**
 * DAG mode on the page: each plan is drawn as a graph of step cards —
 * one row per dependency level, dependencies as edges — that fill in live
 * (waiting, running, done, failed, skipped). A card opens to show its own tool
 * cards (the step's ReAct events, rendered by a nested `RunView`) and its result.
 * A re-plan starts a new round below the previous one, with the reason.
 *
 * The run view hands over every event `isDagEvent` accepts; everything else
 * (the answer, `done`, a ReAct fallback's own events) stays with it.
 *
 * @since 0.1.0
 */
import { formatSeconds, h, markdown } from "./dom.js"

const PHASES = new Set(["planning", "analyzing", "replanning", "react_fallback"])
const SVG = "http://www.w3.org/2000/svg"

/**
 * True for the events DAG mode renders: the `dag` channel, its phases, and the
 * events of a step (they carry `step_id`).
 *
 * @param {string} event
 * @param {any} data
 */
export function isDagEvent(event, data) {
  if (event === "dag") return true
  if (event === "phase" && PHASES.has(data?.phase)) return true
  return typeof data?.step_id === "string" &&
    (event === "step" || event === "compact" || event === "phase" || event === "approval")
}

/**
 * @typedef {{ apply: (ev: { event: string, data: any }) => boolean, run: HTMLElement, setStatus: (text: string) => void, dispose: () => void }} StepView
 * @typedef {{ id: string, task: string, dependencies: string[], tool_hint?: string, model_hint?: string }} PlanStep
 * @typedef {{ step: PlanStep, card: HTMLElement, state: HTMLElement, body: HTMLElement, view: StepView | null, startedAt: number | null, status: string }} StepCard
 * @typedef {{ round: number, root: HTMLElement, graph: HTMLElement, svg: SVGSVGElement, phase: HTMLElement, steps: Map<string, StepCard> }} Round
 */

const STATE_TEXT = /** @type {Record<string, string>} */ ({
  pending: "waiting",
  running: "running…",
  done: "done",
  failed: "failed",
  skipped: "skipped",
  cancelled: "cancelled"
})

export class DagView {
  /**
   * @param {() => StepView} makeStepView a fresh view for one step's own events
   * @param {() => void} [onChange]
   */
  constructor(makeStepView, onChange = () => {}) {
    this.makeStepView = makeStepView
    this.onChange = onChange
    /** @type {Round[]} */
    this.rounds = []
    /** @type {string} */
    this.pendingReason = ""
    this.root = h("section", { class: "dag", "aria-label": "Plan" })
    this.phase = h("div", { class: "phase dag-phase", hidden: true })
    this.root.append(this.phase)
    this.timer = setInterval(() => this.tick(), 200)
    this.resize = typeof ResizeObserver === "function" ? new ResizeObserver(() => this.drawEdges()) : null
  }

  /**
   * Takes one event of the run; returns false for the events it leaves to the
   * run view (they still tell it when the answer starts).
   *
   * @param {string} event @param {any} d
   */
  apply(event, d) {
    if (!isDagEvent(event, d)) {
      if (event === "answer" || (event === "step" && d?.type === "answer")) this.phase.classList.remove("active")
      if (event === "answer" && !this.phase.classList.contains("fallback")) this.phase.hidden = true
      return false
    }
    if (event === "dag" && d.type === "plan") {
      this.plan(Number(d.round ?? this.rounds.length + 1), Array.isArray(d.steps) ? d.steps : [])
    } else if (event === "dag" && d.type === "step") this.stepStatus(d)
    else if (event === "phase" && PHASES.has(d.phase)) this.setPhase(d)
    else this.stepEvent(event, d)
    this.onChange()
    return true
  }

  /** @param {any} d */
  setPhase(d) {
    const text = d.phase === "planning"
      ? "Planning…"
      : d.phase === "analyzing"
      ? "Checking the results…"
      : d.phase === "replanning"
      ? `Re-planning${d.reasoning ? `: ${d.reasoning}` : "…"}`
      : `No usable plan${d.reasoning ? ` (${d.reasoning})` : ""} — continuing step by step.`
    if (d.phase === "replanning") this.pendingReason = String(d.reasoning ?? "")
    this.phase.textContent = text
    this.phase.hidden = false
    this.phase.classList.toggle("active", d.phase !== "react_fallback")
    this.phase.classList.toggle("fallback", d.phase === "react_fallback")
  }

  /** @param {number} round @param {PlanStep[]} steps */
  plan(round, steps) {
    if (this.rounds.some((r) => r.round === round)) return
    for (const r of this.rounds) r.root.removeAttribute("open")
    const reason = this.pendingReason
    this.pendingReason = ""
    this.phase.hidden = true
    const svg = /** @type {SVGSVGElement} */ (document.createElementNS(SVG, "svg"))
    svg.setAttribute("class", "dag-edges")
    svg.setAttribute("aria-hidden", "true")
    const graph = h("div", { class: "dag-graph" })
    graph.append(svg)
    const summary = h(
      "summary",
      { class: "dag-round-head" },
      h("span", { class: "badge", text: `Round ${round}` }),
      h("span", { class: "dag-count", text: `${steps.length} step${steps.length === 1 ? "" : "s"}` }),
      reason ? h("span", { class: "dag-reason", text: `re-planned: ${reason}` }) : null
    )
    const root = h("details", { class: "dag-round", "data-round": round, open: true }, summary, graph)
    /** @type {Round} */
    const r = { round, root, graph, svg, phase: this.phase, steps: new Map() }
    const levels = levelsOf(steps)
    const rows = /** @type {HTMLElement[]} */ ([])
    for (const step of steps) {
      const level = levels.get(step.id) ?? 0
      while (rows.length <= level) {
        const row = h("div", { class: "dag-level", "data-level": rows.length })
        rows.push(row)
        graph.append(row)
      }
      const card = this.card(step)
      r.steps.set(step.id, card)
      rows[level].append(card.card)
    }
    this.rounds.push(r)
    this.root.insertBefore(root, this.phase)
    root.addEventListener("toggle", () => this.drawEdges())
    this.resize?.observe(graph)
    requestAnimationFrame(() => this.drawEdges())
  }

  /** @param {PlanStep} step @returns {StepCard} */
  card(step) {
    const state = h("span", { class: "dag-state", text: STATE_TEXT.pending })
    const meta = [
      step.tool_hint ? `tool: ${step.tool_hint}` : "",
      step.model_hint ? `model: ${step.model_hint}` : "",
      step.dependencies?.length ? `after ${step.dependencies.join(", ")}` : ""
    ].filter(Boolean).join(" · ")
    const body = h("div", { class: "dag-body" })
    const card = h(
      "details",
      { class: "dag-step pending", "data-step-id": step.id },
      h(
        "summary",
        {},
        h("span", { class: "dot", "aria-hidden": "true" }),
        h("span", { class: "dag-id", text: step.id }),
        h("span", { class: "dag-task", text: step.task }),
        state,
        meta ? h("span", { class: "dag-meta", text: meta }) : null
      ),
      body
    )
    card.addEventListener("toggle", () => this.drawEdges())
    return { step, card, state, body, view: null, startedAt: null, status: "pending" }
  }

  /** The step card of the latest round that has it. @param {string} id */
  find(id) {
    for (let i = this.rounds.length - 1; i >= 0; i--) {
      const card = this.rounds[i].steps.get(id)
      if (card) return card
    }
    return undefined
  }

  /** @param {any} d */
  stepStatus(d) {
    const round = this.rounds.find((r) => r.round === Number(d.round)) ?? this.rounds[this.rounds.length - 1]
    const s = round?.steps.get(String(d.step_id))
    if (!s) return
    if (d.status === "start") {
      if (s.status !== "pending") return
      s.startedAt = performance.now()
      this.setStatus(s, "running")
      return
    }
    if (s.status !== "pending" && s.status !== "running") return
    const elapsed = s.startedAt === null ? null : (performance.now() - s.startedAt) / 1000
    this.setStatus(s, d.status)
    if (elapsed !== null && d.status === "done") s.state.textContent = `done · ${formatSeconds(elapsed)}`
    s.view?.setStatus("")
    s.view?.dispose()
    if (typeof d.result === "string" && d.result !== "") {
      const result = h("div", { class: "dag-result markdown" })
      result.innerHTML = markdown().render(d.result)
      s.body.append(h("div", { class: "label", text: "Result" }), result)
    }
    if (typeof d.error === "string" && d.error !== "") s.body.append(h("div", { class: "dag-error", text: d.error }))
    this.drawEdges()
  }

  /** @param {StepCard} s @param {string} status */
  setStatus(s, status) {
    s.card.classList.replace(s.status, status)
    s.status = status
    s.state.textContent = STATE_TEXT[status] ?? status
  }

  /** A step's own event (thinking, tool calls, compaction). @param {string} event @param {any} d */
  stepEvent(event, d) {
    const s = this.find(String(d.step_id))
    if (!s) return
    if (!s.view) {
      s.view = this.makeStepView()
      s.body.prepend(s.view.run)
    }
    const { step_id: _, ...own } = d
    // a call waiting for the user: open the step so its Approve / Deny buttons show
    if (event === "approval" && d.status === "requested") s.card.setAttribute("open", "")
    s.view.apply({ event, data: own })
    this.drawEdges()
  }

  tick() {
    const now = performance.now()
    for (const r of this.rounds) {
      for (const s of r.steps.values()) {
        if (s.status === "running" && s.startedAt !== null) {
          s.state.textContent = `running · ${((now - s.startedAt) / 1000).toFixed(1)} s`
        }
      }
    }
  }

  /** Draws each dependency as a curve from the bottom of its card to the top of the dependent's. */
  drawEdges() {
    for (const r of this.rounds) {
      if (!r.root.hasAttribute("open")) continue
      const box = r.graph.getBoundingClientRect()
      r.svg.setAttribute("width", String(box.width))
      r.svg.setAttribute("height", String(box.height))
      r.svg.setAttribute("viewBox", `0 0 ${box.width} ${box.height}`)
      const paths = []
      for (const s of r.steps.values()) {
        const to = s.card.getBoundingClientRect()
        for (const dep of s.step.dependencies ?? []) {
          const from = r.steps.get(dep)
          if (!from) continue
          const a = from.card.getBoundingClientRect()
          const x1 = a.left + a.width / 2 - box.left
          const y1 = a.bottom - box.top
          const x2 = to.left + to.width / 2 - box.left
          const y2 = to.top - box.top
          const bend = Math.max(16, (y2 - y1) / 2)
          const path = document.createElementNS(SVG, "path")
          path.setAttribute("d", `M ${x1} ${y1} C ${x1} ${y1 + bend}, ${x2} ${y2 - bend}, ${x2} ${y2}`)
          path.setAttribute("class", `dag-edge ${from.status}`)
          path.setAttribute("data-from", dep)
          path.setAttribute("data-to", s.step.id)
          paths.push(path)
        }
      }
      r.svg.replaceChildren(...paths)
    }
  }

  /** The run is over: steps still waiting or running are marked cancelled. */
  finish() {
    clearInterval(this.timer)
    this.resize?.disconnect()
    if (this.phase.classList.contains("active")) this.phase.hidden = true
    for (const r of this.rounds) {
      for (const s of r.steps.values()) {
        if (s.status === "pending" || s.status === "running") this.setStatus(s, "cancelled")
        s.view?.dispose()
      }
    }
    this.drawEdges()
  }
}

/**
 * Dependency level of each step: 0 for steps without (known) dependencies, else
 * one more than its deepest dependency. A cycle (which the server never sends)
 * cannot loop: a step on one is placed at level 0.
 *
 * @param {PlanStep[]} steps
 * @returns {Map<string, number>}
 */
export function levelsOf(steps) {
  const byId = new Map(steps.map((s) => [s.id, s]))
  /** @type {Map<string, number>} */
  const levels = new Map()
  /** @type {Set<string>} */
  const visiting = new Set()
  /** @param {string} id @returns {number} */
  const level = (id) => {
    const known = levels.get(id)
    if (known !== undefined) return known
    if (visiting.has(id)) return 0
    visiting.add(id)
    const deps = (byId.get(id)?.dependencies ?? []).filter((d) => byId.has(d))
    const value = deps.length === 0 ? 0 : 1 + Math.max(...deps.map(level))
    visiting.delete(id)
    levels.set(id, value)
    return value
  }
  for (const s of steps) level(s.id)
  return levels
}
