import Support

/// The pages as single self-contained HTML documents (no external script, style or font): the state as it is when
/// the page is requested is embedded as JSON, the page's script draws it with DOM APIs (text is only ever set as
/// `textContent`, never parsed as markup) and then applies the messages the server pushes over `/ws`.
enum PageDocument {
    enum Kind: String { case station, line }

    static func render(kind: Kind, title: String, initialState: String) -> String {
        // JSON inside a <script> element: "<" never appears raw, so no "</script>" or "<!--" can end it early.
        let embedded = initialState.replacingOccurrences(of: "<", with: "\\u003c")
        return """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(Markup.escape(title))</title>
            <style>\(style)</style>
            </head>
            <body data-kind="\(kind.rawValue)" data-link="connecting" data-changes="0">
            <header><h1 id="title">\(Markup.escape(title))</h1><div id="subtitle"></div><div id="signin" hidden></div><div id="link" title="updates">connecting</div></header>
            <div id="stopping" hidden></div>
            <main id="main"></main>
            <script type="application/json" id="initial-state">\(embedded)</script>
            <script>\(script)</script>
            </body>
            </html>
            """
    }

    static let style = """
        :root { font-family: system-ui, sans-serif; color: #1b1f24; background: #f3f4f6; }
        body { margin: 0; }
        header { display: flex; align-items: baseline; gap: 1.5em; padding: .6em 1em; background: #1f2937; color: #f9fafb; }
        header h1 { margin: 0; font-size: 1.3em; }
        #subtitle { flex: 1; opacity: .85; }
        #signin { display: flex; gap: .4em; align-items: baseline; font-size: .9em; }
        #signin .refusal { color: #fca5a5; }
        #link { font-size: .85em; padding: .1em .6em; border-radius: 1em; background: #b45309; }
        body[data-link="open"] #link { background: #047857; }
        #stopping { background: #b91c1c; color: white; padding: .5em 1em; font-weight: bold; }
        main { padding: .8em 1em; display: grid; gap: 1em; }
        section { background: white; border-radius: 6px; padding: .6em .9em; box-shadow: 0 1px 2px #0002; }
        section h2 { margin: 0 0 .4em; font-size: 1em; color: #374151; }
        .totals { display: flex; flex-wrap: wrap; gap: 1.6em; font-size: 1.05em; }
        .totals b { font-size: 1.4em; display: block; }
        .tiles { display: grid; grid-template-columns: repeat(auto-fill, minmax(15em, 1fr)); gap: .6em; }
        .tile { border-radius: 6px; padding: .5em .7em; background: #e5e7eb; border-left: 6px solid #9ca3af; min-height: 6em; }
        .tile .slot { font-weight: bold; }
        .tile .unit, .tile .serial { font-family: ui-monospace, monospace; font-size: .9em; }
        .tile .result { font-weight: bold; margin-top: .3em; }
        .tile[data-state="running"] { background: #dbeafe; border-color: #2563eb; }
        .tile[data-state="pass"] { background: #d1fae5; border-color: #059669; }
        .tile[data-state="fail"], .tile[data-state="error"] { background: #fee2e2; border-color: #dc2626; }
        .tile[data-state="aborted"] { background: #fef3c7; border-color: #d97706; }
        .prompt { margin-top: .4em; padding: .4em; background: #fff; border: 2px solid #7c3aed; border-radius: 4px; }
        .prompt .ask { font-weight: bold; }
        .prompt img { max-width: 100%; max-height: 12em; display: block; margin: .3em 0; }
        .prompt .hint { font-size: .85em; color: #4b5563; font-family: ui-monospace, monospace; }
        .prompt .refusal { color: #b91c1c; font-weight: bold; }
        .prompt button { font-size: 1.1em; margin: .3em .3em 0 0; padding: .2em .8em; }
        .prompt button.pass { background: #059669; color: #fff; } .prompt button.fail { background: #dc2626; color: #fff; }
        .prompt input { font-size: 1.1em; width: 70%; }
        progress { width: 100%; }
        table { border-collapse: collapse; width: 100%; font-size: .9em; }
        th, td { text-align: left; padding: .2em .5em; border-bottom: 1px solid #e5e7eb; vertical-align: top; }
        td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
        tr[data-outcome="pass"] td.outcome { color: #047857; font-weight: bold; }
        tr[data-outcome="fail"] td.outcome, tr[data-outcome="error"] td.outcome { color: #b91c1c; font-weight: bold; }
        tr[data-alive="false"] td { color: #9ca3af; }
        .bar { background: #f87171; height: .8em; display: inline-block; }
        details summary { cursor: pointer; }
        .mono { font-family: ui-monospace, monospace; }
        """

