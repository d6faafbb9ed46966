// @ts-check
/**
 * Tool approval on the page: a tool card whose call waits for the
 * user gets an Approve / Deny panel (with an optional reason), reachable with
 * the keyboard; the decision is sent to `POST /api/react/approve` bound to the
 * call (its tool call id and arguments hash), and the `approval` event that
 * follows fills in the outcome. A refusal from the server (already decided,
 * gone) is shown on the card.
 *
 * @since 0.1.0
 */
import { h } from "./dom.js"

/**
 * @typedef {{ approval_id: string, decision: "approve" | "deny", reason?: string, tool_call_id?: string, args_hash?: string }} Decision
 * @typedef {(decision: Decision) => Promise<{ ok: boolean, message?: string }>} Decide
 */

/**
 * Puts the Approve / Deny panel on a card for an `approval {status: "requested"}` event.
 *
 * @param {HTMLElement} card the tool card
 * @param {any} d the event's data
 * @param {Decide | undefined} decide sends the decision (absent: the page cannot answer, e.g. a replayed past run)
 */
export function requestApproval(card, d, decide) {
  if (card.querySelector(".approval")) return
  card.classList.add("awaiting")
  card.setAttribute("open", "")
  const elapsed = card.querySelector(".elapsed")
  if (elapsed) elapsed.textContent = "waiting for approval"
  const id = `reason-${String(d.approval_id).replace(/[^A-Za-z0-9_-]/g, "")}`
  const reason = /** @type {HTMLInputElement} */ (h("input", {
    id,
    type: "text",
    class: "approval-reason",
    maxlength: 2000,
    placeholder: "Reason (optional)",
    title: "Sent with a denial",
    autocomplete: "off"
  }))
  const approve = /** @type {HTMLButtonElement} */ (h("button", {
    type: "button",
    class: "btn small primary approve",
    text: "Approve"
  }))
  const deny = /** @type {HTMLButtonElement} */ (h("button", { type: "button", class: "btn small deny", text: "Deny" }))
  const message = h("div", { class: "approval-message", role: "status", "aria-live": "polite" })
  const panel = h(
    "div",
    {
      class: "approval",
      role: "group",
      "aria-label": `Approve the call to ${d.tool_name}?`,
      "data-approval-id": d.approval_id
    },
    h(
      "div",
      { class: "approval-question" },
      h("strong", { text: "Waiting for your approval." }),
      ` Run ${d.tool_name} with these arguments?`
    ),
    h(
      "div",
      { class: "approval-controls" },
      h("label", { for: id, class: "sr-only", text: "Reason" }),
      reason,
      approve,
      deny
    ),
    message
  )
  const body = card.querySelector(".card-body") ?? card
  body.append(panel)
  if (!decide) {
    approve.disabled = true
    deny.disabled = true
    return
  }
  /** @param {"approve" | "deny"} decision */
  const send = async (decision) => {
    approve.disabled = true
    deny.disabled = true
    reason.disabled = true
    message.textContent = decision === "approve" ? "Approving…" : "Denying…"
    /** @type {Decision} */
    const sent = { approval_id: String(d.approval_id), decision }
    if (typeof d.tool_call_id === "string") sent.tool_call_id = d.tool_call_id
    if (typeof d.args_hash === "string") sent.args_hash = d.args_hash
    const text = reason.value.trim()
    if (text) sent.reason = text
    let result
    try {
      result = await decide(sent)
    } catch {
      result = { ok: false, message: "The server could not be reached" }
    }
    if (result.ok) return
    message.textContent = result.message ?? "The decision was refused"
    panel.classList.add("refused")
  }
  approve.addEventListener("click", () => void send("approve"))
  deny.addEventListener("click", () => void send("deny"))
  // Enter in the reason field denies with it (the reason only goes with a denial)
  reason.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.isComposing) {
      e.preventDefault()
      void send("deny")
    }
  })
}

/**
 * Fills in the outcome for an `approval {status: "approved" | "denied"}` event.
 *
 * @param {HTMLElement} card
 * @param {any} d
 */
export function decideApproval(card, d) {
  card.classList.remove("awaiting")
  const panel = card.querySelector(".approval")
  const text = d.status === "approved" ? "Approved." : `Denied${d.reason ? `: ${d.reason}` : "."}`
  const outcome = h("div", { class: `approval-outcome ${d.status}`, text })
  if (panel) panel.replaceWith(outcome)
  else (card.querySelector(".card-body") ?? card).append(outcome)
  if (d.status === "approved") {
    const elapsed = card.querySelector(".elapsed")
    if (elapsed) elapsed.textContent = "running…"
  }
}

/**
 * The run ended with the card still waiting (cancelled, or the page replays a
 * run that is over): no more buttons.
 *
 * @param {HTMLElement} card
 */
export function closeApproval(card) {
  card.classList.remove("awaiting")
  const panel = card.querySelector(".approval")
  if (panel) panel.replaceWith(h("div", { class: "approval-outcome closed", text: "Not decided: the run ended." }))
}
