// Who the caller is: an API key (local) or an OIDC ID token (authorization code + PKCE), and the API's fetch.
// Credentials live only in sessionStorage (gone with the tab), never in a URL.

const KEY = "rag.apiKey";
const TOKEN = "rag.idToken";
const PENDING = "rag.oidc.pending";

export class AuthRequired extends Error {
  constructor(message) {
    super(message);
    this.name = "AuthRequired";
  }
}

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

let config = { auth: { mode: "api_key" }, upload: false };

export async function loadConfig() {
  const response = await fetch("/config.json", { cache: "no-store", credentials: "omit" });
  if (!response.ok) throw new Error(`the page's settings could not be loaded (${response.status})`);
  config = await response.json();
  return config;
}

export function currentConfig() {
  return config;
}

function credential() {
  if (config.auth.mode === "oidc") {
    const saved = JSON.parse(sessionStorage.getItem(TOKEN) || "null");
    return saved && saved.expires_at > Date.now() / 1000 + 30 ? saved.id_token : null;
  }
  return sessionStorage.getItem(KEY);
}

export function signedIn() {
  return Boolean(credential());
}

export function saveKey(key) {
  sessionStorage.setItem(KEY, key.trim());
}

export function signOut() {
  const saved = JSON.parse(sessionStorage.getItem(TOKEN) || "null");
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(TOKEN);
  sessionStorage.removeItem(PENDING);
  const auth = config.auth;
  if (auth.mode === "oidc" && auth.logout_endpoint && saved) {
    const url = new URL(auth.logout_endpoint);
    url.searchParams.set("client_id", auth.client_id);
    url.searchParams.set("logout_uri", `${location.origin}/`); // Cognito's name
    url.searchParams.set("post_logout_redirect_uri", `${location.origin}/`); // OIDC RP-initiated logout's name
    location.assign(url.toString());
  }
}

/** A call to the query API; a 401 forgets the credential and raises AuthRequired with the server's message. */
export async function api(path, { method = "GET", body = undefined, signal = undefined } = {}) {
  const token = credential();
  if (!token) throw new AuthRequired("");
  const headers = { Authorization: `Bearer ${token}`, Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
    credentials: "omit",
  });
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (response.status === 401) {
    sessionStorage.removeItem(KEY);
    sessionStorage.removeItem(TOKEN);
    throw new AuthRequired(data?.error?.message || data?.message || "the server did not accept the credentials");
  }
  if (!response.ok) {
    const message = data?.error?.message || data?.message || `the server answered ${response.status}`;
    throw new ApiError(response.status, data?.error?.code || "http_error", message);
  }
  return data;
}

// --- OIDC: authorization code with PKCE (S256), state and nonce -------------------------------------------

function randomText(bytes = 32) {
  const data = crypto.getRandomValues(new Uint8Array(bytes));
  return base64url(data);
}

function base64url(bytes) {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function decodeJwtPayload(token) {
  const part = token.split(".")[1] || "";
  const padded = part.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((part.length + 3) % 4);
  const binary = atob(padded);
  const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
  return JSON.parse(new TextDecoder().decode(bytes));
}

function redirectUri() {
  return `${location.origin}/`;
}

/** Off to the provider's sign-in page; the page comes back to location.origin + "/" with ?code=&state=. */
export async function signIn() {
  const auth = config.auth;
  const verifier = randomText(48);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  const pending = { verifier, state: randomText(), nonce: randomText(), hash: location.hash || "#/" };
  sessionStorage.setItem(PENDING, JSON.stringify(pending));
  const url = new URL(auth.authorization_endpoint);
  url.searchParams.set("response_type", "code");
  url.searchParams.set("client_id", auth.client_id);
  url.searchParams.set("redirect_uri", redirectUri());
  url.searchParams.set("scope", auth.scope || "openid email");
  url.searchParams.set("state", pending.state);
  url.searchParams.set("nonce", pending.nonce);
  url.searchParams.set("code_challenge", base64url(new Uint8Array(digest)));
  url.searchParams.set("code_challenge_method", "S256");
  location.assign(url.toString());
}

/**
 * Back from the provider: check state, trade the code (with the verifier) for tokens, check the ID token's
 * nonce, audience and expiry, keep it, and take ?code=&state= out of the address bar.
 * Returns the hash to show, or null when the URL carried no answer from the provider.
 */
export async function completeSignIn() {
  const params = new URLSearchParams(location.search);
  if (!params.has("code") && !params.has("error")) return null;
  const pending = JSON.parse(sessionStorage.getItem(PENDING) || "null");
  sessionStorage.removeItem(PENDING);
  const back = pending?.hash || "#/";
  history.replaceState(null, "", `${location.origin}/${back}`); // the code never stays in the address bar
  if (params.has("error")) {
    throw new AuthRequired(`sign-in failed: ${params.get("error_description") || params.get("error")}`);
  }
  if (!pending || params.get("state") !== pending.state) {
    throw new AuthRequired("sign-in failed: the answer did not match the request (state); sign in again");
  }
  const auth = config.auth;
  const response = await fetch(auth.token_endpoint, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code: params.get("code"),
      redirect_uri: redirectUri(),
      client_id: auth.client_id,
      code_verifier: pending.verifier,
    }),
    credentials: "omit",
  });
  const tokens = await response.json().catch(() => ({}));
  if (!response.ok || !tokens.id_token) {
    throw new AuthRequired(`sign-in failed: ${tokens.error_description || tokens.error || response.status}`);
  }
  const claims = decodeJwtPayload(tokens.id_token);
  const audience = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (claims.nonce !== pending.nonce) throw new AuthRequired("sign-in failed: the ID token's nonce does not match");
  if (!audience.includes(auth.client_id)) throw new AuthRequired("sign-in failed: the ID token is for another client");
  if (!(claims.exp > Date.now() / 1000)) throw new AuthRequired("sign-in failed: the ID token has expired");
  sessionStorage.setItem(TOKEN, JSON.stringify({ id_token: tokens.id_token, expires_at: claims.exp }));
  return back;
}
