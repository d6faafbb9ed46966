// @ts-check
/**
 * Tool cards: one `<details>` per tool call, created when the call starts and
 * filled in when it ends (arguments, observation or error, a sandboxed preview
 * of html/markdown results, artifacts).
 *
 * @since 0.1.0
 */
import { formatSeconds, h, markdown, pretty, preview } from "./dom.js"

/**
 * A running card for an `iteration start` event.
 *
 * @param {any} d the event's data
 * @param {string} key the card's key (tool call id, or iteration + tool name)
 * @returns {HTMLElement}
 */
export function runningCard(d, key) {
  return h(
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
    h(
      "div",
      { class: "card-body" },
      h("div", { class: "label", text: "Arguments" }),
      h("pre", { class: "args", text: pretty(d.tool_args) })
    )
  )
}

/**
 * Fills a running card in with the `iteration done` event.
 *
 * @param {HTMLElement} card
 * @param {any} d the event's data
 */
export function finishCard(card, d) {
  card.classList.remove("running")
  const failed = d.error !== null && d.error !== undefined && d.error !== ""
  card.classList.add(failed ? "failed" : "ok")
  const elapsed = /** @type {HTMLElement} */ (card.querySelector(".elapsed"))
  elapsed.textContent = `${failed ? "failed · " : ""}${formatSeconds(Number(d.iter_elapsed ?? 0))}`
  const body = /** @type {HTMLElement} */ (card.querySelector(".card-body"))
  if (failed) {
    body.append(h("div", { class: "label", text: "Error" }), h("pre", { class: "error", text: String(d.error) }))
  }
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
      list.append(
        h("li", {}, url ? h("a", { href: url, target: "_blank", rel: "noopener noreferrer", text: name }) : name)
      )
    }
    body.append(h("div", { class: "label", text: "Artifacts" }), list)
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
  const body = kind === "html"
    ? content
    : `<!doctype html><meta charset="utf-8"><style>body{font:14px/1.5 system-ui,sans-serif;margin:12px;color:#1f2328}pre{overflow:auto}</style>${
      markdown().render(content)
    }`
  const frame = h("iframe", {
    class: "preview",
    sandbox: "",
    title: `Preview of ${title}`,
    loading: "lazy",
    referrerpolicy: "no-referrer"
  })
  const iframe = /** @type {HTMLIFrameElement} */ (frame)
  iframe.srcdoc = body
  return frame
}

/**
 * The "fork from here" button of a finished tool card (hidden until the run is
 * over: only a finished run can be forked). `at` is the id of the card's
 * `iteration done` event (0 on a stored turn's card: it forks at its call).
 *
 * @param {HTMLElement} card
 * @param {number} at
 * @param {(at: number) => void} onFork
 */
export function forkButton(card, at, onFork) {
  const button = h("button", {
    type: "button",
    class: "link fork",
    hidden: true,
    "data-at": at > 0 ? at : undefined,
    title: "A new conversation that goes on from this step: the steps before it are not run again",
    text: "Fork from here"
  })
  button.addEventListener("click", (e) => {
    // a click in the summary would also open or close the card
    e.preventDefault()
    e.stopPropagation()
    onFork(at)
  })
  card.querySelector("summary")?.append(button)
}

/**
 * Where a forked conversation comes from (`forked_from`), shown above its turns.
 *
 * @param {{ conversation_id: string, title?: string, step?: string, at: number }} origin
 */
export function forkOrigin(origin) {
  return h(
    "div",
    { class: "fork-origin", role: "note" },
    "Forked from ",
    h("a", {
      href: `#c=${encodeURIComponent(origin.conversation_id)}`,
      text: origin.title ? `“${origin.title}”` : origin.conversation_id
    }),
    ` at ${origin.step ?? `event ${origin.at}`}`
  )
}

/**
 * The marker of a run that did not end normally, shown first in its footer.
 *
 * @param {"stopped" | "failed" | "lost"} kind
 * @param {string} [detail] e.g. "while thinking"
 */
export function endMarker(kind, detail) {
  const label = kind === "stopped" ? "Stopped" : kind === "failed" ? "Failed" : "Not finished"
  return h("span", { class: `end-marker ${kind}`, text: detail ? `${label} ${detail}` : label })
}
