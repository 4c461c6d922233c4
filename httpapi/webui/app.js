// llmserve chat page: conversations in localStorage, replies streamed from
// /v1/chat/completions, the model from /props, an API key asked for when
// the server answers 401. Model text is rendered by LLMMarkdown, which
// escapes it first.
"use strict";

(() => {
  const KEYS = { convs: "llmserve.conversations", current: "llmserve.current", settings: "llmserve.settings", apiKey: "llmserve.apiKey" };
  const $ = (id) => document.getElementById(id);
  const el = {
    app: $("app"), list: $("conversations"), messages: $("messages"), empty: $("empty"),
    input: $("input"), composer: $("composer"), send: $("send"), stop: $("stop"),
    modelName: $("model-name"), modelInfo: $("model-info"),
    settings: $("settings"), openSettings: $("open-settings"), closeSettings: $("close-settings"),
    settingsError: $("settings-error"), forgetKey: $("forget-key"),
    system: $("set-system"), temperature: $("set-temperature"), topP: $("set-top-p"),
    maxTokens: $("set-max-tokens"), seed: $("set-seed"), extra: $("set-extra"),
    keyDialog: $("key-dialog"), keyForm: $("key-form"), keyInput: $("key-input"), keyError: $("key-error"),
    keyCancel: $("key-cancel"), scrim: $("scrim"),
  };

  // ---- storage ----------------------------------------------------------
  function load(key, fallback) {
    try {
      const v = JSON.parse(localStorage.getItem(key));
      return v === null || v === undefined ? fallback : v;
    } catch {
      return fallback;
    }
  }
  function save(key, v) {
    try {
      localStorage.setItem(key, JSON.stringify(v));
    } catch (e) {
      console.warn("llmserve: could not save to localStorage:", e);
    }
  }

  const state = {
    convs: load(KEYS.convs, []).filter((c) => c && typeof c.id === "string" && Array.isArray(c.messages)),
    current: load(KEYS.current, null),
    settings: Object.assign({ system: "", temperature: "", topP: "", maxTokens: "", seed: "", extra: "" }, load(KEYS.settings, {})),
    apiKey: load(KEYS.apiKey, ""),
    props: null,
    busy: null, // { controller, conv, msg } while a reply streams
  };
  const saveConvs = () => save(KEYS.convs, state.convs);
  const conv = () => state.convs.find((c) => c.id === state.current) || null;

  function newConv() {
    const c = { id: Date.now().toString(36) + Math.random().toString(36).slice(2, 8), title: "New chat", created: Date.now(), messages: [] };
    state.convs.unshift(c);
    state.current = c.id;
    saveConvs();
    save(KEYS.current, c.id);
    return c;
  }

  // ---- API --------------------------------------------------------------
  class Unauthorized extends Error {}

  function headers(extra) {
    const h = Object.assign({}, extra);
    if (state.apiKey) h.Authorization = "Bearer " + state.apiKey;
    return h;
  }

  async function errorText(res) {
    try {
      const body = await res.json();
      if (body && body.error && body.error.message) return body.error.message;
    } catch { /* not JSON */ }
    return res.status + " " + res.statusText;
  }

  async function api(path, init) {
    const res = await fetch(path, Object.assign({}, init, { headers: headers(init && init.headers) }));
    if (res.status === 401) throw new Unauthorized(await errorText(res));
    return res;
  }

  // withKey runs fn; on a 401 it asks for the key and runs fn again.
  async function withKey(fn) {
    for (let refused = false; ; refused = true) {
      try {
        return await fn();
      } catch (e) {
        if (!(e instanceof Unauthorized)) throw e;
        const key = await askKey(refused || !!state.apiKey);
        if (key === null) throw new Error("an API key is needed: " + e.message);
      }
    }
  }

  let keyWaiters = [];
  function askKey(refused) {
    return new Promise((resolve) => {
      keyWaiters.push(resolve);
      el.keyError.hidden = !refused;
      el.keyInput.value = "";
      if (!el.keyDialog.open) el.keyDialog.showModal();
      el.keyInput.focus();
    });
  }
  function answerKey(key) {
    if (el.keyDialog.open) el.keyDialog.close();
    const waiters = keyWaiters;
    keyWaiters = [];
    waiters.forEach((w) => w(key));
  }
  el.keyForm.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const key = el.keyInput.value.trim();
    if (!key) return;
    state.apiKey = key;
    save(KEYS.apiKey, key);
    answerKey(key);
  });
  el.keyCancel.addEventListener("click", () => answerKey(null));
  el.keyDialog.addEventListener("cancel", () => answerKey(null));
  el.forgetKey.addEventListener("click", () => {
    state.apiKey = "";
    localStorage.removeItem(KEYS.apiKey);
  });

  async function loadProps() {
    try {
      const props = await withKey(async () => {
        const res = await api("props");
        if (!res.ok) throw new Error(await errorText(res));
        return res.json();
      });
      state.props = props;
      const name = props.model_alias || String(props.model_path || "").split(/[\\/]/).pop() || "model";
      el.modelName.textContent = name;
      const s = props.default_generation_settings || {};
      el.modelInfo.textContent = "context " + (s.n_ctx || "?") + " tokens · " + (props.total_slots || "?") + " slots";
      el.modelName.title = props.model_path || "";
      el.modelInfo.title = props.build_info || "";
      document.title = name + " · llmserve";
    } catch (e) {
      el.modelName.textContent = "server unavailable";
      el.modelInfo.textContent = e.message;
      setTimeout(loadProps, 5000);
    }
  }

  // ---- rendering --------------------------------------------------------
  function renderList() {
    el.list.replaceChildren(...state.convs.map((c) => {
      const li = document.createElement("li");
      li.dataset.id = c.id;
      if (c.id === state.current) li.className = "current";
      const open = document.createElement("button");
      open.type = "button";
      open.className = "title";
      open.textContent = c.title;
      open.title = c.title;
      open.addEventListener("click", () => select(c.id));
      const del = document.createElement("button");
      del.type = "button";
      del.className = "delete";
      del.setAttribute("aria-label", "Delete " + c.title);
      del.textContent = "\u2715";
      del.addEventListener("click", () => remove(c.id));
      li.append(open, del);
      return li;
    }));
  }

  function statsText(st) {
    if (!st) return "";
    const parts = [];
    if (st.tokens !== undefined) parts.push(st.tokens + " tokens");
    if (st.tps !== undefined && st.tps !== null) parts.push(st.tps.toFixed(1) + " tokens/s");
    if (st.ttft !== undefined && st.ttft !== null) parts.push("first token " + Math.round(st.ttft) + " ms");
    if (st.finish) parts.push(st.finish === "stopped" ? "stopped" : "finish: " + st.finish);
    return parts.join(" · ");
  }

  function messageNode(m) {
    const wrap = document.createElement("div");
    wrap.className = "msg " + (m.role === "user" ? "user" : m.error ? "assistant error" : "assistant");
    const role = document.createElement("div");
    role.className = "role";
    role.textContent = m.role === "user" ? "You" : m.error ? "Error" : "Assistant";
    const body = document.createElement("div");
    body.className = "body";
    const stats = document.createElement("div");
    stats.className = "stats";
    wrap.append(role, body, stats);
    fillMessage(wrap, m);
    return wrap;
  }

  function fillMessage(node, m) {
    const body = node.querySelector(".body");
    if (m.role === "user" || m.error) body.textContent = m.content;
    else body.innerHTML = LLMMarkdown.render(m.content);
    node.querySelector(".stats").textContent = statsText(m.stats);
  }

  function renderMessages() {
    const c = conv();
    const nodes = c ? c.messages.map(messageNode) : [];
    el.empty.hidden = nodes.length > 0;
    el.messages.replaceChildren(el.empty, ...nodes);
    el.messages.scrollTop = el.messages.scrollHeight;
  }

  function render() {
    renderList();
    renderMessages();
  }

  function select(id) {
    state.current = id;
    save(KEYS.current, id);
    closeDrawer();
    render();
  }

  function remove(id) {
    if (state.busy && state.busy.conv.id === id) state.busy.controller.abort();
    state.convs = state.convs.filter((c) => c.id !== id);
    if (state.current === id) state.current = state.convs.length ? state.convs[0].id : null;
    saveConvs();
    save(KEYS.current, state.current);
    render();
  }

  // ---- settings ---------------------------------------------------------
  const fields = ["system", "temperature", "topP", "maxTokens", "seed", "extra"];
  function showSettings(open) {
    el.settings.hidden = !open;
    el.openSettings.setAttribute("aria-expanded", String(open));
    if (open) fields.forEach((f) => { el[f].value = state.settings[f]; });
  }
  function readSettings() {
    fields.forEach((f) => { state.settings[f] = el[f].value; });
    save(KEYS.settings, state.settings);
  }
  fields.forEach((f) => el[f].addEventListener("change", readSettings));
  el.openSettings.addEventListener("click", () => showSettings(el.settings.hidden));
  el.closeSettings.addEventListener("click", () => { readSettings(); showSettings(false); });

  // requestBody builds the chat request from the conversation and settings.
  function requestBody(c) {
    const s = state.settings;
    const messages = [];
    if (s.system.trim()) messages.push({ role: "system", content: s.system });
    c.messages.filter((m) => !m.error && m.content !== "").forEach((m) => messages.push({ role: m.role, content: m.content }));
    const body = { messages, stream: true, stream_options: { include_usage: true } };
    if (state.props && state.props.model_alias) body.model = state.props.model_alias;
    const num = (v, name, int) => {
      if (String(v).trim() === "") return;
      const n = Number(v);
      if (!Number.isFinite(n) || (int && !Number.isInteger(n))) throw new Error(name + ": not a number: " + v);
      return n;
    };
    const t = num(s.temperature, "temperature"), p = num(s.topP, "top-p");
    const mt = num(s.maxTokens, "max tokens", true), seed = num(s.seed, "seed", true);
    if (t !== undefined) body.temperature = t;
    if (p !== undefined) body.top_p = p;
    if (mt !== undefined) body.max_tokens = mt;
    if (seed !== undefined) body.seed = seed;
    if (s.extra.trim()) {
      let extra;
      try { extra = JSON.parse(s.extra); } catch (e) { throw new Error("more request fields: " + e.message); }
      if (!extra || typeof extra !== "object" || Array.isArray(extra)) throw new Error("more request fields: want a JSON object");
      for (const [k, v] of Object.entries(extra)) if (k !== "messages" && k !== "stream") body[k] = v;
    }
    return body;
  }

  // ---- sending and streaming -------------------------------------------
  function setBusy(busy) {
    state.busy = busy;
    el.send.hidden = !!busy;
    el.stop.hidden = !busy;
  }

  async function send(text) {
    let c = conv();
    if (!c) c = newConv();
    c.messages.push({ role: "user", content: text });
    if (c.title === "New chat") c.title = text.replace(/\s+/g, " ").slice(0, 60);
    saveConvs();
    render();
    let body;
    try {
      body = requestBody(c);
    } catch (e) {
      c.messages.push({ role: "assistant", content: e.message, error: true });
      saveConvs();
      renderMessages();
      return;
    }
    const msg = { role: "assistant", content: "", stats: null };
    c.messages.push(msg);
    const node = messageNode(msg);
    node.classList.add("streaming");
    el.empty.hidden = true;
    el.messages.append(node);
    const controller = new AbortController();
    setBusy({ controller, conv: c, msg });
    const started = performance.now();
    const st = { tokens: 0, ttft: null, tps: null, finish: null };
    let first = null, last = null, pending = false, usage = null;
    const paint = () => {
      pending = false;
      fillMessage(node, msg);
      el.messages.scrollTop = el.messages.scrollHeight;
    };
    const schedule = () => {
      if (!pending) { pending = true; requestAnimationFrame(paint); }
    };
    try {
      const res = await withKey(() => api("v1/chat/completions", {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body), signal: controller.signal,
      }));
      if (!res.ok) throw new Error(await errorText(res));
      await readEvents(res.body, controller.signal, (ev) => {
        if (ev.error) throw new Error(ev.error.message || "the server ended the reply with an error");
        if (ev.usage) usage = ev.usage;
        const ch = ev.choices && ev.choices[0];
        if (!ch) return;
        const piece = ch.delta && ch.delta.content;
        if (piece) {
          const now = performance.now();
          if (first === null) { first = now; st.ttft = now - started; }
          last = now;
          st.tokens++;
          msg.content += piece;
          schedule();
        }
        if (ch.finish_reason) st.finish = ch.finish_reason;
      });
    } catch (e) {
      if (controller.signal.aborted) {
        st.finish = "stopped";
      } else {
        msg.error = !msg.content;
        if (msg.error) msg.content = e.message;
        else st.finish = "error: " + e.message;
      }
    } finally {
      if (usage && usage.completion_tokens !== undefined) st.tokens = usage.completion_tokens;
      if (first !== null && last > first && st.tokens > 1) st.tps = (st.tokens - 1) * 1000 / (last - first);
      msg.stats = msg.error ? null : st;
      node.classList.remove("streaming");
      if (msg.error) node.className = "msg assistant error";
      node.querySelector(".role").textContent = msg.error ? "Error" : "Assistant";
      paint();
      if (state.convs.includes(c)) saveConvs();
      setBusy(null);
    }
  }

  // readEvents reads a server-sent event stream and calls onEvent with each
  // JSON data payload until [DONE].
  async function readEvents(stream, signal, onEvent) {
    const reader = stream.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
        let cut;
        while ((cut = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, "")).join("\n");
          if (data === "") continue;
          if (data === "[DONE]") return;
          onEvent(JSON.parse(data));
        }
      }
      if (signal.aborted) throw new DOMException("aborted", "AbortError");
    } finally {
      reader.releaseLock();
    }
  }

  // ---- wiring -----------------------------------------------------------
  el.composer.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = el.input.value;
    if (!text.trim() || state.busy) return;
    el.input.value = "";
    send(text);
  });
  el.input.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      el.composer.requestSubmit();
    }
  });
  el.stop.addEventListener("click", () => { if (state.busy) state.busy.controller.abort(); });
  $("new-chat").addEventListener("click", () => {
    if (!conv() || conv().messages.length) newConv();
    closeDrawer();
    render();
    el.input.focus();
  });
  function closeDrawer() { el.app.classList.remove("drawer"); el.scrim.hidden = true; }
  $("open-sidebar").addEventListener("click", () => { el.app.classList.add("drawer"); el.scrim.hidden = false; });
  $("close-sidebar").addEventListener("click", closeDrawer);
  el.scrim.addEventListener("click", closeDrawer);
  window.addEventListener("storage", (ev) => {
    if (ev.key === KEYS.convs && !state.busy) {
      state.convs = load(KEYS.convs, []);
      render();
    }
  });

  if (!conv()) state.current = state.convs.length ? state.convs[0].id : null;
  render();
  loadProps();
})();
