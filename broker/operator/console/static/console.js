// The scopecast operator console: no dependencies, no build step.
//
// State comes from the operator feed (/admin/ws: a snapshot, then one message per change);
// answers go through the operator API (POST /admin). Every value from a dapp reaches the page as
// text (textContent, never innerHTML). Lists render a window of their items (more on scroll or
// on "Show more"), and each item's element is kept while the item is unchanged, so an update
// costs a few elements, not the whole list, and ticked boxes stay ticked.

const TOKEN_KEY = "scopecast.adminToken";
const CLOSE_WRONG_TOKEN = 4401;
const REQUEST_PAGE = 20;
const SESSION_PAGE = 50;
const TREE_LIMIT = 400; // values shown per tree (typed data, unknown requests)
const WEBHOOK_POLL = 2000; // ms between two looks at the webhooks (they are not on the feed)

const $ = (id) => document.getElementById(id);

const state = {
  token: null,
  socket: null,
  retry: 500,
  skew: 0, // server clock minus this clock, in ms
  approvals: new Map(), // id -> approval
  sessions: new Map(), // key -> session
  requestLimit: REQUEST_PAGE,
  sessionLimit: SESSION_PAGE,
  filter: "",
  renderQueued: false,
  webhooks: [],
  webhooksKey: "",
  webhookTimer: null,
};
const built = { approvals: new Map(), sessions: new Map(), webhooks: new Map() }; // key -> {data, element}

