// @ts-check
/**
 * Tool progress on a running card (`step {type:"iteration", status:"progress",
 * message, progress?}`, ephemeral): a bar in the card's summary — the fraction
 * when the tool gives one, an indeterminate bar otherwise — and the last
 * message. It goes when the call ends.
 *
 * @since 0.1.0
 */
import { h } from "./dom.js"

/**
 * Shows a progress report on its call's card (a card that is no longer running ignores it).
 *
 * @param {HTMLElement} card
 * @param {any} d the event's data
 */
export function showProgress(card, d) {
  if (!card.classList.contains("running")) return
  let box = /** @type {HTMLElement | null} */ (card.querySelector(".progress"))
  if (!box) {
    box = h(
      "span",
      { class: "progress" },
      h("progress", { max: "1", "aria-label": `${d.tool_name ?? "tool"} progress` }),
      h("span", { class: "progress-message" })
    )
    card.querySelector(".elapsed")?.before(box)
  }
  const bar = /** @type {HTMLProgressElement} */ (box.querySelector("progress"))
  const fraction = typeof d.progress === "number" && Number.isFinite(d.progress)
    ? Math.min(1, Math.max(0, d.progress))
    : undefined
  if (fraction === undefined) bar.removeAttribute("value")
  else bar.value = fraction
  const message = /** @type {HTMLElement} */ (box.querySelector(".progress-message"))
  message.textContent = typeof d.message === "string" ? d.message : ""
  message.title = message.textContent
}

/**
 * The call ended: its progress goes.
 *
 * @param {HTMLElement} card
 */
export function endProgress(card) {
  card.querySelector(".progress")?.remove()
}

/**
 * True for the run's ephemeral events (tool progress, the partial typed answer): live only, sent without an `id:`.
 *
 * @param {string} event the SSE channel
 * @param {any} d the event's data
 */
export function isEphemeral(event, d) {
  return (event === "step" && d?.type === "iteration" && d?.status === "progress") ||
    (event === "answer" && d?.type === "output_partial")
}
