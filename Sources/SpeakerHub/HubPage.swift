import Support
import SpeakerHubCore

/// The hub's control page (`GET /`): the speakers with their volume, the media list, play/pause/stop and the
/// elapsed time. The lists are written into the page by the server, so they are there without script; the script
/// opens a session of its own when it first acts (a page view holds none), calls the v1 API for the buttons and
/// sliders, closes its session when the page goes away, and polls the player every second.
public enum HubPage {
    public static func render(devices: [HubDevice], media: [HubMediaItem], playback: HubPlayback, problem: String?) -> String {
        var speakers = ""
        for d in devices {
            speakers += """
                <tr class="speaker" data-device-id="\(d.deviceID)">\
                <td><input type="checkbox" class="pick" checked aria-label="play on \(html(d.deviceName))"></td>\
                <td class="name">\(html(d.deviceName))</td><td>\(html(d.modelName))</td>\
                <td>\(d.groupID == 0 ? "&ndash;" : html(d.groupName))</td>\
                <td><input type="range" class="volume" min="0" max="50" value="\(d.volume)" aria-label="volume of \(html(d.deviceName))">\
                <span class="level">\(d.volume)</span></td><td class="playing">\(d.isPlaying ? "playing" : "")</td></tr>

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
        let elapsed = playback.elapsed.map { clock(Int($0.components.seconds)) } ?? "&ndash;"
        let current: String = switch playback.item {
        case let .media(m)?: html(m.title)
        case let .web(url)?: html(url)
        case nil: "nothing"
        }
        let resumable: String = if case let .media(m)? = playback.item { "\"\(m.persistentID)\"" } else { "null" }
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
            #player { background: #a8dadc; padding: 10px 14px; display: inline-block; border-radius: 6px; }
            #player button { font-size: 15px; margin-right: 6px; }
            #elapsed { font-weight: bold; font-variant-numeric: tabular-nums; }
            .problem { color: #b00020; }
            </style></head>
            <body><header><h1>Tuneup hub</h1></header><main>
            <p id="problem" class="problem" role="status">\(problem.map { html($0) } ?? "")</p>
            <h2>Player</h2>
            <div id="player"><span id="state" data-state="\(playback.state.rawValue)">\(stateName(playback.state))</span> &middot; <span id="current">\(current)</span>
            &middot; elapsed <span id="elapsed">\(elapsed)</span><br>
            <button id="resume">&#9654; Play</button><button id="pause">&#10074;&#10074; Pause</button><button id="stop">&#9632; Stop</button></div>
            <h2>Speakers</h2>
            <table id="speakers"><tr><th></th><th>Name</th><th>Model</th><th>Group</th><th>Volume</th><th></th></tr>
            \(speakers)</table>
            <h2>Media</h2>
            <table id="media"><tr><th></th><th>Title</th><th>Artist</th><th>Album</th><th>Duration</th></tr>
            \(items)</table>
            </main>
            <script>
            // The page's session is opened when it first acts (a view alone holds none), reused, opened again if the
            // hub closed it (SessionNotFound: expired or displaced), and closed when the page goes away.
            let sid = null, lastMedia = \(resumable), problemUntil = \(problem == nil ? "0" : "Date.now() + 10000");
            const names = \(stateNamesJS);
            function problem(text) {
              document.getElementById("problem").textContent = text;
              problemUntil = Date.now() + 10000;
            }
            async function session() {
              if (sid === null) {
                const j = await (await fetch("/v1/init_session?Priority=100")).json();
                if (!j.SessionID) { problem(j.Error + ": " + j.Message); return null; }
                sid = j.SessionID;
              }
              return sid;
            }
            async function call(name, params, again) {
              if (await session() === null) return {};
              const q = new URLSearchParams(params || {});
              q.set("SessionID", sid);
              const r = await fetch("/v1/" + name + "?" + q.toString());
              const j = await r.json();
              if (j.Error === "SessionNotFound" && !again) { sid = null; return call(name, params, true); }
              if (!r.ok || j.Result === "false") problem(j.Error + ": " + j.Message);
              return j;
            }
            window.addEventListener("pagehide", () => {
              if (sid !== null) fetch("/v1/close_session?SessionID=" + sid, { keepalive: true });
              sid = null;
            });
            function picked() {
              return [...document.querySelectorAll("tr.speaker")].filter(r => r.querySelector(".pick").checked)
                .map(r => r.dataset.deviceId).join(",");
            }
            function clock(s) { return s < 0 ? "\\u2013" : Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0"); }
            async function status() {
              // The hub's player, whichever session plays (playback_status is this page's session's view).
              const j = await (await fetch("/page/status")).json();
              const state = document.getElementById("state");
              state.dataset.state = j.PlaybackState;
              state.textContent = names[j.PlaybackState] || j.PlaybackState;
              // An error stays readable for 10 s, whatever the player does meanwhile.
              if (Date.now() > problemUntil) document.getElementById("problem").textContent = "";
              document.getElementById("player").dataset.live = "yes";
              document.getElementById("current").textContent = j.Title;
              document.getElementById("elapsed").textContent = clock(parseInt(j.TimeElapsed, 10));
              if (j.PersistentID) lastMedia = j.PersistentID;
            }
            document.querySelectorAll("tr.media .play").forEach(b => b.addEventListener("click", async () => {
              lastMedia = b.closest("tr").dataset.persistentId;
              document.getElementById("current").textContent = b.closest("tr").querySelector(".title").textContent;
              await call("play_hub_media_selected_speakers", { PersistentID: lastMedia, DeviceIDList: picked() });
              status();
            }));
            document.querySelectorAll("tr.speaker .volume").forEach(s => s.addEventListener("change", async () => {
              const row = s.closest("tr");
              row.querySelector(".level").textContent = s.value;
              await call("set_volume_device", { DeviceID: row.dataset.deviceId, Volume: s.value });
            }));
            document.getElementById("pause").addEventListener("click", async () => { await call("pause_play"); status(); });
            document.getElementById("stop").addEventListener("click", async () => { await call("stop_play"); status(); });
            document.getElementById("resume").addEventListener("click", async () => {
              if (lastMedia !== null) await call("resume_hub_media_selected_speakers", { PersistentID: lastMedia, DeviceIDList: picked() });
              status();
            });
            status(); setInterval(status, 1000);
            </script>
            </body></html>

            """
    }

    /// `GET /page/status`: the hub's player for the page (not a v1 call, no session): its state, the elapsed time
    /// while playing or paused (-1 otherwise), the title and, for hub media, the PersistentID.
    public static func status(_ playback: HubPlayback) -> HubJSON {
        let elapsed = playback.elapsed.map { Int($0.components.seconds) } ?? -1
        var fields: [(String, HubJSON)] = [("PlaybackState", .string(playback.state.rawValue)), ("TimeElapsed", .string(String(elapsed)))]
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

    /// `{"PlayerStatePlaying": "Playing", ...}` for the page's script.
    static var stateNamesJS: String {
        "{" + HubPlayerState.allCases.map { "\"\($0.rawValue)\": \"\(stateName($0))\"" }.joined(separator: ", ") + "}"
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
