// @ts-check
/**
 * Budgets and guardrails on the page: a run that ran out of budget
 * (`phase budget_exhausted`), a run of policy `ask` waiting for more budget
 * (`budget {status: "exhausted"}`: an Extend panel with an amount and a Stop
 * button, sent to `POST /api/react/budget`; `extended` / `stopped` fill in the
 * outcome), and a tripped guardrail (`guardrail {status: "tripped"}`), shown
 * plainly as an alert.
 *
 * @since 0.1.0
 */
import { h } from "./dom.js"

/**
 * @typedef {{ decision: "extend", add_usd: number } | { decision: "stop" }} BudgetDecision
 * @typedef {(decision: BudgetDecision) => Promise<{ ok: boolean, message?: string }>} DecideBudget
 */

/** @param {number | undefined} usd */
const money = (
  usd
) => (typeof usd === "number" ? `$${usd.toFixed(usd < 0.01 ? 6 : 4).replace(/0+$/, "").replace(/\.$/, "")}` : "")

/** @param {any} d a `budget_exhausted` phase's data */
export function spentText(d) {
  const parts = []
  if (typeof d.spent_usd === "number") {
    parts.push(typeof d.limit_usd === "number" ? `${money(d.spent_usd)} of ${money(d.limit_usd)}` : money(d.spent_usd))
  }
  if (typeof d.limit_tokens === "number") parts.push(`${d.spent_tokens} of ${d.limit_tokens} tokens`)
  return parts.join(", ")
}

/** The line for `phase {phase: "budget_exhausted"}`. @param {any} d */
export function exhaustedLine(d) {
  return h("div", {
    class: "phase budget",
    role: "status",
    text: `Budget exhausted (${spentText(d)}): answering from what the run has`
  })
}

/** The alert for `guardrail {status: "tripped"}`. @param {any} d */
export function guardrailAlert(d) {
  const what = d.stage === "input" ? "the request" : "the answer"
  return h(
    "div",
    { class: "run-error guardrail", role: "alert" },
    h("strong", { text: `Blocked by the guardrail “${d.name}” on ${what}: ` }),
    String(d.reason ?? "")
  )
}

/**
 * The panel for `budget {status: "exhausted"}`: Extend by an amount, or Stop.
 *
 * @param {any} d @param {DecideBudget | undefined} decide absent: the page cannot answer (a replayed run)
 */
export function budgetPanel(d, decide) {
  const amount = /** @type {HTMLInputElement} */ (h("input", {
    type: "number",
    class: "budget-amount",
    min: "0.01",
    step: "0.01",
    value: String(Math.max(0.01, Number(d.limit_usd ?? 0.01))),
    "aria-label": "USD to add"
  }))
  const extend = /** @type {HTMLButtonElement} */ (h("button", {
    type: "button",
    class: "btn small primary extend",
    text: "Extend"
  }))
  const stop = /** @type {HTMLButtonElement} */ (h("button", {
    type: "button",
    class: "btn small deny stop-budget",
    text: "Stop"
  }))
  const message = h("div", { class: "approval-message", role: "status", "aria-live": "polite" })
  const panel = h(
    "div",
    { class: "approval budget-wait", role: "group", "aria-label": "The run's budget is spent" },
    h(
      "div",
      { class: "approval-question" },
      h("strong", { text: "The run's budget is spent" }),
      ` (${money(d.spent_usd)} of ${money(d.limit_usd)}). Add more and go on?`
    ),
    h("div", { class: "approval-controls" }, h("span", { text: "$" }), amount, extend, stop),
    message
  )
  if (!decide) {
    extend.disabled = true
    stop.disabled = true
    return panel
  }
  /** @param {BudgetDecision} decision */
  const send = async (decision) => {
    extend.disabled = true
    stop.disabled = true
    amount.disabled = true
    message.textContent = decision.decision === "extend" ? "Extending…" : "Stopping…"
    let result
    try {
      result = await decide(decision)
    } catch {
      result = { ok: false, message: "The server could not be reached" }
    }
    if (result.ok) return
    message.textContent = result.message ?? "The decision was refused"
    panel.classList.add("refused")
  }
  extend.addEventListener("click", () => {
    const usd = Number(amount.value)
    if (!(usd > 0)) {
      message.textContent = "Enter an amount above 0"
      return
    }
    void send({ decision: "extend", add_usd: usd })
  })
  stop.addEventListener("click", () => void send({ decision: "stop" }))
  return panel
}

/** The outcome of a budget wait (`extended` / `stopped`). @param {any} d */
export function budgetOutcome(d) {
  return h("div", {
    class: `approval-outcome ${d.status === "extended" ? "approved" : "denied"}`,
    text: d.status === "extended" ? `Budget extended to ${money(d.limit_usd)}.` : `Stopped at ${money(d.spent_usd)}.`
  })
}

/** The cost in the run's footer. @param {any} usage */
export function costText(usage) {
  return typeof usage?.cost_usd === "number" ? money(usage.cost_usd) : ""
}
