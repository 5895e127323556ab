import OrderedJSON
import Support
import SpeakerHubCore

/// The hub's control page (`GET /`): the speakers (where to play, volume, group), the media list, the player with a
/// progress bar that seeks, and errors that stay until dismissed. The lists are written into the page by the server,
/// so they are there without script; the script then follows the hub over the JSON-RPC WebSocket (`/jsonrpc`,
/// docs/hub.md §8): it reads `Hub.GetStatus`, applies the notifications as they come (volumes, the player's state
/// and its position every second, speakers, groups, errors; nothing polls) and sends the buttons' and sliders'
/// methods. Its connection opens a hub session only when the page first acts, and the hub closes it with the socket.
public enum HubPage {
    public static func render(devices: [HubDevice], media: [HubMediaItem], playback: HubPlayback, problem: String?) -> String {
        var speakers = ""
        for d in devices {
            // A speaker the hub does not reach is listed as it was last, greyed, not ticked (docs/hub.md §7).
            let off = d.connected ? "" : " disabled"
            speakers += """
                <tr class="speaker\(d.connected ? "" : " unavailable")" data-device-id="\(d.deviceID)">\
                <td><input type="checkbox" class="pick"\(d.connected ? " checked" : off) aria-label="play on \(html(d.deviceName))"></td>\
                <td class="name">\(html(d.deviceName))</td><td>\(html(d.modelName))</td>\
                <td class="group">\(d.groupID == 0 ? "&ndash;" : html(d.groupName))</td>\
                <td><input type="range" class="volume" min="0" max="50" value="\(d.volume)"\(off) aria-label="volume of \(html(d.deviceName))">\
                <span class="level">\(d.volume)</span></td><td class="playing">\(d.connected ? (d.isPlaying ? "playing" : "") : "unavailable")</td></tr>

                """
        }
        if devices.isEmpty { speakers = "<tr><td colspan=\"6\">No speakers.</td></tr>\n" }
        var items = ""
        for m in media {
            items += """
                <tr class="media" data-persistent-id="\(m.persistentID)">\
                <td><button class="play">&#9654; Play</button></td><td class="title">\(html(m.title))</td>\
                <td>\(html(m.artist))</td><td>\(html(m.albumTitle))</td><td>\(clock(m.duration))</td></tr>

                """
        }
        if media.isEmpty { items = "<tr><td colspan=\"5\">No media files in the folder.</td></tr>\n" }
        let seconds = playback.elapsed.map { Int($0.components.seconds) }
        let elapsed = seconds.map { clock($0) } ?? "&ndash;"
        let current: String = switch playback.item {
        case let .media(m)?: html(m.title)
        case let .web(url)?: html(url)
        case nil: "nothing"
        }
        let duration: Int = if case let .media(m)? = playback.item { m.duration } else { 0 }
        let problems = problem.map { "<li class=\"problem\"><span>\(html($0))</span> <button class=\"dismiss\" aria-label=\"dismiss\">&times;</button></li>" } ?? ""
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>Tuneup hub</title>
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <style>
            body { font: 15px/1.4 sans-serif; margin: 0; background: #f4f1ea; color: #222; }
            header { background: #1d3557; color: #fff; padding: 12px 20px; }
            h1 { margin: 0; font-size: 22px; }
            main { padding: 12px 20px; }
            h2 { font-size: 17px; margin: 18px 0 6px; color: #1d3557; }
            table { border-collapse: collapse; background: #fff; min-width: 640px; }
            td, th { padding: 6px 10px; border-bottom: 1px solid #ddd; text-align: left; }
            th { background: #e63946; color: #fff; }
            #player { background: #a8dadc; padding: 10px 14px; display: inline-block; border-radius: 6px; min-width: 480px; }
            #player button { font-size: 15px; margin-right: 6px; }
            #progress { width: 100%; }
            #elapsed, #duration { font-weight: bold; font-variant-numeric: tabular-nums; }
            #problems { list-style: none; padding: 0; margin: 0; }
            .problem { color: #b00020; background: #fde8ea; border-left: 4px solid #b00020; padding: 4px 8px; margin: 4px 0; }
            .problem button { border: none; background: none; color: #b00020; font-size: 16px; cursor: pointer; }
            #groups li { margin: 2px 0; }
            tr.unavailable { color: #888; }
            </style></head>
            <body><header><h1>Tuneup hub</h1></header><main>
            <ul id="problems" role="status">\(problems)</ul>
            <h2>Player</h2>
            <div id="player"><span id="state" data-state="\(playback.state.rawValue)">\(stateName(playback.state))</span> &middot; <span id="current">\(current)</span>
            &middot; <span id="elapsed">\(elapsed)</span> / <span id="duration">\(duration > 0 ? clock(duration) : "&ndash;")</span><br>
            <input type="range" id="progress" min="0" max="\(max(duration, 1))" step="1" value="\(seconds ?? 0)" aria-label="position"\(duration > 0 ? "" : " disabled")><br>
            <button id="resume">&#9654; Play</button><button id="pause">&#10074;&#10074; Pause</button><button id="stop">&#9632; Stop</button></div>
            <h2>Speakers</h2>
            <table id="speakers"><tr><th></th><th>Name</th><th>Model</th><th>Group</th><th>Volume</th><th></th></tr>
            \(speakers)</table>
            <p><label>Group the ticked speakers as <input id="group-name" value="living room" size="16"></label>
            <button id="group">Group</button></p>
            <ul id="groups"></ul>
            <h2>Media</h2>
            <table id="media"><tr><th></th><th>Title</th><th>Artist</th><th>Album</th><th>Duration</th></tr>
            \(items)</table>
            </main>
            <script>
            // The hub over its JSON-RPC WebSocket (docs/hub.md §8): requests answered by id, notifications applied as
            // they come. Reconnects after a drop; nothing polls.
            const names = { idle: ["PlayerStateInitialized", "Ready"], playing: ["PlayerStatePlaying", "Playing"],
              paused: ["PlayerStatePaused", "Paused"], stopped: ["PlayerStateStopped", "Stopped"] };
            let socket = null, nextId = 1, lastMedia = null, seeking = false;
            const waiting = new Map();
            const $ = id => document.getElementById(id);
            function clock(s) { return s === null || s < 0 ? "\\u2013" : Math.floor(s / 60) + ":" + String(Math.floor(s) % 60).padStart(2, "0"); }
            // An error stays until it is dismissed (a new one is added below, never over it).
            function problem(text) {
              const li = document.createElement("li");
              li.className = "problem";
              const span = document.createElement("span");
              span.textContent = text;
              const b = document.createElement("button");
              b.className = "dismiss"; b.setAttribute("aria-label", "dismiss"); b.textContent = "\\u00d7";
              li.append(span, " ", b);
              $("problems").append(li);
            }
            $("problems").addEventListener("click", e => { if (e.target.classList.contains("dismiss")) e.target.closest("li").remove(); });
            function call(method, params) {
              return new Promise(resolve => {
                if (!socket || socket.readyState !== 1) { problem(method + ": not connected to the hub"); resolve(null); return; }
                const id = nextId++;
                waiting.set(id, { method, resolve });
                socket.send(JSON.stringify({ jsonrpc: "2.0", id, method, params: params || {} }));
              });
            }
            function picked() {
              return [...document.querySelectorAll("tr.speaker")].filter(r => r.querySelector(".pick").checked).map(r => r.dataset.deviceId);
            }
            function speakerRow(c, ticked) {
              const tr = document.createElement("tr");
              tr.className = "speaker"; tr.dataset.deviceId = c.id;
              const cells = [];
              for (let i = 0; i < 6; i++) cells.push(document.createElement("td"));
              const pick = document.createElement("input");
              pick.type = "checkbox"; pick.className = "pick"; pick.checked = ticked && c.connected !== false; pick.setAttribute("aria-label", "play on " + c.name);
              if (c.connected === false) { tr.classList.add("unavailable"); pick.disabled = true; }
              cells[0].append(pick);
              cells[1].className = "name"; cells[1].textContent = c.name;
              cells[2].textContent = c.model;
              cells[3].className = "group"; cells[3].textContent = c.group === null ? "\\u2013" : c.group;
              const v = document.createElement("input");
              v.type = "range"; v.className = "volume"; v.min = 0; v.max = 50; v.value = c.volume.level; v.setAttribute("aria-label", "volume of " + c.name);
              const level = document.createElement("span");
              level.className = "level"; level.textContent = c.volume.level + (c.volume.muted ? " (muted)" : "");
              cells[4].append(v, level);
              if (c.connected === false) v.disabled = true;
              cells[5].className = "playing"; cells[5].textContent = c.connected === false ? "unavailable" : (c.playing ? "playing" : "");
              v.addEventListener("change", () => { level.textContent = v.value; call("Client.SetLevel", { id: c.id, volume: Number(v.value) }); });
              tr.append(...cells);
              return tr;
            }
            function showSpeakers(clients) {
              const unticked = new Set([...document.querySelectorAll("tr.speaker")].filter(r => !r.querySelector(".pick").checked).map(r => r.dataset.deviceId));
              const table = $("speakers");
              [...table.querySelectorAll("tr:not(:first-child)")].forEach(r => r.remove());
              for (const c of clients) table.append(speakerRow(c, !unticked.has(c.id)));
              if (clients.length === 0) { const tr = document.createElement("tr"); tr.innerHTML = "<td colspan=6>No speakers.</td>"; table.append(tr); }
            }
            function showGroups(groups) {
              const ul = $("groups");
              ul.textContent = "";
              for (const g of groups) {
                const li = document.createElement("li");
                li.className = "group"; li.dataset.group = g.name;
                li.textContent = g.name + ": " + g.clients.length + " speaker" + (g.clients.length === 1 ? "" : "s") + " ";
                const b = document.createElement("button");
                b.textContent = "Ungroup";
                b.addEventListener("click", () => call("Group.Assign", { name: g.name, clients: [] }));
                li.append(b);
                ul.append(li);
              }
            }
            function showPosition(position, duration) {
              $("elapsed").textContent = clock(position);
              const bar = $("progress");
              if (duration) { bar.max = duration; bar.disabled = false; $("duration").textContent = clock(duration); }
              else { bar.disabled = true; $("duration").textContent = "\\u2013"; }
              if (!seeking && position !== null) bar.value = Math.floor(position);
            }
            function showPlayer(p) {
              const state = $("state"), n = names[p.state] || [p.state, p.state];
              state.dataset.state = n[0];
              state.textContent = n[1];
              $("current").textContent = p.media ? p.media.title : (p.url || "nothing");
              if (p.media) lastMedia = p.media.id;
              showPosition(p.position, p.duration);
            }
            async function refresh() {
              const s = await call("Hub.GetStatus");
              if (!s) return;
              showSpeakers(s.clients);
              showGroups(s.groups);
              showPlayer(s.player);
              $("player").dataset.live = "yes";
            }
            function notified(m) {
              const p = m.params;
              switch (m.method) {
                case "Player.OnStateChanged": showPlayer(p); break;
                case "Player.OnPosition": showPosition(p.position, p.duration); break;
                case "Client.OnVolumeChanged": {
                  const row = document.querySelector('tr.speaker[data-device-id="' + p.id + '"]');
                  const level = Math.round(p.volume.percent / 2);  // Snapcast's percent: twice the level
                  if (row) { row.querySelector(".volume").value = level; row.querySelector(".level").textContent = level + (p.volume.muted ? " (muted)" : ""); }
                  break;
                }
                case "Server.OnError": problem(p.source + ": " + p.message); break;
                default: refresh();  // speakers joined or left, the playback session or the groups changed
              }
            }
            function connect() {
              socket = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/jsonrpc");
              socket.onopen = refresh;
              socket.onmessage = e => {
                const m = JSON.parse(e.data);
                if (m.id !== undefined && waiting.has(m.id)) {
                  const w = waiting.get(m.id);
                  waiting.delete(m.id);
                  if (m.error) { problem(w.method + ": " + m.error.message + (m.error.data ? " (" + m.error.data.error + ")" : "")); w.resolve(null); }
                  else w.resolve(m.result);
                } else if (m.method) notified(m);
              };
              socket.onclose = () => {
                $("player").dataset.live = "no";
                for (const w of waiting.values()) w.resolve(null);
                waiting.clear();
                setTimeout(connect, 2000);
              };
            }
            document.querySelectorAll("tr.media .play").forEach(b => b.addEventListener("click", () => {
              lastMedia = b.closest("tr").dataset.persistentId;
              call("Player.Play", { media: lastMedia, clients: picked() });
            }));
            document.querySelectorAll("tr.speaker .volume").forEach(s => s.addEventListener("change", () => {
              const row = s.closest("tr");
              row.querySelector(".level").textContent = s.value;
              call("Client.SetLevel", { id: row.dataset.deviceId, volume: Number(s.value) });
            }));
            $("pause").addEventListener("click", () => call("Player.Pause"));
            $("stop").addEventListener("click", () => call("Player.Stop"));
            $("resume").addEventListener("click", () => call("Player.Resume", { clients: picked() }));
            $("group").addEventListener("click", () => call("Group.Assign", { name: $("group-name").value, clients: picked() }));
            const bar = $("progress");
            bar.addEventListener("input", () => { seeking = true; $("elapsed").textContent = clock(Number(bar.value)); });
            bar.addEventListener("change", async () => { await call("Player.Seek", { position: Number(bar.value) }); seeking = false; });
            connect();
            </script>
            </body></html>

            """
    }

    /// `GET /page/status`: the hub's player (not a v1 call, no session; the page itself follows `/jsonrpc`): its state, the elapsed time
    /// while playing or paused (-1 otherwise), the title and, for hub media, the PersistentID.
    public static func status(_ playback: HubPlayback) -> OrderedJSON {
        let elapsed = playback.elapsed.map { Int($0.components.seconds) } ?? -1
        var fields: [(String, OrderedJSON)] = [("PlaybackState", .string(playback.state.rawValue)), ("TimeElapsed", .string(String(elapsed)))]
        switch playback.item {
        case let .media(m)?: fields += [("Title", .string(m.title)), ("PersistentID", .string(String(m.persistentID)))]
        case let .web(url)?: fields += [("Title", .string(url))]
        case nil: fields += [("Title", .string("nothing"))]
        }
        return .object(fields)
    }

    /// A player state as the page shows it ("Playing"; the API's name stays in `data-state`).
    public static func stateName(_ state: HubPlayerState) -> String {
        switch state {
        case .initialized: "Ready"
        case .playing: "Playing"
        case .paused: "Paused"
        case .stopped: "Stopped"
        }
    }

    /// Text made safe for HTML content and attribute values (`Markup.escape`).
    static func html(_ text: String) -> String { Markup.escape(text) }

    /// m:ss.
    static func clock(_ seconds: Int) -> String {
        let s = max(0, seconds)
        let rest = s % 60
        return "\(s / 60):\(rest < 10 ? "0" : "")\(rest)"
    }
}