    static let script = #"""
        "use strict";
        const S = {};
        const el = (tag, attrs, ...children) => {
          const e = document.createElement(tag);
          for (const [k, v] of Object.entries(attrs || {})) {
            if (v === null || v === undefined) continue;
            if (k === "class") e.className = v; else e.setAttribute(k, String(v));
          }
          for (const c of children) {
            if (c === null || c === undefined) continue;
            e.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
          }
          return e;
        };
        const pct = v => (v === null || v === undefined) ? "–" : (v * 100).toFixed(1) + " %";
        const num = (v, d) => (v === null || v === undefined || typeof v !== "number") ? "–" : v.toFixed(d);
        const when = ms => ms ? new Date(ms).toLocaleTimeString() : "";
        const section = (id, title) => {
          let s = document.getElementById(id);
          if (!s) {
            s = el("section", {id: id}, el("h2", {}, title), el("div", {class: "body"}));
            document.getElementById("main").appendChild(s);
          }
          const body = s.querySelector(".body");
          const fresh = el("div", {class: "body"});
          s.replaceChild(fresh, body);
          return fresh;
        };
        const table = (heads, rows) => el("table", {},
          el("thead", {}, el("tr", {}, ...heads.map(h => el("th", {class: h.num ? "num" : null}, h.t || h)))),
          el("tbody", {}, ...rows));
        const td = (v, cls) => el("td", {class: cls}, v);
        function stepsOf(u) {
          if (!u.steps || !u.steps.length) return null;
          const rows = [];
          for (const s of u.steps) {
            rows.push(el("tr", {"data-step": s.name, "data-outcome": s.outcome}, td(s.name), td(s.outcome, "outcome"),
              td(num(s.seconds, 3), "num"), td(s.message)));
            for (const m of s.measurements || []) {
              rows.push(el("tr", {"data-measurement": m.name, "data-outcome": m.outcome}, td("  " + m.name),
                td(m.outcome, "outcome"), td(num(m.value, 4) + " " + m.unit, "num"),
                td("limits " + num(m.low, 4) + " … " + num(m.high, 4))));
            }
          }
          return el("details", {}, el("summary", {}, u.steps.length + " steps"), table(["step", "result", {t: "s", num: 1}, ""], rows));
        }
        function unitsTable(units, withStation) {
          const heads = ["run", "ended"].concat(withStation ? ["station"] : []).concat(["slot", "unit", "serial", "operator", "result",
            {t: "s", num: 1}, "failed at"]).concat(withStation ? [] : ["record"]);
          return table(heads, (units || []).map(u => {
            const tr = el("tr", {"data-run": u.run, "data-hwid": u.hardwareID, "data-outcome": u.outcome}, td(u.run, "num"), td(when(u.endedAt)));
            if (withStation) tr.appendChild(td(u.station));
            for (const c of [td(u.slot), td(u.hardwareID, "mono"), td(u.serial || "", "mono serial"), td(u.operator || "", "operator"),
              td((u.outcome || "").toUpperCase(), "outcome"), td(num(u.seconds, 1), "num"),
              td((u.failedStep || "") + (u.message ? ": " + u.message : ""))]) tr.appendChild(c);
            if (!withStation) tr.appendChild(el("td", {}, stepsOf(u)));
            return tr;
          }));
        }
        function paretoTable(rows) {
          if (!rows || !rows.length) return el("p", {id: "no-failures"}, "no failures");
          const top = rows[0].count;
          return table(["cause", {t: "count", num: 1}, {t: "share", num: 1}, {t: "cumulative", num: 1}, ""],
            rows.map(r => el("tr", {"data-cause": r.cause, "data-count": r.count}, td(r.cause), td(r.count, "num"), td(pct(r.share), "num"),
              td(pct(r.cumulative), "num"), el("td", {}, el("span", {class: "bar", style: "width:" + Math.round(120 * r.count / top) + "px"})))));
        }
        // An answer given while the socket is not (yet, or no longer) open waits here and is sent when it opens:
        // an operator's scan is never dropped because the page was still connecting.
        const outbox = [];
        function send(message) {
          const text = JSON.stringify(message);
          if (socket && socket.readyState === 1) socket.send(text); else outbox.push(text);
          document.body.dataset.unsent = String(outbox.length);
        }
        function answer(id, value) { send({answer: {prompt: id, value: value}}); }
        // Signing in on the page (a station's): a small form in the header; once signed in, the name and Sign out.
        function drawSignIn(h) {
          const box = document.getElementById("signin");
          const old = document.getElementById("signin-name");
          const typed = old ? old.value : "", focused = !!old && document.activeElement === old;
          box.replaceChildren();
          box.hidden = !h.signIn;
          if (!h.signIn) return;
          if (h.signedIn) {
            const out = el("button", {id: "signout", type: "button"}, "Sign out");
            out.onclick = () => send({signIn: {name: null}});
            box.append(el("span", {id: "signed-in"}, "signed in: " + h.operator), out);
          } else {
            const input = el("input", {id: "signin-name", type: "text", autocomplete: "off", placeholder: "your name", size: 12});
            input.value = typed;
            const form = el("form", {id: "signin-form"}, input, el("button", {type: "submit"}, "Sign in"));
            form.onsubmit = ev => { ev.preventDefault(); send({signIn: {name: input.value}}); input.value = ""; };
            box.appendChild(form);
            if (focused) input.focus();
          }
          if (h.signInRefusal) box.appendChild(el("span", {class: "refusal", id: "signin-refusal"}, h.signInRefusal));
        }
        function promptOf(p, typed) {
          const box = el("div", {class: "prompt", "data-prompt": p.id, "data-step": p.step, "data-kind": p.kind},
            el("div", {class: "ask"}, "#" + p.id + " " + p.text),
            p.image ? el("img", {src: "/image/" + encodeURIComponent(p.image), alt: p.text}) : null,
            p.hint ? el("div", {class: "hint"}, p.hint) : null,
            p.refusal ? el("div", {class: "refusal"}, p.refusal) : null);
          if (p.kind === "pass-fail") {
            const pass = el("button", {class: "pass"}, "PASS"), fail = el("button", {class: "fail"}, "FAIL");
            pass.onclick = () => answer(p.id, "pass");
            fail.onclick = () => answer(p.id, "fail");
            box.appendChild(el("div", {}, pass, fail));
          } else {
            const input = el("input", {type: "text", autocomplete: "off", "data-prompt": p.id,
              placeholder: p.kind === "scan" ? "scan or type, then Enter" : "value, then Enter"});
            input.value = typed[String(p.id)] || "";
            const form = el("form", {}, input, el("button", {type: "submit"}, "OK"));
            form.onsubmit = ev => { ev.preventDefault(); answer(p.id, input.value); input.value = ""; };
            box.appendChild(form);
          }
          return box;
        }
        function drawStation(changed) {
          const h = S.header || {};
          if (changed.has("header")) {
            document.getElementById("title").textContent = "Station " + (h.station || "");
            document.getElementById("subtitle").textContent = "recipe " + (h.recipe || "") + " · operator " + (h.operator || "–");
            const stop = document.getElementById("stopping");
            stop.hidden = !h.stopping;
            stop.textContent = h.stopping ? "Station stopped taking units: " + h.stopping : "";
            drawSignIn(h);
          }
          if (changed.has("totals") || !document.getElementById("totals")) {
            const t = S.totals || {};
            const b = section("totals", "Totals");
            const item = (id, label, v) => el("div", {id: id}, el("b", {}, v), label);
            b.appendChild(el("div", {class: "totals"}, item("t-passed", "passed", t.passed), item("t-failed", "failed", t.failed),
              item("t-errors", "errors", t.errors), item("t-uph", "units/h", num(t.unitsPerHour, 1)),
              item("t-fpy", "first-pass yield", pct(t.firstPassYield))));
          }
          const tileKeys = Object.keys(S).filter(k => k.startsWith("tile:"));
          if (tileKeys.some(k => changed.has(k)) || !document.getElementById("slots")) {
            // What the operator is typing survives a redraw (another slot's progress redraws every tile).
            const typed = {};
            let focused = null;
            for (const i of document.querySelectorAll(".prompt input")) {
              typed[i.dataset.prompt] = i.value;
              if (document.activeElement === i) focused = i.dataset.prompt;
            }
            const b = section("slots", "Slots");
            const order = (h.slots || []).map(s => "tile:" + s);
            for (const k of tileKeys) if (!order.includes(k)) order.push(k);
            const grid = el("div", {class: "tiles"});
            for (const k of order) {
              const t = S[k];
              if (!t) continue;
              const result = t.state === "pass" ? "PASS" + (t.seconds != null ? " in " + num(t.seconds, 1) + " s" : "") + (t.present ? ": take it out" : "")
                : ["fail", "error", "aborted"].includes(t.state) ? t.state.toUpperCase() + " at " + t.step + (t.message ? ": " + t.message : "")
                : t.state === "running" ? t.step : "waiting for a unit";
              grid.appendChild(el("div", {class: "tile", "data-slot": t.slot, "data-state": t.state, "data-unit": t.unit || "",
                  "data-present": t.present ? "true" : "false"},
                el("div", {class: "slot"}, t.slot), el("div", {class: "unit"}, t.unit || "–"), el("div", {class: "serial"}, t.serial || ""),
                t.state === "running" && typeof t.fraction === "number" ? el("progress", {max: 1, value: t.fraction}) : null,
                el("div", {class: "result"}, result), t.prompt ? promptOf(t.prompt, typed) : null));
            }
            b.appendChild(grid);
            // The newest input takes the keyboard (a barcode scanner types into it) unless the operator was typing.
            const inputs = [...document.querySelectorAll(".prompt input")];
            const keep = inputs.find(i => i.dataset.prompt === focused);
            const target = keep || inputs.sort((a, c) => Number(c.dataset.prompt) - Number(a.dataset.prompt))[0];
            const signingIn = document.activeElement && document.activeElement.id === "signin-name";
            if (target && !signingIn) target.focus();
          }
          if (changed.has("pareto") || !document.getElementById("pareto")) section("pareto", "Failures of the shift (Pareto)").appendChild(paretoTable(S.pareto));
          if (changed.has("units") || !document.getElementById("units")) section("units", "Last units").appendChild(unitsTable(S.units, false));
        }
        function drawLine(changed) {
          const l = S.line || {};
          document.getElementById("title").textContent = "Line";
          document.getElementById("subtitle").textContent = (l.database || "") + " · last " + (l.windowMinutes || 60) + " min";
          const stop = document.getElementById("stopping");
          stop.hidden = !S.problem;
          stop.textContent = S.problem || "";
          if (changed.has("line") || !document.getElementById("totals")) {
            const b = section("totals", "Line");
            const item = (id, label, v) => el("div", {id: id}, el("b", {}, v), label);
            b.appendChild(el("div", {class: "totals"}, item("l-alive", "stations alive", (l.alive || 0) + " / " + (l.stations || 0)),
              item("l-uph", "units/h", num(l.unitsPerHour, 1)), item("l-units", "units", l.units || 0),
              item("l-yield", "yield", pct(l.yield)), item("l-fpy", "first-pass yield", pct(l.firstPassYield))));
          }
          if (changed.has("stations") || !document.getElementById("stations")) {
            section("stations", "Stations").appendChild(table(["station", "alive", "last seen", {t: "units/h", num: 1}, {t: "units", num: 1},
              {t: "passed", num: 1}, {t: "failed", num: 1}, {t: "errors", num: 1}, {t: "yield", num: 1}, {t: "first-pass", num: 1}],
              (S.stations || []).map(s => el("tr", {"data-station": s.station, "data-alive": s.alive ? "true" : "false", "data-units": s.units},
                td(s.station), td(s.alive ? "alive" : s.stopped ? "stopped" : "silent", "alive"), td(s.lastSeen == null ? "never" : num(s.lastSeen, 0) + " s ago"),
                td(num(s.unitsPerHour, 1), "num uph"), td(s.units, "num units"), td(s.passed, "num"), td(s.failed, "num"), td(s.errors, "num"),
                td(pct(s.yield), "num"), td(pct(s.firstPassYield), "num")))));
          }
          if (changed.has("pareto") || !document.getElementById("pareto")) section("pareto", "Failures (Pareto)").appendChild(paretoTable(S.pareto));
          if (changed.has("cpk") || !document.getElementById("cpk")) {
            section("cpk", "Process capability (last units)").appendChild(table(["measurement", {t: "n", num: 1}, {t: "mean", num: 1},
              {t: "σ", num: 1}, {t: "low", num: 1}, {t: "high", num: 1}, {t: "Cpk", num: 1}],
              (S.cpk || []).map(m => el("tr", {"data-measurement": m.name, "data-count": m.count}, td(m.name), td(m.count, "num"),
                td(num(m.mean, 4) + " " + m.unit, "num"), td(num(m.standardDeviation, 4), "num"), td(num(m.low, 4), "num"),
                td(num(m.high, 4), "num"), td(num(m.cpk, 2), "num cpk")))));
          }
          if (changed.has("units") || !document.getElementById("units")) section("units", "Last units").appendChild(unitsTable(S.units, true));
        }
        function apply(message) {
          const changed = new Set(Object.keys(message.sections || {}));
          for (const [k, v] of Object.entries(message.sections || {})) S[k] = v;
          if (document.body.dataset.kind === "line") drawLine(changed); else drawStation(changed);
          document.body.dataset.changes = String(message.changes);
        }
        apply(JSON.parse(document.getElementById("initial-state").textContent));
        let delay = 500;
        let socket = null;
        function connect() {
          const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws");
          const link = document.getElementById("link");
          socket = ws;
          ws.onopen = () => {
            delay = 500; document.body.dataset.link = "open"; link.textContent = "live";
            while (outbox.length) ws.send(outbox.shift());
            document.body.dataset.unsent = "0";
          };
          // Each message is acknowledged once it is in the DOM (the server may measure its push latency by it).
          ws.onmessage = e => { const m = JSON.parse(e.data); apply(m); ws.send('{"applied":' + Number(m.changes) + '}'); };
          ws.onclose = () => {
            document.body.dataset.link = "closed"; link.textContent = "reconnecting";
            setTimeout(connect, delay); delay = Math.min(delay * 2, 10000);
          };
        }
        connect();
        """#
}
