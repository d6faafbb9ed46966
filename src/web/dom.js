// @ts-check
/**
 * Tiny DOM helpers and the safe markdown renderer shared by the page modules.
 *
 * @since 0.1.0
 */

/**
 * Create an element. Children that are strings become text nodes (never HTML).
 *
 * @param {string} tag
 * @param {Record<string, string | boolean | number | undefined | null>} [attrs]
 * @param {Array<Node | string | null | undefined | false>} children
 * @returns {HTMLElement}
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue
    if (k === "class") el.className = String(v)
    else if (k === "text") el.textContent = String(v)
    else el.setAttribute(k, v === true ? "" : String(v))
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue
    el.append(typeof c === "string" ? document.createTextNode(c) : c)
  }
  return el
}

/** @type {any} */
let md = null

/**
 * The markdown-it instance: raw HTML disabled (model output cannot inject markup),
 * links checked by markdown-it's validator (no `javascript:`), opened in a new tab
 * with `rel="noopener noreferrer"`.
 *
 * @returns {{ render: (src: string) => string }}
 */
export function markdown() {
  if (md) return md
  const factory = /** @type {any} */ (globalThis).markdownit
  if (typeof factory !== "function") {
    // markdown-it failed to load: fall back to escaped text, still safe
    md = { render: (/** @type {string} */ s) => `<p>${escapeHtml(s).replace(/\n/g, "<br>")}</p>` }
    return md
  }
  md = factory({ html: false, linkify: true, breaks: false, typographer: false })
  const defaultOpen = md.renderer.rules.link_open ??
    ((
      /** @type {any} */ tokens,
      /** @type {number} */ idx,
      /** @type {any} */ options,
      /** @type {any} */ _env,
      /** @type {any} */ self
    ) => self.renderToken(tokens, idx, options))
  md.renderer.rules.link_open = (
    /** @type {any[]} */ tokens,
    /** @type {number} */ idx,
    /** @type {any} */ options,
    /** @type {any} */ env,
    /** @type {any} */ self
  ) => {
    tokens[idx].attrSet("target", "_blank")
    tokens[idx].attrSet("rel", "noopener noreferrer")
    return defaultOpen(tokens, idx, options, env, self)
  }
  return md
}

/** @param {string} s */
export function escapeHtml(s) {
  return s.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" })[c] ?? c
  )
}

/**
 * Pretty-print tool arguments: objects as indented JSON, JSON strings parsed first.
 *
 * @param {unknown} value
 * @returns {string}
 */
export function pretty(value) {
  if (value === undefined || value === null) return ""
  if (typeof value === "string") {
    try {
      return JSON.stringify(JSON.parse(value), null, 2)
    } catch {
      return value
    }
  }
  try {
    return JSON.stringify(value, null, 2)
  } catch {
    return String(value)
  }
}

/**
 * One-line preview of tool arguments for a collapsed card.
 *
 * @param {unknown} value
 */
export function preview(value) {
  const text = typeof value === "string" ? value : JSON.stringify(value ?? {})
  return text.length > 80 ? `${text.slice(0, 79)}…` : text
}

/** @param {number} seconds */
export function formatSeconds(seconds) {
  if (!Number.isFinite(seconds)) return ""
  return seconds < 10
    ? `${seconds.toFixed(2)} s`
    : seconds < 100
    ? `${seconds.toFixed(1)} s`
    : `${Math.round(seconds)} s`
}

/** @param {number} n */
export function formatNumber(n) {
  return Number.isFinite(n) ? n.toLocaleString("en-US") : "0"
}