// -- small DOM helpers (text only) -------------------------------------------------------------

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "text") node.textContent = String(value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

function text(value) {
  return document.createTextNode(value === null || value === undefined ? "" : String(value));
}

function fields(pairs) {
  const list = el("dl", { class: "fields" });
  for (const [name, value] of pairs) {
    if (value === undefined) continue;
    list.append(el("dt", { text: name }), el("dd", {}, value instanceof Node ? value : text(value)));
  }
  return list;
}

let uniqueIds = 0;
function uid(prefix) {
  uniqueIds += 1;
  return `${prefix}-${uniqueIds}`;
}

// -- renderings of what would be signed ------------------------------------------------------

function tree(value, budget = { left: TREE_LIMIT }) {
  if (budget.left <= 0) return text("…");
  budget.left -= 1;
  if (value === null || typeof value !== "object") {
    return el("span", { class: "value", text: JSON.stringify(value) ?? String(value) });
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
  if (entries.length === 0) return el("span", { class: "value", text: Array.isArray(value) ? "[]" : "{}" });
  const list = el("ul", { class: "tree" });
  for (const [key, child] of entries) {
    if (budget.left <= 0) {
      list.append(el("li", { text: "…" }));
      break;
    }
    list.append(el("li", {}, el("span", { class: "key", text: `${key}: ` }), tree(child, budget)));
  }
  return list;
}

function ether(amount) {
  if (amount && typeof amount === "object" && "ether" in amount) return `${amount.ether} ETH`;
  return amount === undefined ? undefined : String(amount);
}

function gwei(amount) {
  if (amount && typeof amount === "object" && "gwei" in amount) return `${amount.gwei} gwei`;
  return amount === undefined ? undefined : String(amount);
}

function calldata(data) {
  if (!data || typeof data !== "object") return data === undefined ? undefined : String(data);
  if (!data.bytes) return "none";
  return `${data.bytes} bytes, selector ${data.selector ?? "none"}`;
}

function renderCalls(calls) {
  if (!Array.isArray(calls)) return fields([["Call data (not decoded)", calldata(calls?.undecoded)]]);
  const list = el("ol", { class: "calls" });
  for (const call of calls) {
    list.append(
      el(
        "li",
        {},
        fields([
          ["To", call.to ?? "contract creation"],
          ["Value", ether(call.value)],
          ["Data", calldata(call.data)],
        ]),
      ),
    );
  }
  return list;
}

function renderSignature(request) {
  const part = el("div", { class: "rendering" });
  if ("message" in request && "encoding" in request) {
    const label = request.encoding === "utf-8" ? "Message" : "Message (not text; hex)";
    part.append(el("h4", { text: label }), el("pre", { class: "message", text: request.message }));
  } else if ("domain" in request) {
    part.append(
      el("h4", { text: "Domain" }),
      tree(request.domain),
      el("h4", { text: `Message (${request.primaryType ?? "typed data"})` }),
      tree(request.message),
    );
  } else if ("sender" in request || "calls" in request) {
    const gas = request.gas ?? {};
    part.append(
      fields([
        ["Sender", request.sender ?? "(new account)"],
        ["Entry point", request.entryPoint],
        ["Deploys the account", request.deploysAccount === undefined ? undefined : request.deploysAccount ? "yes" : "no"],
        ["Paymaster", request.paymaster ?? undefined],
        ["Nonce", request.nonce],
      ]),
      el("h4", { text: "Calls" }),
      renderCalls(request.calls),
      el("h4", { text: "Gas" }),
      fields([
        ...Object.entries(gas).map(([name, value]) => [name, value]),
        ...Object.entries(request.fees ?? {}).map(([name, value]) => [name, gwei(value)]),
      ]),
    );
  } else if ("value" in request && "to" in request) {
    part.append(
      fields([
        ["To", request.contractCreation ? "contract creation" : request.to],
        ["Value", ether(request.value)],
        ["Data", calldata(request.data)],
        ["Gas limit", request.gasLimit],
        ["Most it can cost in gas", ether(request.maxGasCost)],
        ["Nonce", request.nonce],
      ]),
    );
  } else {
    const { method, chain, account, ...rest } = request;
    part.append(tree(rest));
  }
  return part;
}

// -- a waiting request -----------------------------------------------------------------------

function checkbox(label, checked, data) {
  const input = el("input", { type: "checkbox", checked });
  Object.assign(input.dataset, data);
  input.checked = Boolean(checked);
  return el("label", { class: "tick" }, input, text(label));
}

function group(legend, items) {
  const set = el("fieldset", {}, el("legend", { text: legend }));
  if (items.length === 0) set.append(el("p", { class: "empty", text: "none" }));
  for (const item of items) set.append(item);
  return set;
}

function renderSessionOffer(request) {
  const part = el("div", { class: "rendering" });
  for (const [chain, scope] of Object.entries(request.scopes ?? {})) {
    const wallet = scope.walletAccounts ?? [];
    const requested = new Set((scope.requestedAccounts ?? []).map((a) => a.toLowerCase()));
    const chosen = requested.size
      ? wallet.filter((a) => requested.has(a.toLowerCase()))
      : wallet.slice(0, 1);
    const set = el("fieldset", { class: "chain" }, el("legend", { text: chain }));
    set.append(
      checkbox("Grant this chain", true, { kind: "chain", chain }),
      group("Methods", (scope.methods ?? []).map((m) => checkbox(m, true, { kind: "methods", chain, value: m }))),
      group(
        "Notifications",
        (scope.notifications ?? []).map((n) => checkbox(n, true, { kind: "notifications", chain, value: n })),
      ),
      group("Accounts", wallet.map((a) => checkbox(a, chosen.includes(a), { kind: "accounts", chain, value: a }))),
    );
    part.append(set);
  }
  return part;
}

function narrowedScopes(card) {
  const scopes = {};
  for (const box of card.querySelectorAll("input[data-kind='chain']")) {
    if (box.checked) scopes[box.dataset.chain] = { methods: [], notifications: [], accounts: [] };
  }
  for (const box of card.querySelectorAll("input[data-kind]:checked")) {
    const scope = scopes[box.dataset.chain];
    const kind = box.dataset.kind;
    if (!scope || kind === "chain") continue;
    scope[kind].push(kind === "accounts" ? `${box.dataset.chain}:${box.dataset.value}` : box.dataset.value);
  }
  return scopes;
}

function countdownText(approval) {
  const left = Date.parse(approval.expires) - state.skew - Date.now();
  if (!(left > 0)) return "Timing out…";
  const seconds = Math.ceil(left / 1000);
  return `Times out in ${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, "0")}`;
}

function buildApproval(approval) {
  const request = approval.request ?? {};
  const what = approval.kind === "session" ? "Session request" : `${request.method ?? "Signature"} request`;
  const titleId = uid("request");
  const card = el("article", { class: "card", "aria-labelledby": titleId });
  card.append(
    el("h3", { id: titleId, text: `${what} #${approval.id}` }),
    el("p", { class: "countdown", "data-expires": approval.expires, text: countdownText(approval) }),
    fields([
      ["Origin", approval.origin],
      ["API key", approval.apiKey],
      ["Asked at", approval.created],
      ["Chain", request.chain],
      ["Account", request.account ?? undefined],
    ]),
    approval.kind === "session" ? renderSessionOffer(request) : renderSignature(request),
  );
  const approve = el("button", { type: "button", class: "approve", "aria-label": `Approve request ${approval.id}`, text: "Approve" });
  const reject = el("button", { type: "button", class: "reject", "aria-label": `Reject request ${approval.id}`, text: "Reject" });
  approve.addEventListener("click", () => {
    const params = { id: approval.id };
    if (approval.kind === "session") Object.assign(params, { accounts: [], sessionScopes: narrowedScopes(card) });
    answer(card, "admin_approve", params, `Approve request ${approval.id}`);
  });
  reject.addEventListener("click", () => answer(card, "admin_reject", { id: approval.id }, `Reject request ${approval.id}`));
  card.append(el("div", { class: "actions" }, approve, reject));
  return el("li", {}, card);
}

// -- a live session --------------------------------------------------------------------------

function sessionKey(apiKey, origin) {
  return `${apiKey}\n${origin}`;
}

function buildSession(session) {
  const titleId = uid("session");
  const card = el("article", { class: "card", "aria-labelledby": titleId });
  const scopes = session.sessionScopes ?? {};
  const expiry = session.sessionProperties?.expiry;
  card.append(
    el("h3", { id: titleId, text: session.origin }),
    fields([
      ["API key", session.apiKey],
      ["Expires", expiry],
      ["Connections", String(session.connections ?? 0)],
    ]),
  );
  for (const [scope, granted] of Object.entries(scopes)) {
    const revoke = el("button", { type: "button", class: "reject", "aria-label": `Revoke ${scope} of ${session.origin}`, text: "Revoke scope" });
    revoke.addEventListener("click", () =>
      answer(card, "admin_revokeSession", { apiKey: session.apiKey, origin: session.origin, scopes: [scope] }, `Revoke ${scope} of ${session.origin}`),
    );
    card.append(
      el(
        "div",
        { class: "scope" },
        el("h4", { text: scope }),
        fields([
          ["Methods", (granted.methods ?? []).join(", ") || "none"],
          ["Notifications", (granted.notifications ?? []).join(", ") || "none"],
          ["Accounts", (granted.accounts ?? []).join(", ") || "none"],
        ]),
        revoke,
      ),
    );
  }
  const revokeAll = el("button", { type: "button", class: "reject", "aria-label": `Revoke session of ${session.origin}`, text: "Revoke session" });
  revokeAll.addEventListener("click", () =>
    answer(card, "admin_revokeSession", { apiKey: session.apiKey, origin: session.origin }, `Revoke the session of ${session.origin}`),
  );
  card.append(el("div", { class: "actions" }, revokeAll));
  return el("li", {}, card);
}

function buildWebhook(hook) {
  const titleId = uid("webhook");
  const card = el("article", { class: "card", "aria-labelledby": titleId });
  card.append(
    el("h3", { id: titleId, text: hook.url }),
    fields([
      ["Id", hook.id],
      ["Chain", hook.chain],
      ["Subscription", `${hook.subscription.method} ${JSON.stringify(hook.subscription.params)}`],
      ["State", hook.state],
      ["Position", hook.position ?? "none yet"],
      ["Backlog", String(hook.backlog)],
      ["Delivered", String(hook.delivered)],
      ["Last error", hook.lastError ?? "none"],
    ]),
  );
  if (hook.failedDeliveries.length > 0) {
    const failed = el("ul", { class: "failed" });
    for (const parked of hook.failedDeliveries) {
      failed.append(el("li", { text: `${parked.id} (cursor ${parked.cursor}): ${parked.error}, ${parked.attempts} attempts` }));
    }
    card.append(el("h4", { text: "Failed deliveries" }), failed);
  }
  const replay = el("button", { type: "button", "aria-label": `Replay ${hook.id}`, text: "Replay from its position", disabled: !hook.position });
  replay.addEventListener("click", () =>
    answer(card, "admin_replayWebhook", { id: hook.id, cursor: hook.position }, `Replay ${hook.id}`).then(pollWebhooks),
  );
  const remove = el("button", { type: "button", class: "reject", "aria-label": `Delete ${hook.id}`, text: "Delete" });
  remove.addEventListener("click", () => answer(card, "admin_deleteWebhook", { id: hook.id }, `Delete ${hook.id}`).then(pollWebhooks));
  card.append(el("div", { class: "actions" }, replay, remove));
  return el("li", {}, card);
}

async function pollWebhooks() {
  if (state.token === null) return;
  try {
    const hooks = await admin("admin_listWebhooks", {});
    const key = JSON.stringify(hooks);
    if (key !== state.webhooksKey) {
      state.webhooksKey = key;
      state.webhooks = hooks;
      scheduleRender();
    }
  } catch (error) {
    complain(`Listing the webhooks failed: ${error.message}`);
  }
}

// -- rendering the lists ---------------------------------------------------------------------

function reconcile(list, items, cache, keyOf, build) {
  const wanted = new Set();
  const elements = items.map((item) => {
    const key = keyOf(item);
    wanted.add(key);
    let entry = cache.get(key);
    if (!entry || entry.data !== item) {
      entry = { data: item, element: build(item) };
      cache.set(key, entry);
    }
    return entry.element;
  });
  for (const key of cache.keys()) if (!wanted.has(key)) cache.delete(key);
  // Remove what went, then insert what came: the cards that stay are never moved, so the one the
  // operator is ticking keeps its focus while requests arrive above it.
  const keep = new Set(elements);
  for (const child of [...list.children]) if (!keep.has(child)) child.remove();
  elements.forEach((element, i) => {
    if (list.children[i] !== element) list.insertBefore(element, list.children[i] ?? null);
  });
}

function render() {
  state.renderQueued = false;
  const started = performance.now();
  const approvals = [...state.approvals.values()].sort((a, b) => Number(b.id) - Number(a.id));
  reconcile($("requests"), approvals.slice(0, state.requestLimit), built.approvals, (a) => a.id, buildApproval);
  $("requests-count").textContent = `(${approvals.length})`;
  $("no-requests").hidden = approvals.length > 0;
  $("more-requests").hidden = approvals.length <= state.requestLimit;

  const filter = state.filter;
  const sessions = [...state.sessions.values()]
    .filter((s) => !filter || s.origin.toLowerCase().includes(filter) || s.apiKey.toLowerCase().includes(filter))
    .sort((a, b) => (a.origin < b.origin ? -1 : a.origin > b.origin ? 1 : a.apiKey < b.apiKey ? -1 : 1));
  reconcile($("sessions"), sessions.slice(0, state.sessionLimit), built.sessions, (s) => sessionKey(s.apiKey, s.origin), buildSession);
  $("sessions-count").textContent = `(${state.sessions.size})`;
  $("no-sessions").hidden = sessions.length > 0;
  $("more-sessions").hidden = sessions.length <= state.sessionLimit;
  const hooks = state.webhooks;
  // A webhook's element is rebuilt only when what the listing says of it changed.
  const unchanged = (h) => built.webhooks.get(h.id)?.data;
  const items = hooks.map((h) => (JSON.stringify(unchanged(h)) === JSON.stringify(h) ? unchanged(h) : h));
  reconcile($("webhooks"), items, built.webhooks, (h) => h.id, buildWebhook);
  $("webhooks-count").textContent = `(${hooks.length})`;
  $("no-webhooks").hidden = hooks.length > 0;
  performance.measure("console-render", { start: started });
}

function scheduleRender() {
  if (state.renderQueued) return;
  state.renderQueued = true;
  requestAnimationFrame(render);
}

function tick() {
  const now = Date.now() + state.skew;
  for (const node of document.querySelectorAll("#requests .countdown")) {
    node.textContent = countdownText({ expires: node.dataset.expires });
  }
  let expired = false;
  for (const [key, session] of state.sessions) {
    const expiry = Date.parse(session.sessionProperties?.expiry ?? "");
    if (expiry && expiry <= now) {
      state.sessions.delete(key);
      expired = true;
    }
  }
  if (expired) scheduleRender();
}

// -- the operator API ------------------------------------------------------------------------

function say(message) {
  $("status").textContent = message;
}

function complain(message) {
  $("problem").textContent = message;
}

async function admin(method, params) {
  const response = await fetch("/admin", {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${state.token}` },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    cache: "no-store",
  });
  const reply = await response.json().catch(() => ({}));
  if (response.status === 401) throw new Error("the admin token was not accepted");
  if (reply.error) throw new Error(reply.error.message);
  return reply.result;
}

async function answer(card, method, params, action) {
  const buttons = card.querySelectorAll("button");
  for (const button of buttons) button.disabled = true;
  complain("");
  try {
    await admin(method, params);
    say(`${action}: done.`);
  } catch (error) {
    complain(`${action} failed: ${error.message}`);
  } finally {
    for (const button of buttons) button.disabled = false;
  }
}

// -- the feed --------------------------------------------------------------------------------

function apply(message) {
  switch (message.type) {
    case "snapshot":
      state.skew = Date.parse(message.now) - Date.now();
      state.approvals = new Map(message.approvals.map((a) => [a.id, a]));
      state.sessions = new Map(message.sessions.map((s) => [sessionKey(s.apiKey, s.origin), s]));
      $("dev-note").hidden = !message.devToken;
      showDashboard(true);
      pollWebhooks();
      if (state.webhookTimer === null) state.webhookTimer = setInterval(pollWebhooks, WEBHOOK_POLL);
      say(`Connected: ${message.approvals.length} waiting, ${message.sessions.length} live sessions.`);
      state.retry = 500;
      break;
    case "approval":
      state.approvals.set(message.approval.id, message.approval);
      say(`New request #${message.approval.id} from ${message.approval.origin}.`);
      break;
    case "answered":
      state.approvals.delete(message.id);
      if (message.outcome === "timedOut") say(`Request #${message.id} timed out.`);
      if (message.outcome === "withdrawn") say(`Request #${message.id} was withdrawn: its dapp left.`);
      break;
    case "session": {
      const key = sessionKey(message.apiKey, message.origin);
      if (message.session) state.sessions.set(key, message.session);
      else state.sessions.delete(key);
      break;
    }
    case "connections": {
      const key = sessionKey(message.apiKey, message.origin);
      const session = state.sessions.get(key);
      if (session) state.sessions.set(key, { ...session, connections: message.count });
      break;
    }
    default:
      return;
  }
  scheduleRender();
}

function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}/admin/ws`);
  state.socket = socket;
  socket.addEventListener("open", () => socket.send(JSON.stringify({ token: state.token })));
  socket.addEventListener("message", (event) => apply(JSON.parse(event.data)));
  socket.addEventListener("close", (event) => {
    if (state.socket !== socket) return;
    state.socket = null;
    if (event.code === CLOSE_WRONG_TOKEN) {
      signOut();
      complain("Wrong admin token: the server did not accept it.");
      return;
    }
    if (state.token === null) return;
    say(`Connection lost (${event.code || "no code"}); reconnecting…`);
    setTimeout(() => state.token !== null && !state.socket && connect(), state.retry);
    state.retry = Math.min(state.retry * 2, 10000);
  });
}

function showDashboard(shown) {
  $("dashboard").hidden = !shown;
  $("sign-in-section").hidden = shown;
  $("sign-out").hidden = !shown;
}

function signIn(token) {
  state.token = token;
  sessionStorage.setItem(TOKEN_KEY, token);
  complain("");
  say("Signing in…");
  connect();
}

function signOut() {
  state.token = null;
  sessionStorage.removeItem(TOKEN_KEY);
  const socket = state.socket;
  state.socket = null;
  if (socket) socket.close(1000, "signed out");
  state.approvals.clear();
  state.sessions.clear();
  built.approvals.clear();
  built.sessions.clear();
  clearInterval(state.webhookTimer);
  state.webhookTimer = null;
  state.webhooks = [];
  state.webhooksKey = "";
  built.webhooks.clear();
  $("requests").replaceChildren();
  $("sessions").replaceChildren();
  $("webhooks").replaceChildren();
  showDashboard(false);
  say("Signed out.");
}

function showMoreWhenVisible(button, grow) {
  button.addEventListener("click", grow);
  new IntersectionObserver((entries) => {
    if (entries.some((entry) => entry.isIntersecting)) grow();
  }, { rootMargin: "400px" }).observe(button);
}

function start() {
  $("sign-in").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = $("token");
    const token = input.value;
    input.value = "";
    if (token) signIn(token);
  });
  $("sign-out").addEventListener("click", signOut);
  $("session-filter").addEventListener("input", (event) => {
    state.filter = event.target.value.trim().toLowerCase();
    state.sessionLimit = SESSION_PAGE;
    scheduleRender();
  });
  showMoreWhenVisible($("more-requests"), () => {
    state.requestLimit += REQUEST_PAGE;
    scheduleRender();
  });
  showMoreWhenVisible($("more-sessions"), () => {
    state.sessionLimit += SESSION_PAGE;
    scheduleRender();
  });
  setInterval(tick, 1000);
  const saved = sessionStorage.getItem(TOKEN_KEY);
  if (saved) signIn(saved);
}

start();
