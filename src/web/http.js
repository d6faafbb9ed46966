// @ts-check
/**
 * The page's HTTP helpers: `/api` requests with the bearer token (kept in
 * `localStorage`; a 401 shows the token prompt), JSON posts, error texts.
 *
 * @since 0.1.0
 */

const TOKEN_KEY = "react.token"
let token = localStorage.getItem(TOKEN_KEY) ?? ""

/** Remember the access token (sent as `Authorization: Bearer …`). @param {string} value */
export function setToken(value) {
  token = value
  localStorage.setItem(TOKEN_KEY, value)
}

/** @param {string} path @param {RequestInit} [init] */
export async function api(path, init = {}) {
  const headers = new Headers(init.headers)
  if (token) headers.set("authorization", `Bearer ${token}`)
  if (init.body && !headers.has("content-type")) headers.set("content-type", "application/json")
  const res = await fetch(path, { ...init, headers })
  if (res.status === 401) /** @type {HTMLElement} */ (document.getElementById("token-form")).hidden = false
  return res
}

/** @param {string} path @param {unknown} body */
export const postJson = (path, body) => api(path, { method: "POST", body: JSON.stringify(body) })

/** The message of an error response. @param {Response} res */
export async function errorText(res) {
  try {
    const body = await res.json()
    return String(body?.message ?? body?.error ?? res.statusText)
  } catch {
    return `${res.status} ${res.statusText}`
  }
}
