#!/usr/bin/env python3
"""Drives the PyPI `snapcast` control client (the one Home Assistant's Snapcast integration uses) against a Snapcast
control server: a real snapserver or Tuneup's hub (SnapcastControlTests run the same steps against both).

    python3 tools/snapcast-client.py HOST PORT

Connects with `snapcast.control.create_server` (Server.GetStatus first, as Home Assistant does), then reads one command
a line on stdin and answers one JSON line on stdout: {"ok": true, ...} or {"ok": false, "error": "..."}. Commands:

    status                      the client's view: clients (id, name, volume, muted, connected), groups, version,
                                and `raw`: Server.GetStatus's result as the server sent it
    set-volume ID PERCENT       Snapclient.set_volume (Client.SetVolume)
    mute ID 0|1                 Snapclient.set_muted (Client.SetVolume with muted)
    group-mute ID 0|1           Snapgroup.set_muted (Group.SetMute)
    rpc METHOD JSON             any call through the client's transport: its result and error as they came
    wait-clients N              until Server.GetStatus lists N connected clients
    wait-volume ID PERCENT      until the client's view of ID has that percent (a notification updated it)
    wait-muted ID 0|1           likewise for its mute
    wait-connected ID 0|1       until the client's view says ID is connected (1) or not (0)
    wait-notification METHOD    until a notification METHOD came
    notifications               every notification received so far, raw: [{"method", "params"}]
    quit

A wait gives up after 60 s (answering ok false): the test that drives this waits for its answer.
"""

import asyncio
import json
import sys

import snapcast.control

WAIT_SECONDS = 60


def answer(value):
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


async def main(host, port):
    loop = asyncio.get_running_loop()
    notifications = []
    server = await snapcast.control.create_server(loop, host, port, reconnect=False)
    # Record every notification as it came, let the client handle it as it does, then wake the waits (the client's
    # view is updated by then).
    protocol = server._protocol
    handle = protocol.handle_notification
    changed = asyncio.Event()

    def record(data):
        notifications.append({"method": data.get("method"), "params": data.get("params")})
        handle(data)
        changed.set()

    protocol.handle_notification = record
    answer({"ok": True, "version": server.version})

    async def wait_for(check):
        async def loop_until():
            while not check():
                changed.clear()
                await changed.wait()
        try:
            await asyncio.wait_for(loop_until(), WAIT_SECONDS)
            return True
        except asyncio.TimeoutError:
            return False

    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            break
        words = line.strip().split(maxsplit=2)
        if not words:
            continue
        command = words[0]
        try:
            if command == "quit":
                answer({"ok": True})
                break
            elif command == "status":
                raw, error = await server.status()
                if error:
                    answer({"ok": False, "error": error})
                    continue
                server.synchronize(raw)
                answer({
                    "ok": True,
                    "version": server.version,
                    "clients": [{"id": c.identifier, "name": c.friendly_name, "volume": c.volume, "muted": c.muted,
                                 "connected": c.connected, "group": c.group.identifier if c.group else None}
                                for c in server.clients],
                    "groups": [{"id": g.identifier, "name": g.name, "muted": g.muted, "clients": g.clients, "stream": g.stream}
                               for g in server.groups],
                    "streams": [{"id": s.identifier, "status": s.status, "name": s.friendly_name} for s in server.streams],
                    "raw": raw,
                })
            elif command == "set-volume":
                client = server.client(words[1])
                await client.set_volume(int(words[2]))
                answer({"ok": True, "volume": client.volume})
            elif command == "mute":
                client = server.client(words[1])
                await client.set_muted(words[2] == "1")
                answer({"ok": True, "muted": client.muted})
            elif command == "group-mute":
                group = server.group(words[1])
                await group.set_muted(words[2] == "1")
                answer({"ok": True, "muted": group.muted})
            elif command == "rpc":
                params = json.loads(words[2]) if len(words) > 2 else None
                result, error = await server._transact(words[1], params)
                answer({"ok": True, "result": result, "error": error})
            elif command == "wait-clients":
                want = int(words[1])

                async def listed():
                    while True:
                        raw, _ = await server.status()
                        if raw:
                            server.synchronize(raw)
                            if sum(1 for c in server.clients if c.connected) >= want:
                                return
                        changed.clear()
                        try:
                            await asyncio.wait_for(changed.wait(), 0.2)  # a snapclient says hello without a notification
                        except asyncio.TimeoutError:
                            pass
                try:
                    await asyncio.wait_for(listed(), WAIT_SECONDS)
                    answer({"ok": True})
                except asyncio.TimeoutError:
                    answer({"ok": False, "error": f"fewer than {want} connected clients"})
            elif command in ("wait-volume", "wait-muted", "wait-connected"):
                ident, value = words[1], int(words[2])

                def check():
                    client = server._clients.get(ident)
                    if client is None:
                        return False
                    if command == "wait-volume":
                        return client.volume == value
                    if command == "wait-muted":
                        return client.muted == (value == 1)
                    return client.connected == (value == 1)
                ok = await wait_for(check)
                client = server._clients.get(ident)
                answer({"ok": ok, "error": None if ok else f"{command} {ident} {value}: the client sees "
                        + (json.dumps(client._client) if client else "no such client")})
            elif command == "wait-notification":
                ok = await wait_for(lambda: any(n["method"] == words[1] for n in notifications))
                answer({"ok": ok, "error": None if ok else f"no {words[1]} came"})
            elif command == "notifications":
                answer({"ok": True, "notifications": notifications})
            else:
                answer({"ok": False, "error": f"unknown command {command}"})
        except Exception as error:  # an answer, never a dead script: the test reads one line a command
            answer({"ok": False, "error": f"{type(error).__name__}: {error}"})
    server.stop()


if __name__ == "__main__":
    try:
        asyncio.run(main(sys.argv[1], int(sys.argv[2])))
    except Exception as error:
        answer({"ok": False, "error": f"cannot connect: {type(error).__name__}: {error}"})
        sys.exit(1)
