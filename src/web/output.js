// @ts-check
/**
 * Typed answers on the page (`output_schema`): the value as a collapsible JSON
 * tree beside the answer's text — live from the `answer {type:"output_partial",
 * value}` events while the answer is written, then the decoded value of `done`
 * (`done.output`) — and the composer's "Answer schema" box, whose JSON Schema
 * goes with the next message as `output_schema`.
 *
 * @since 0.1.0
 */
import { h } from "./dom.js"

/** Objects and arrays up to this depth start open. */
const OPEN_DEPTH = 2

/**
 * A collapsible tree of a JSON value: objects and arrays as `<details>` (open
 * near the top), scalars as typed spans. Text only: nothing is parsed as HTML.
 *
 * @param {unknown} value
 * @param {number} [depth]
 * @returns {HTMLElement}
 */
export function jsonTree(value, depth = 0) {
  if (value === null || typeof value !== "object") {
    const type = value === null ? "null" : typeof value
    return h("span", { class: `json-${type}`, text: type === "string" ? JSON.stringify(value) : String(value) })
  }
  const entries = Array.isArray(value)
    ? value.map((v, i) => /** @type {[string, unknown]} */ ([String(i), v]))
    : Object.entries(value)
  const summary = Array.isArray(value)
    ? `[ ${entries.length} item${entries.length === 1 ? "" : "s"} ]`
    : `{ ${entries.length} key${entries.length === 1 ? "" : "s"} }`
  const list = h("ul", { class: "json-entries" })
  for (const [key, child] of entries) {
    list.append(
      h(
        "li",
        {},
        h("span", { class: Array.isArray(value) ? "json-index" : "json-key", text: key }),
        h("span", { class: "json-colon", text: ": " }),
        jsonTree(child, depth + 1)
      )
    )
  }
  return h("details", { class: "json-node", open: depth < OPEN_DEPTH }, h("summary", { text: summary }), list)
}

/**
 * The typed-answer panel of a run: `partial(value)` while the answer is written,
 * `done(value)` with the decoded value.
 */
export class OutputPanel {
  constructor() {
    this.root = h(
      "section",
      { class: "output-panel", "aria-label": "Typed answer", hidden: true },
      h(
        "div",
        { class: "output-head" },
        h("span", { class: "output-title", text: "Typed answer" }),
        h("span", { class: "output-state muted" })
      )
    )
    this.tree = h("div", { class: "output-tree" })
    this.root.append(this.tree)
  }

  /** @param {unknown} value the value parsed so far */
  partial(value) {
    this.show(value, "streaming…")
    this.root.classList.add("partial")
  }

  /** @param {unknown} value the decoded value */
  done(value) {
    this.show(value, "")
    this.root.classList.remove("partial")
  }

  /** @param {unknown} value @param {string} state */
  show(value, state) {
    this.root.hidden = false
    this.tree.replaceChildren(jsonTree(value))
    const label = /** @type {HTMLElement} */ (this.root.querySelector(".output-state"))
    label.textContent = state
  }
}

/**
 * The JSON Schema in the composer's "Answer schema" box, for the next message's
 * `output_schema`: `undefined` when the box is empty; a thrown `Error` naming
 * the problem when it is not a JSON object.
 *
 * @returns {Record<string, unknown> | undefined}
 */
export function schemaFromComposer() {
  const box = /** @type {HTMLTextAreaElement | null} */ (document.getElementById("output-schema"))
  const text = box?.value.trim() ?? ""
  if (text === "") return undefined
  let parsed
  try {
    parsed = JSON.parse(text)
  } catch (e) {
    throw new Error(`The answer schema is not JSON: ${/** @type {Error} */ (e).message}`)
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new Error("The answer schema must be a JSON object (a JSON Schema)")
  }
  return parsed
}
